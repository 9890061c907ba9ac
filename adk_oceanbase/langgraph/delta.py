"""Append-only list channels stored as deltas: a version's blob holds only what the step appended. Pure.

A graph's message list (``add_messages``, ``operator.add``) grows by a
message or two per step, and the Postgres saver's design stores the whole
list again under every new version: a put's bytes grow with the history
(17 kB zstd at 150 messages of words), and on seekdb the server's cost of a
put grows with the bytes it stores.  Here a new version of a list whose
serialized form starts with the previous version's elements is stored as
``append+<type>``: the base version, the counts, and the serialized new
elements only; every ``every``-th version of a chain is a full snapshot, so
a read fetches at most ``every`` rows.

Why this is exact.  ``JsonPlusSerializer`` writes a list as a msgpack array:
a header with the count, then each element's encoding, one after the other.
Msgpack encodings are self-delimiting, so when the new list's element bytes
start with the old list's element bytes, the new list's first elements
decode to the old ones and the rest of the bytes are the appended elements.
The reader rebuilds the array's bytes (header for the total count, the
snapshot's element bytes, each delta's in order) and hands them to the
serializer: the very bytes the serializer produced for that version, so the
value read is the one a full blob would give.  The comparison is on bytes,
never on the values (which callers may mutate), and any list that is not an
append of the previous one (a removal, an edit, ``RemoveMessage``, a fork
from an earlier checkpoint) is stored whole.

A delta names its base version; the checkpoint row names every version its
deltas rest on (:data:`CHAIN_KEY`), so the read that fetches a checkpoint's
blobs fetches the chain with them, in the same round trip.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

from ..errors import CheckpointCorruptError

__all__ = ["APPEND", "CHAIN_KEY", "ROWS_KEY", "Known", "Plan", "ValueMemory", "assemble", "known_of", "plan"]

APPEND = "append+"
"""Type tag prefix of a delta blob: ``append+msgpack`` (``zstd+append+msgpack`` when compressed)."""
CHAIN_KEY = "__adk_oceanbase_chains__"
"""Key in the stored checkpoint: channel -> the versions its blob is built on, snapshot first (never returned)."""
ROWS_KEY = "__adk_oceanbase_rows__"
"""Key in the stored checkpoint: channel -> {version: id of the checkpoint whose row holds that version's value}.

For the versions (the channel's own and its chain's) that were stored in a
checkpoint row rather than the blob table (``lg_checkpoints.delta_*``): a
reader fetches that row by primary key, and the blob table's row for the
same key in the same packet (where the value went if the row was deleted).
Never returned."""
ARRAY_TYPE = "msgpack"
"""The serializer type whose payloads may be stored as deltas (``JsonPlusSerializer``'s)."""


def split_array(payload: bytes) -> tuple[int, int] | None:
    """``(element count, header length)`` of a msgpack array payload, or None for anything else."""
    if not payload:
        return None
    b0 = payload[0]
    if 0x90 <= b0 <= 0x9F:
        return b0 & 0x0F, 1
    if b0 == 0xDC and len(payload) >= 3:
        return int.from_bytes(payload[1:3], "big"), 3
    if b0 == 0xDD and len(payload) >= 5:
        return int.from_bytes(payload[1:5], "big"), 5
    return None


def array_header(count: int) -> bytes:
    """The shortest msgpack array header for ``count`` elements (what msgpack writers emit)."""
    if count < 16:
        return bytes((0x90 | count,))
    if count < 1 << 16:
        return b"\xdc" + count.to_bytes(2, "big")
    return b"\xdd" + count.to_bytes(4, "big")


@dataclass(frozen=True, slots=True)
class Known:
    """The value this saver last stored or read for a (thread, namespace, channel), as the serializer wrote it.

    The base of the next delta when it is a list; and what a read of that
    version decodes without fetching it (the bytes are immutable and a
    version names one value, so the objects a read returns are fresh ones,
    exactly as if the row had been fetched).
    """

    version: str
    vtype: str
    payload: bytes
    """The serializer's bytes, kept by reference: compared as bytes, never as values."""
    chain: tuple[str, ...]
    """Versions the blob at ``version`` is built on, snapshot first (``()``: it is a snapshot)."""
    user: str
    count: int | None = None
    """Elements when the value is a msgpack array (a list: a delta may extend it), else None."""
    header: int = 0

    @property
    def size(self) -> int:
        return len(self.payload) - self.header


def known_of(version: str, vtype: str, payload: bytes, chain: tuple[str, ...], user: str) -> Known:
    arr = split_array(payload) if vtype == ARRAY_TYPE else None
    return Known(version, vtype, payload, chain, user, *(arr or (None, 0)))


@dataclass(frozen=True, slots=True)
class Plan:
    """How one channel value is stored: ``(vtype, payload)`` to write, its chain, what to remember."""

    vtype: str
    payload: bytes
    chain: tuple[str, ...]
    known: Known


def _header(base: str, base_count: int, added: int) -> bytes:
    return f"{base}\n{base_count}\n{added}\n".encode()


def plan(known: Known | None, version: str, vtype: str, payload: bytes, user: str, every: int) -> Plan:
    """The delta of ``payload`` on ``known`` when it is an append to it and the chain is short enough, else the whole.

    ``every``: a chain holds at most ``every`` rows (a snapshot and ``every - 1``
    deltas); ``every <= 1`` stores every version whole.  The base must be the same
    user's (erasing one user's rows must not break another's chain).
    """
    arr = split_array(payload) if vtype == ARRAY_TYPE and every > 1 else None
    if arr is None:
        return Plan(vtype, payload, (), known_of(version, vtype, payload, (), user))
    count, header = arr
    if known is not None and known.version == version:  # the same version again: the row already names its chain
        return Plan(vtype, payload, known.chain, known)
    if (
        known is not None
        and known.count is not None
        and known.user == user
        and len(known.chain) + 1 < every
        and count >= known.count
        and len(payload) - header >= known.size
        and payload.startswith(memoryview(known.payload)[known.header :], header)
    ):
        tail = memoryview(payload)[header + known.size :]
        chain = (*known.chain, known.version)
        stored = _header(known.version, known.count, count - known.count) + tail
        return Plan(APPEND + vtype, stored, chain, Known(version, vtype, payload, chain, user, count, header))
    return Plan(vtype, payload, (), Known(version, vtype, payload, (), user, count, header))


def parse(data: bytes) -> tuple[str, int, int, memoryview]:
    """``(base version, base count, appended count, appended element bytes)`` of a delta blob."""
    try:
        base, base_count, added, _ = data.split(b"\n", 3)
        start = len(base) + len(base_count) + len(added) + 3
        return base.decode(), int(base_count), int(added), memoryview(data)[start:]
    except ValueError as exc:
        raise CheckpointCorruptError("a delta blob has no readable header") from exc


def assemble(version: str, vtype: str, data: bytes, row: Callable[[str], tuple[str, bytes] | None]) -> tuple[str, bytes, tuple[str, ...]]:
    """The serializer's ``(type, bytes)`` of the delta blob ``(vtype, data)`` at ``version``, and its chain.

    ``row(version)`` is a fetched blob ``(type, uncompressed bytes)``, or None
    when it was not fetched (:class:`MissingBase` is raised naming it).  The
    counts each delta records are checked along the way: a chain that does
    not add up raises :class:`~adk_oceanbase.errors.CheckpointCorruptError`.
    """
    tails: list[memoryview] = []
    chain: list[str] = []
    total = expected = None
    inner = vtype[len(APPEND) :]
    while vtype.startswith(APPEND):
        if vtype[len(APPEND) :] != inner:
            raise CheckpointCorruptError(f"the delta chain of version {version!r} mixes types")
        base, base_count, added, tail = parse(data)
        if expected is not None and base_count + added != expected:
            raise CheckpointCorruptError(f"the delta chain of version {version!r} does not add up at {base!r}")
        total = base_count + added if total is None else total
        expected = base_count
        tails.append(tail)
        chain.append(base)
        if len(chain) > 4096:
            raise CheckpointCorruptError(f"the delta chain of version {version!r} does not end")
        got = row(base)
        if got is None:
            raise MissingBase(base)
        vtype, data = got
    arr = split_array(data) if vtype == inner else None
    if arr is None or arr[0] != expected:
        raise CheckpointCorruptError(f"the snapshot under version {version!r} is not the list its deltas extend")
    chain.reverse()
    tails.reverse()
    return vtype, b"".join([array_header(total or 0), memoryview(data)[arr[1] :], *tails]), tuple(chain)


class MissingBase(Exception):
    """A delta's base row was not among those fetched: fetch it and assemble again."""

    def __init__(self, version: str) -> None:
        super().__init__(version)
        self.version = version


class ValueMemory:
    """The last value stored or read per (thread, namespace, channel), as :class:`Known`, within a byte budget (LRU).

    The payloads are the serializer's own bytes objects, kept by reference;
    ``budget`` bounds their sum (a thread forgotten here just writes its next
    version whole).
    """

    def __init__(self, budget: int = 64 * 1024 * 1024, entries: int = 4096) -> None:
        self._items: OrderedDict[tuple[str, str, str], Known] = OrderedDict()
        self._bytes = 0
        self.budget, self.entries = budget, entries

    def get(self, key: tuple[str, str, str]) -> Known | None:
        return self._items.get(key)

    def put(self, key: tuple[str, str, str], known: Known) -> None:
        old = self._items.pop(key, None)
        if old is not None:
            self._bytes -= len(old.payload)
        if len(known.payload) > self.budget:
            return
        self._items[key] = known
        self._bytes += len(known.payload)
        while self._bytes > self.budget or len(self._items) > self.entries:
            _, gone = self._items.popitem(last=False)
            self._bytes -= len(gone.payload)

    def forget_thread(self, thread: str) -> None:
        """Drops a thread's lists (its rows were deleted or pruned: a base may be gone)."""
        for key in [k for k in self._items if k[0] == thread]:
            self._bytes -= len(self._items.pop(key).payload)

    def clear(self) -> None:
        self._items.clear()
        self._bytes = 0
