"""The saver's read side: ``get_tuple`` and ``list``, the values' fetch and decode, the walk up the ancestors.

Why its own module: a read is the harder half of the saver (values held in
three places: the checkpoint row itself, another checkpoint's row named by
:data:`.delta.ROWS_KEY`, or the blob table; delta chains to assemble; rows
that do not name their holders, found through the parents), and none of it
depends on how a write is built beyond the stored shape.  The saver
(:mod:`.saver`) keeps the write side and the public class; both share a
:class:`Recall` (what was last written or read per thread namespace), which
a put builds on and a read uses to fetch a checkpoint's values in the same
round trip as the checkpoint.

How a read is done: a ``get_tuple`` is two round trips (the checkpoint with
its writes, then the values it names), one after this saver's own put or get
of the thread (the values it names are guessed and fetched with the
checkpoint: versions name immutable values, so a wrong guess costs only the
second trip).  Reads are read-only statements on the saver's kept
connection (``fetch``), with no I/O of their own otherwise.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any, Awaitable, Callable, NamedTuple, Sequence

from langgraph.checkpoint.base import CheckpointTuple

from ..errors import CheckpointCorruptError
from . import codec, delta
from . import queries as q

__all__ = ["Reader", "Recall", "Recent", "chains_of", "rows_of"]

_PAGE = 200
"""Checkpoints whose blobs and writes ``list`` loads per round trip (an IN list of that many keys)."""
_ANCESTORS = 64
"""Parent checkpoints a read walks up, at most, to find a value its checkpoint does not say the row of (``_find_lost``)."""
_RECENT = 1024
"""Threads whose newest checkpoint's channel versions are remembered (see :meth:`Reader.get_tuple`)."""
_BY_ID = 4096
"""Checkpoints (any thread) remembered by id, the last read or written: what a put on a parent that is not
its namespace's newest (an ``update_state`` fork) builds on."""


class Recent(NamedTuple):
    """A checkpoint this saver wrote or read: what a put builds on and a read guesses (:class:`Recall`)."""

    cid: str
    versions: dict[str, str]
    chains: dict[str, tuple[str, ...]]
    """Channel -> the versions its blob is built on (:mod:`.delta`), for the channels stored as deltas."""
    inline: frozenset[str] = frozenset()
    """Channels whose value the checkpoint row holds itself (:func:`.codec.inline_values`): no blob to fetch."""
    rows: dict[tuple[str, str], str] | None = None
    """``(channel, version)`` -> the checkpoint whose row holds that value (:data:`.delta.ROWS_KEY`).

    Only for values in checkpoint rows, not in the blob table."""

    def blob_keys(self, held: Any = lambda ch, v: False) -> list[tuple[str, str]]:
        """``(channel, version)`` of every blob a read of this checkpoint fetches, the delta chains' included.

        ``held(channel, version)``: the saver holds that value's bytes already (nothing of it is fetched).
        """
        keys = []
        for ch, v in self.versions.items():
            if ch not in self.inline and not held(ch, v):
                keys.append((ch, v))
                keys += [(ch, b) for b in self.chains.get(ch, ())]
        return keys



def chains_of(cp: dict[str, Any], versions: dict[str, str]) -> dict[str, tuple[str, ...]]:
    """The delta chains a stored checkpoint names (taken out of it: callers never see them)."""
    chains = cp.pop(delta.CHAIN_KEY, None) or {}
    return {ch: tuple(c) for ch, c in chains.items() if ch in versions}


def rows_of(cp: dict[str, Any]) -> dict[tuple[str, str], str]:
    """Which checkpoint rows hold the values a stored checkpoint reads (taken out of it; :data:`.delta.ROWS_KEY`)."""
    rows = cp.pop(delta.ROWS_KEY, None) or {}
    return {(ch, v): holder for ch, held in rows.items() for v, holder in held.items()}


