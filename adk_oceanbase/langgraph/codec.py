"""Checkpoint ↔ rows for the LangGraph saver: ids checked, values through the serializer, metadata as JSON. Pure.

A checkpoint row holds the checkpoint without ``channel_values``; each value
is a blob keyed by its channel's version (stored once per version).  Metadata
is JSON text so ``list(filter=...)`` runs in SQL.
"""

from __future__ import annotations

import json
import random
from typing import Any, Mapping, Sequence

from langgraph.checkpoint.base import WRITES_IDX_MAP, get_serializable_checkpoint_metadata, writes_sort_key

from ..errors import CheckpointTooLargeError, InvalidIdentifierError, InvalidValueError
from ..validation import check_id, check_text

__all__ = [
    "EMPTY",
    "Key",
    "check_channel",
    "check_id_of",
    "check_size",
    "config_for",
    "filter_pairs",
    "hex_of",
    "key_of",
    "metadata_json",
    "next_version",
    "sorted_writes",
    "thread_of",
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


def hex_of(payload: bytes | None) -> str | None:
    """A payload as the hex text the saver's inserts ``UNHEX`` (see ``queries``: escaping bytes costs ~30x more)."""
    return None if payload is None else payload.hex()
