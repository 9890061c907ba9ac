"""Checkpoint ↔ rows for the LangGraph saver: ids checked, values through the serializer, metadata as JSON. Pure.

A checkpoint row holds the checkpoint without ``channel_values``; each value
is a blob keyed by its channel's version (stored once per version).  Metadata
is JSON text so ``list(filter=...)`` runs in SQL.

Payloads of 1 kB and more are stored compressed (:func:`pack`), the codec
named in the row's type tag (``zstd+msgpack``); a tag without a codec is a
payload as the serializer wrote it, which is how every row written before
compression reads.  Why: on seekdb a put's cost is mostly the server storing
the message-list blob, and it scales with its bytes (a 30 kB msgpack list in
one ``INSERT; COMMIT`` packet 1.6-2.3 ms, its 2-12 kB zstd frame 0.9-1.0 ms,
a one-row write 0.6 ms; 2 vCPU, 2026-11-26); zstd level 1 costs 50-90 us per
30 kB and its decompression 40-70 us.
"""

from __future__ import annotations

import json
import random
import threading
import zlib
from typing import Any, Mapping, Sequence

from langgraph.checkpoint.base import WRITES_IDX_MAP, get_serializable_checkpoint_metadata, writes_sort_key

from ..errors import CheckpointTooLargeError, ConfigurationError, InvalidIdentifierError, InvalidValueError
from ..validation import check_id, check_text

__all__ = [
    "CODECS",
    "COMPRESS_FROM",
    "EMPTY",
    "Key",
    "TYPE_LEN",
    "WRITER",
    "check_channel",
    "check_id_of",
    "check_size",
    "config_for",
    "filter_pairs",
    "hex_of",
    "inline_values",
    "key_of",
    "metadata_json",
    "next_version",
    "names_one_value",
    "pack",
    "sorted_writes",
    "thread_of",
    "unpack",
    "user_of",
    "write_index",
]

EMPTY = "empty"
"""Type tag of a blob for a channel that had no value at that version (as LangGraph's savers write it)."""
NS_LEN, CHECKPOINT_ID_LEN, CHANNEL_LEN = 255, 64, 128

Key = tuple[str, str, str | None]
"""``(thread_id, checkpoint_ns, checkpoint_id or None)``."""


def thread_of(value: Any) -> str:
    """A thread id as stored: strings as they are, ints and UUIDs as their text (LangGraph accepts both)."""
    if isinstance(value, bool) or value is None:
        raise InvalidIdentifierError(f"thread_id must be a string, got {type(value).__name__}")
    return check_id("thread_id", value if isinstance(value, str) else str(value))


def key_of(config: Mapping[str, Any]) -> Key:
    """The thread, namespace and (optional) checkpoint id a ``RunnableConfig`` names, checked."""
    conf = config.get("configurable") or {}
    if "thread_id" not in conf:
        raise InvalidIdentifierError("config['configurable'] has no thread_id")
    ns = conf.get("checkpoint_ns") or ""
    if not isinstance(ns, str) or len(ns) > NS_LEN:
        raise InvalidIdentifierError(f"checkpoint_ns must be a string of at most {NS_LEN} characters")
    check_text("checkpoint_ns", ns, InvalidIdentifierError)
    cid = conf.get("checkpoint_id")
    if cid is not None:
        cid = check_id("checkpoint_id", cid, max_len=CHECKPOINT_ID_LEN)
    return thread_of(conf["thread_id"]), ns, cid


def user_of(config: Mapping[str, Any]) -> str:
    """The user a thread is tied to (``configurable["user_id"]``), or ``''`` for none: erasure deletes by it."""
    user = (config.get("configurable") or {}).get("user_id")
    return "" if user is None else check_id("user_id", user)


def check_id_of(checkpoint: Mapping[str, Any]) -> str:
    """The checkpoint's own id, checked (LangGraph's are uuid6 strings, 36 characters)."""
    return check_id("checkpoint id", checkpoint.get("id"), max_len=CHECKPOINT_ID_LEN)