class Recall:
    """What a saver last wrote or read on each thread namespace: the newest checkpoint's shape, and list values' bytes.

    A put builds its deltas and its :data:`.delta.ROWS_KEY` on it; a read
    fetches the guessed values with the checkpoint, and decodes a value held
    here without fetching it.  Bounded: the ``_RECENT`` namespaces used last.

    The last ``_BY_ID`` checkpoints are also kept by id: ``update_state``
    reads its fork point, then the thread's newest checkpoint, then puts on
    the fork point; that put names the chains and rows of its parent as read
    (else a read of the fork walks up the parents for each base of a delta).
    """

    def __init__(self) -> None:
        self._recent: OrderedDict[tuple[str, str], Recent] = OrderedDict()
        self._by_id: OrderedDict[tuple[str, str, str], Recent] = OrderedDict()
        self._memory = delta.ValueMemory()

    def get(self, thread: str, ns: str, cid: str | None = None) -> Recent | None:
        """The newest checkpoint this saver wrote or read on ``(thread, ns)``, or checkpoint ``cid`` of it, if remembered."""
        if cid is None:
            return self._recent.get((thread, ns))
        return self._by_id.get((thread, ns, cid))

    def value(self, thread: str, ns: str, ch: str) -> delta.Known | None:
        """The last version of a channel this saver stored or read, with its bytes."""
        return self._memory.get((thread, ns, ch))

    def held(self, thread: str, ns: str, ch: str, version: str) -> delta.Known | None:
        """The bytes of ``version`` of a channel when this saver stored or read that version last (no fetch needed)."""
        known = self._memory.get((thread, ns, ch))
        return known if known is not None and known.version == version else None

    def remember(self, thread: str, ns: str, recent: Recent, lists: dict[str, delta.Known]) -> None:
        for memo, key, bound in ((self._recent, (thread, ns), _RECENT), (self._by_id, (thread, ns, recent.cid), _BY_ID)):
            memo[key] = recent
            memo.move_to_end(key)
            if len(memo) > bound:
                memo.popitem(last=False)
        for ch, known in lists.items():
            self._memory.put((thread, ns, ch), known)

    def forget(self, threads: Sequence[str]) -> None:
        """Drops what is remembered of ``threads`` (their rows were deleted: no delta may rest on them)."""
        gone = set(threads)
        for memo in (self._recent, self._by_id):
            for key in [k for k in memo if k[0] in gone]:
                del memo[key]
        for thread in gone:
            self._memory.forget_thread(thread)


class Reader:
    """``get_tuple`` and ``list`` of one saver: its app, its read connection (``fetch``), its serializer (``decode``).

    Args:
        app_name: the saver's app (the first key column of every row).
        fetch: runs read-only statements in one round trip, returning ``(rowcount, rows)`` per statement.
        decode: the serializer's ``loads_typed``.
        recall: shared with the saver's write side.
    """

    def __init__(self, app_name: str, fetch: Callable[[list[Any]], Awaitable[list[Any]]],
                 decode: Callable[[tuple[str, bytes]], Any], recall: Recall) -> None:
        self.app_name = app_name
        self._fetch = fetch
        self._decode = decode
        self._recall = recall

    def _loads(self, typed: tuple[str, Any]) -> Any:
        return self._decode(codec.unpack(typed[0], typed[1]))

    async def get_tuple(self, thread: str, ns: str, cid: str | None) -> CheckpointTuple | None:
        """The checkpoint ``cid`` of a thread namespace (its newest when None), with its writes and values."""
        select = q.select_checkpoints(self.app_name, thread, ns, cid, (), None, 1)
        # The blobs of the checkpoint this saver last wrote or read on the thread ride in the same
        # round trip (versions name immutable blobs, so a wrong guess only costs the second trip
        # _tuples makes for what is missing): a graph's get after its put is one round trip.  So do
        # the writes of that checkpoint when the newest is asked for: by key, the server's answer is
        # ~0.04 ms quicker than through the MAX() subquery (seekdb, 2026-11-28); another writer's
        # newer checkpoint costs a round trip for its writes.  A checkpoint asked for by id that this saver
        # read or wrote lately (time travel, ``update_state``'s fork point) is guessed the same way.
        guess = (self._recall.get(thread, ns, cid) if cid is not None else None) or self._recall.get(thread, ns)
        wid = cid if cid is not None else guess.cid if guess is not None else None
        if wid is None:
            writes = q.select_latest_writes(self.app_name, thread, ns)
        else:
            writes = q.select_writes(self.app_name, [(thread, ns, wid)])
        batch = [select, writes]
        if guess and guess.versions and (cid is None or cid == guess.cid):
            keys = guess.blob_keys(lambda ch, v: self._recall.held(thread, ns, ch, v) is not None)
            if keys:
                holders = sorted({h for k in keys if (h := (guess.rows or {}).get(k)) is not None})
                batch += q.select_values(self.app_name, [(thread, ns, ch, v) for ch, v in keys],
                                         [(thread, ns, h) for h in holders])
        results = await self._fetch(batch)
        (_, rows), (_, write_rows) = results[0], results[1]  # the blobs' answers, when asked, follow
        if not rows:
            return None
        if wid is not None and rows[0][2] != wid:  # a newer checkpoint than this saver's last one
            ((_, write_rows),) = await self._fetch([q.select_writes(self.app_name, [(thread, ns, rows[0][2])])])
        writes_by = {(thread, ns, rows[0][2]): [r[1:] if wid is None else r[3:] for r in write_rows]}
        seen: list[tuple[Recent, dict[str, delta.Known]]] = []
        prefetched = [b for _, found in results[2:] for b in found]
        tup = (await self._tuples(rows, writes_by, prefetched, seen))[0]
        self._recall.remember(thread, ns, *seen[0])
        return tup

    async def list(self, thread: str | None, ns: str | None, cid: str | None, filter_pairs: Sequence[tuple[str, str]],
                   before_id: str | None, limit: int | None) -> list[CheckpointTuple]:
        """Checkpoints newest first, each with its writes and values (``_PAGE`` checkpoints per round trip)."""
        sql = q.select_checkpoints(self.app_name, thread, ns, cid, filter_pairs, before_id, limit)
        ((_, rows),) = await self._fetch([sql])
        out: list[CheckpointTuple] = []
        for start in range(0, len(rows), _PAGE):
            page = rows[start : start + _PAGE]
            keys = [(r[0], r[1], r[2]) for r in page]
            ((_, write_rows),) = await self._fetch([q.select_writes(self.app_name, keys)])
            writes_by: dict[tuple[str, str, str], list[Any]] = {}
            for r in write_rows:
                writes_by.setdefault((r[0], r[1], r[2]), []).append(r[3:])
            out += await self._tuples(page, writes_by)
        return out


    async def _tuples(
        self,
        rows: Sequence[Any],
        writes_by: dict[tuple[str, str, str], list[Any]],
        prefetched: Sequence[Any] = (),
        seen: list[tuple[Recent, dict[str, delta.Known]]] | None = None,
    ) -> list[CheckpointTuple]:
        """Checkpoint rows with their pending writes, their channel values loaded in one round trip (or none).

        The blobs fetched include every delta's chain (:mod:`.delta`), named by
        the checkpoint; a base missing from them (a checkpoint written without
        knowing its chain) costs one more round trip.  ``seen`` gets each
        checkpoint's versions, chains and lists: what a later ``put`` builds on.
        """
        decoded = []
        wanted: set[tuple[str, str, str, str]] = set()
        held: dict[tuple[str, str, str, str], delta.Known] = {}  # taken now: a put may replace them during the fetch
        holder_of: dict[tuple[str, str, str, str], str] = {}  # a value's key -> the checkpoint whose row holds it
        for row in rows:
            cp = self._loads((row[4], row[5]))
            versions = {ch: str(v) for ch, v in cp.get("channel_versions", {}).items()}
            chains = chains_of(cp, versions)
            in_rows = rows_of(cp)
            inline = {ch: v for ch, v in (cp.pop("channel_values", None) or {}).items() if ch in versions}
            for ch, v in versions.items():
                if ch not in inline and (known := self._recall.held(row[0], row[1], ch, v)) is not None:
                    held[(row[0], row[1], ch, v)] = known
            recent = Recent(row[2], versions, chains, frozenset(inline), in_rows)
            keys = recent.blob_keys(lambda ch, v, r=row: (r[0], r[1], ch, v) in held)
            wanted.update((row[0], row[1], ch, v) for ch, v in keys)
            holder_of.update(((row[0], row[1], *k), in_rows[k]) for k in keys if k in in_rows)
            decoded.append((row, cp, recent, inline))
        fetched = {tuple(b[:4]): b for b in prefetched}
        missing = sorted(wanted - fetched.keys())
        if missing:
            # The blob table and the checkpoint rows named as holders, in one round trip: a value is in one of them.
            holders = sorted({(k[0], k[1], holder_of[k]) for k in missing if k in holder_of})
            for _, more in await self._fetch(q.select_values(self.app_name, missing, holders)):
                fetched.update((tuple(b[:4]), b) for b in more)
        lost = [k for k in wanted if k not in fetched]
        if lost:  # values held in rows that their checkpoint does not name (written by a saver that had not read the thread)
            await self._find_lost(decoded, lost, holder_of, fetched)
        raw: dict[tuple[str, str, str, str], tuple[str, bytes | None]] = {}

        def unpacked(key: tuple[str, str, str, str]) -> tuple[str, bytes | None] | None:
            if key not in raw:
                b = fetched.get(key)
                if b is None:
                    return None
                raw[key] = (b[4], None) if b[4] == codec.EMPTY or b[5] is None else codec.unpack(b[4], b[5])
            return raw[key]

        values: dict[tuple[str, str, str, str], Any] = {}
        out = []
        for entry in decoded:
            (thread, ns, cid, parent, _t, _p, md), cp, recent, inline = entry
            lists: dict[str, delta.Known] = {}
            cp["channel_values"] = {}
            for ch, v in recent.versions.items():
                key = (thread, ns, ch, v)
                if ch in inline:
                    cp["channel_values"][ch] = inline[ch]
                    continue
                if key in values:
                    pass
                elif (known := held.get(key)) is not None:
                    values[key] = self._decode((known.vtype, known.payload))
                    lists[ch] = known
                else:
                    got = unpacked(key)
                    if got is None or got[1] is None:
                        continue
                    vtype, data = got
                    chain: tuple[str, ...] = ()
                    if vtype.startswith(delta.APPEND):
                        vtype, data, chain = await self._assemble(key, vtype, data, unpacked, fetched, holder_of, entry)
                    values[key] = self._decode((vtype, data))
                    if seen is not None and codec.names_one_value(v):
                        lists[ch] = delta.known_of(v, vtype, data, chain, fetched[key][6])
                cp["channel_values"][ch] = values[key]
            if seen is not None:
                found = {k[2:]: h for k, h in holder_of.items() if k[:2] == (thread, ns)}
                named = {**found, **(recent.rows or {})}
                seen.append((Recent(cid, recent.versions, recent.chains, recent.inline, named), lists))
            out.append(CheckpointTuple(
                config=codec.config_for(thread, ns, cid),  # type: ignore[arg-type]
                checkpoint=cp,
                metadata=json.loads(md),
                parent_config=codec.config_for(thread, ns, parent) if parent else None,  # type: ignore[arg-type]
                pending_writes=codec.sorted_writes(writes_by.get((thread, ns, cid), []), self._loads),
            ))
        return out

    async def _find_lost(self, decoded: Sequence[Any], lost: Sequence[tuple[str, str, str, str]],
                         holder_of: dict[tuple[str, str, str, str], str], fetched: dict[Any, Any]) -> None:
        """Finds values that neither the blob table nor a named row held, through the checkpoints' ancestors.

        A checkpoint written by a saver that had not read its thread (a put
        on a parent it did not fetch) cannot name the rows holding the
        versions it did not change.  Its ancestors do: each checkpoint names
        the rows of all it reads (:data:`.delta.ROWS_KEY`), so walking up the
        parents by primary key, one round trip a step, usually finds them at
        the first.  What is learnt goes into ``holder_of`` (a delta's bases
        are among it) and the values found into ``fetched``.
        """
        todo = set(lost)
        for (thread, ns, _cid, parent, *_), _cp, _recent, _inline in decoded:
            mine = {k for k in todo if k[:2] == (thread, ns)}
            hops = 0
            while parent and mine - holder_of.keys() and hops < _ANCESTORS:
                hops += 1
                ((_, rows),) = await self._fetch([q.select_checkpoints(self.app_name, thread, ns, parent, (), None, 1)])
                if not rows:
                    break
                for (ch, v), holder in rows_of(self._loads((rows[0][4], rows[0][5]))).items():
                    holder_of.setdefault((thread, ns, ch, v), holder)
                parent = rows[0][3]
            todo -= mine
        # the lost values and what else the walk named of their channels (a delta's bases): one round trip
        channels = {k[:3] for k in lost}
        holders = sorted({(k[0], k[1], h) for k, h in holder_of.items() if k[:3] in channels and k not in fetched})
        if holders:
            ((_, more),) = await self._fetch([q.select_row_deltas(self.app_name, holders)])
            fetched.update((tuple(b[:4]), b) for b in more)

    async def _assemble(self, key: tuple[str, str, str, str], vtype: str, data: bytes, unpacked: Any,
                        fetched: dict[Any, Any], holder_of: dict[Any, str], entry: Any) -> tuple[str, bytes, tuple[str, ...]]:
        """A delta blob's whole list (:func:`.delta.assemble`), fetching bases the checkpoint did not name."""
        thread, ns, ch, version = key

        def row(v: str) -> tuple[str, bytes] | None:
            got = unpacked((thread, ns, ch, v))
            return None if got is None else (got[0], got[1] or b"")

        while True:
            try:
                return delta.assemble(version, vtype, data, row)
            except delta.MissingBase as missing:
                # A checkpoint that does not name its chain (written by a saver that had not read the thread):
                # the base is asked of the blob table (and of its row, when known) first, and only when neither
                # holds it are the ancestors walked for the row that does.  Walking first cost a round trip per
                # parent up to the root for every base kept in the blob table: 65 round trips for a 20-checkpoint
                # thread against 5 now (tests/langgraph/test_saver_fork.py).
                base = (thread, ns, ch, missing.version)
                holder = holder_of.get(base)
                batch = q.select_values(self.app_name, [base], [(thread, ns, holder)] if holder is not None else [])
                more = [b for _, found in await self._fetch(batch) for b in found if tuple(b[:4]) == base]
                if more:
                    fetched[base] = more[0]
                    continue
                if holder is None:  # its ancestors name the row holding it, and the walk fetches it
                    await self._find_lost([entry], [base], holder_of, fetched)
                    if base in fetched:
                        continue
                raise CheckpointCorruptError(
                    f"channel {ch!r} version {version!r} of thread {thread!r} is stored as a delta on version "
                    f"{missing.version!r}, which is gone (deleted outside this saver?)"
                ) from None