def config_for(thread: str, ns: str, checkpoint_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}}


def metadata_json(config: Mapping[str, Any], metadata: Mapping[str, Any]) -> tuple[str, str | None]:
    """The metadata as stored (LangGraph's serializable form, JSON) and its ``run_id``."""
    md = get_serializable_checkpoint_metadata(config, metadata)  # type: ignore[arg-type]
    try:
        text = json.dumps(md, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidValueError(f"checkpoint metadata must be JSON (strings, numbers, lists, dicts): {exc}") from exc
    check_text("checkpoint metadata", text, InvalidValueError)
    run = md.get("run_id")
    run_id = run if isinstance(run, str) and run and len(run) <= 128 and not run.endswith(" ") else None
    return text, run_id


def filter_pairs(flt: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """``list(filter=...)`` as ``(JSON path, JSON value)`` pairs for ``JSON_CONTAINS``."""
    pairs = []
    for key, value in (flt or {}).items():
        if not isinstance(key, str):
            raise InvalidValueError(f"filter keys must be strings, got {type(key).__name__}")
        path = '$."' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'
        try:
            pairs.append((path, json.dumps(value, ensure_ascii=False)))
        except (TypeError, ValueError) as exc:
            raise InvalidValueError(f"filter value for {key!r} must be JSON: {exc}") from exc
    return pairs


def next_version(current: Any) -> str:
    """The version after ``current``: ``<32-digit counter>.<random>``, as the Postgres saver makes them.

    The random part keeps two forks of one thread (time travel, then a new
    step) from writing different values under the same (channel, version),
    where the first blob would win.
    """
    if current is None:
        n = 0
    elif isinstance(current, (int, float)):
        n = int(current)
    else:
        n = int(str(current).split(".")[0])
    return f"{n + 1:032}.{random.random():016}"


def names_one_value(version: str) -> bool:
    """Whether ``version`` was made by :func:`next_version` (a counter and a random part), so no other value is stored under it.

    A caller may put its own versions (``"1"`` for several values, as the
    conformance suite does): the first value written under one wins in the
    table, so only versions of this shape may be remembered by value
    (:mod:`.delta`: delta bases and reads served from the saver's memory).
    """
    return len(version) > 33 and version[32] == "." and version[:32].isdigit()


INLINE_STR = 256
"""Longest string a checkpoint row holds inline (longer ones get a blob: not re-stored with every checkpoint)."""
_INLINE_TYPES = (type(None), bool, int, float, str)


def inline_values(values: Mapping[str, Any], versions: Mapping[str, str]) -> dict[str, Any]:
    """The channel values stored in the checkpoint row itself: ``None``, booleans, numbers, strings up to :data:`INLINE_STR`.

    As in the Postgres saver, scalars travel inline in every checkpoint,
    changed or not, instead of one blob row per changed version: on seekdb
    each row of a put's transaction costs the server ~0.07 ms (a blob INSERT
    of a put's three statements, 2 vCPU, 2026-11-28) for a value of a few
    bytes, and a read fetches no blob for them.  Only exact types (a ``str``
    or ``int`` subclass, an enum, keeps its blob) and channels with a version.
    """
    out = {}
    for ch, v in values.items():
        t = type(v)
        if ch in versions and t in _INLINE_TYPES and (t is not str or len(v) <= INLINE_STR):
            out[check_channel(ch)] = v
    return out


def write_index(channel: str, idx: int) -> int:
    """LangGraph's special writes (errors, interrupts, resumes) take fixed negative slots."""
    return WRITES_IDX_MAP.get(channel, idx)


def sorted_writes(rows: Sequence[tuple[str, str, str, Any, str, int]], loads: Any) -> list[tuple[str, str, Any]]:
    """``(task_id, channel, type, payload, task_path, idx)`` rows as pending writes, in ``writes_sort_key`` order.

    The order live execution applies a super-step's writes in, which
    ``get_delta_channel_history`` replays.
    """
    ordered = sorted(rows, key=lambda r: writes_sort_key(r[4], r[0], r[5]))
    return [(task, channel, loads((vtype, payload))) for task, channel, vtype, payload, _path, _idx in ordered]


def check_size(what: str, payload: bytes | None, limit: int) -> None:
    if payload is not None and limit and len(payload) > limit:
        raise CheckpointTooLargeError(
            f"{what} serializes to {len(payload):,} bytes; the limit is {limit:,} (max_value_bytes)"
        )


def check_channel(channel: Any) -> str:
    if not isinstance(channel, str) or not channel or len(channel) > CHANNEL_LEN:
        raise InvalidIdentifierError(f"channel names must be strings of 1 to {CHANNEL_LEN} characters: {channel!r}")
    return check_text("channel", channel, InvalidIdentifierError)


def hex_of(payload: bytes | None) -> str:
    """A payload as the hex text of the saver's ``X'...'`` literals (see ``queries``: escaping bytes costs ~30x more)."""
    if payload is None:
        raise InvalidValueError("the serializer returned no bytes for a value")
    return payload.hex()


# ---------------------------------------------------------------- compressed payloads
COMPRESS_FROM = 1024
"""Payloads smaller than this are stored as they are (a few hundred bytes gain nothing on the server)."""
TYPE_LEN = 32
"""Width of the ``value_type`` columns: a tag that would not fit with its codec is stored uncompressed."""

try:  # zstandard comes with langchain-core (via langsmith) and is listed in the [langgraph] extra
    import zstandard as _zstd
except ImportError:  # pragma: no cover - then zlib, from the standard library, writes
    _zstd = None

_local = threading.local()


def _zstd_compress(data: bytes) -> bytes:
    compressor = getattr(_local, "zstd", None)
    if compressor is None:
        compressor = _local.zstd = _zstd.ZstdCompressor(level=1)  # type: ignore[union-attr]
    return compressor.compress(data)


def _zstd_decompress(data: bytes) -> bytes:
    if _zstd is None:
        raise ConfigurationError("this checkpoint was stored zstd-compressed: pip install zstandard to read it")
    decompressor = getattr(_local, "unzstd", None)
    if decompressor is None:
        decompressor = _local.unzstd = _zstd.ZstdDecompressor()
    return decompressor.decompress(data)


_WRITERS = {"zstd": _zstd_compress, "zlib": lambda data: zlib.compress(data, 1)}
_READERS = {"zstd": _zstd_decompress, "zlib": zlib.decompress}
WRITER = "zstd" if _zstd is not None else "zlib"
"""The codec new payloads are written with by default."""
CODECS = ("zstd", "zlib") if _zstd is not None else ("zlib",)
"""The codecs this process can write."""


def pack(vtype: str, payload: bytes | None, writer: str | None = WRITER) -> tuple[str, bytes | None]:
    """``(type tag, bytes)`` as stored: compressed as ``"<codec>+<vtype>"`` when that is worth it, else unchanged.

    ``writer=None`` stores every payload as it is (the layout before compression).
    Payloads that do not shrink by a tenth (already compressed media) stay as they are.
    """
    if writer is None or payload is None or len(payload) < COMPRESS_FROM or len(vtype) + 5 > TYPE_LEN:
        return vtype, payload
    packed = _WRITERS[writer](payload)
    if len(packed) * 10 > len(payload) * 9:
        return vtype, payload
    return f"{writer}+{vtype}", packed


def unpack(tag: str, payload: Any) -> tuple[str, bytes | None]:
    """The serializer's ``(type, bytes)`` of a stored payload, whichever way :func:`pack` stored it."""
    data = None if payload is None else bytes(payload)
    name, plus, vtype = tag.partition("+")
    if plus and name in _READERS and data is not None:
        return vtype, _READERS[name](data)
    return tag, data
