"""Background embedding: a bounded queue, claimed batches, bounded retries, and a sweep so no row is ever lost.

``add_*`` returns once the memory row is committed with ``embed_status =
'pending'``; its key ``(app_name, user_id, memory_id)`` is handed to
:meth:`Vectorizer.submit`, which never blocks.  When the in-process queue is
full (backpressure), the key is simply not queued: the row is still
``pending`` in the database, and the sweep finds it once the queue has room.
The same sweep runs at start (rows left pending by a crash) and every
``sweep_interval_s``.

Before embedding, a batch is *claimed* (``embed_status = 'embedding'`` plus a
token, one conditional UPDATE): two vectorizers (two processes on one
database) never embed the same row, and a claim older than
``claim_lease_s`` (its process died) is taken over.  A failed round puts its
rows back to ``pending`` for another round ``retry_interval_s`` later;
after ``max_row_attempts`` rounds a row is ``failed`` and left alone.

The model call runs in a worker thread; the vector and ``embed_status =
'ready'`` are written by one UPDATE, so search never sees a half-made row.

Rows a bulk write left without postings (``term_count < 0``: Agno's
``upsert_memories``, see ``memory.postings``, deferred postings) get them in
the claim's transaction, before the model is called: from the text the row
has under the claim's lock, whether its embedding then succeeds or not.  A
row is found by its words once a round has claimed it, and by its vector
once stored; :meth:`Vectorizer.flush` waits for both.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable, Sequence

import numpy as np

from ..context import signals
from .. import gateway
from ..engine import Database
from ..errors import is_deadlock, is_rerunnable
from . import vector_queries as vq
from .consolidation import _loads, merge_near_duplicates
from .poisoning import servable
from .retrievers import neighbour_search
from .embedding import Embedder
from .extraction import embedding_text
from .index_upkeep import IndexUpkeep
from .lexical import doc_terms
from . import postings
from .settings import MemorySettings

__all__ = ["MemoryKey", "Vectorizer"]

logger = logging.getLogger(__name__)

MemoryKey = tuple[str, str, str]
"""``(app_name, user_id, memory_id)``: memory ids are unique per app and user only."""


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


class Vectorizer:
    """Embeds pending memory rows off the request path.

    Args:
        db: a started :class:`~adk_oceanbase.engine.Database`.
        embedder: the model; ``embed`` is called in a worker thread only.
        settings: queue size, batch size, retry and sweep timings.
    """

    def __init__(self, db: Database, embedder: Embedder, settings: MemorySettings):
        self._db = db
        self._embedder = embedder
        self._settings = settings
        self._queue: asyncio.Queue[MemoryKey] | None = None
        self._queued: set[MemoryKey] = set()
        # Keys submitted again while queued or in a round: a merge that set the row back to
        # pending during the round cleared its claim, so that round's vector is not stored.
        self._again: set[MemoryKey] = set()
        self._task: asyncio.Task[None] | None = None
        self._backlog = True  # rows pending from before we started: sweep once
        self._sweep_lock: asyncio.Lock | None = None
        self._initial_sweep: asyncio.Event | None = None
        # Bumped on every overflow: a sweep whose query ran before an overflow
        # (its snapshot may predate the overflowing rows' commit) must not
        # clear the backlog flag.
        self._overflows = 0
        self._closing = False
        # Claims taken and not settled yet: close() gives them back when it stops a round midway.
        self._claims: dict[str, list[MemoryKey]] = {}
        self.upkeep = IndexUpkeep(db, settings)
        """Bounded HNSW rebuild checks as vectors pile up (``MemorySettings.index_upkeep_rows``)."""
        self.stats: dict[str, int] = defaultdict(int)
        """Counters: ``embedded``, ``indexed`` (rows whose deferred postings a round wrote), ``merged``, ``failed_attempts`` (model calls), ``failed_batches`` (rounds
        that failed for some rows), ``dropped_to_backlog``."""

    @property
    def queue_depth(self) -> int:
        """Memory rows waiting in the queue for their embedding (rows beyond it wait for the sweep)."""
        return self._queue.qsize() if self._queue is not None else 0

    # ----------------------------------------------------------- lifecycle
    def _ensure_started(self) -> asyncio.Queue[MemoryKey]:
        if self._queue is None:
            self._queue = asyncio.Queue(maxsize=self._settings.queue_size)
            self._sweep_lock = asyncio.Lock()
            self._initial_sweep = asyncio.Event()
        if self._task is None or self._task.done():
            self._closing = False
            self._task = asyncio.get_running_loop().create_task(self._run(), name="adk-oceanbase-vectorizer")
        return self._queue

    def submit(self, keys: Iterable[MemoryKey]) -> None:
        """Queues ``(app_name, user_id, memory_id)`` keys without ever waiting; overflow stays pending for the sweep."""
        queue = self._ensure_started()
        for key in keys:
            if key in self._queued:
                self._again.add(key)  # queued again when its current round ends
                continue
            try:
                queue.put_nowait(key)
                self._queued.add(key)
            except asyncio.QueueFull:
                self._backlog = True
                self._overflows += 1
                self.stats["dropped_to_backlog"] += 1

    async def flush(self) -> None:
        """Waits until every submitted or pending row has had its embedding round (deferred postings included).

        Rows whose round failed wait ``retry_interval_s`` for the next one and
        do not hold flush up meanwhile; rows another process has claimed are
        that process's to embed.
        """
        queue = self._ensure_started()
        assert self._initial_sweep is not None
        await self._initial_sweep.wait()
        while True:
            await queue.join()
            if not self._backlog:
                return
            # Queues what the backlog holds; the next join() waits for it.  Ends: the flag
            # is only kept while at least a queue's worth is pending, or a round failed
            # (rows then run out of rounds or wait out retry_interval_s unswept).
            await self._sweep()

    async def close(self, timeout: float | None = None) -> None:
        """Drains the queue for at most ``timeout`` seconds (``close_timeout_s``), then stops the worker.

        Rows not embedded by then stay ``pending``: a round stopped midway
        gives its claim back, and the next process's sweep embeds them.  A
        model call that hangs is abandoned in its worker thread.
        """
        if self._task is None:
            await self.upkeep.close()
            return
        limit = self._settings.close_timeout_s if timeout is None else timeout
        try:
            await asyncio.wait_for(self.flush(), limit)
        except (asyncio.TimeoutError, TimeoutError):
            logger.warning("vectorizer: rows still unembedded after %.1f s at close; they stay pending", limit)
        finally:
            self._closing = True
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
            await self._give_back_claims()
            await self.upkeep.close()  # after the worker: its last batches may have started one

    async def _give_back_claims(self) -> None:
        claims, self._claims = self._claims, {}
        if not claims:
            return
        try:
            async with gateway.transaction(self._db) as conn:
                for claim, keys in claims.items():
                    for (app, user), ids in _by_user(keys).items():
                        stmt, params = vq.release_claims(app, user, ids, claim)
                        await conn.execute(stmt, params)
        except Exception:  # the lease expires and another vectorizer takes the rows over
            logger.warning("vectorizer: could not give back %d claims at close", len(claims), exc_info=True)

    async def retry_failed(self) -> int:
        """Gives every ``failed`` row (``max_row_attempts`` used up) fresh rounds; returns how many."""
        stmt, params = vq.retry_failed(_now())

        async def once() -> int:
            async with gateway.transaction(self._db) as conn:
                return int((await conn.execute(stmt, params)).rowcount or 0)

        # failed -> pending is harmless to run twice: a lost connection or a deadlock re-runs it
        count = await gateway.retrying(once, when=is_rerunnable, what="retry_failed")
        if count:
            self._backlog = True
            self.submit(())
        return count

    # -------------------------------------------------------------- worker
    async def _sweep(self) -> int:
        """Queues rows left pending (past their retry pause) or claimed by a dead process that no queue entry covers."""
        assert self._queue is not None and self._sweep_lock is not None
        async with self._sweep_lock:
            room = self._queue.maxsize - self._queue.qsize()
            if room <= 0:
                return 0
            overflows = self._overflows
            limit = room + len(self._queued)
            now = _now()
            stmt, params = vq.sweep_unembedded(
                limit,
                retry_before=now - timedelta(seconds=self._settings.retry_interval_s),
                stale_before=now - timedelta(seconds=self._settings.claim_lease_s),
                model=self._embedder.model_name,
                dim=self._embedder.dim,
            )
            async with gateway.connection(self._db) as conn:
                keys = [(r[0], r[1], r[2]) for r in (await conn.execute(stmt, params)).all()]
            fresh = [k for k in keys if k not in self._queued][:room]
            if len(keys) >= limit:
                self._backlog = True
            elif overflows == self._overflows:
                self._backlog = False
            for key in fresh:
                self._queue.put_nowait(key)
                self._queued.add(key)
            return len(fresh)

    async def _run(self) -> None:
        assert self._queue is not None
        queue = self._queue
        s = self._settings
        # Rows a previous process left pending (crash) or claimed and died: embed them now.
        await self._safe_sweep()
        assert self._initial_sweep is not None
        self._initial_sweep.set()
        while not self._closing:
            try:
                first = await asyncio.wait_for(queue.get(), timeout=s.sweep_interval_s)
            except (asyncio.TimeoutError, TimeoutError):
                await self._safe_sweep()
                continue
            batch = [first]
            loop = asyncio.get_running_loop()
            deadline = loop.time() + s.batch_wait_s
            while len(batch) < s.batch_size:
                try:
                    batch.append(await asyncio.wait_for(queue.get(), timeout=max(deadline - loop.time(), 0)))
                except (asyncio.TimeoutError, TimeoutError):
                    break
            try:
                await self._process(batch)
            except asyncio.CancelledError:
                raise
            except Exception:  # the rows stay pending/claimed in the database; the sweep retries them
                logger.exception("vectorizer batch of %d failed", len(batch))
            finally:
                for key in batch:
                    self._queued.discard(key)
                    if key in self._again:  # before task_done: flush() must not see an empty queue in between
                        self._again.discard(key)
                        self.submit((key,))
                    queue.task_done()
            if self._backlog and queue.empty():
                await self._safe_sweep()

    async def _safe_sweep(self) -> None:
        try:
            await self._sweep()
        except Exception:
            logger.warning("vectorizer sweep failed; will retry", exc_info=True)

    async def _embed_with_retry(self, texts: list[str], attempts: int) -> np.ndarray | None:
        """The model's vectors for ``texts`` in at most ``attempts`` calls, pauses doubling from ``retry_base_s``.

        ``None`` when every call failed (each failure counted in ``failed_attempts``).
        """
        base_s = self._settings.retry_base_s
        failures = 0

        async def embed() -> np.ndarray:
            vecs = await asyncio.to_thread(self._embedder.embed, texts)
            arr = np.asarray(vecs, dtype=np.float32)
            if arr.shape != (len(texts), self._embedder.dim):
                raise ValueError(f"embedder returned shape {arr.shape}, expected {(len(texts), self._embedder.dim)}")
            return arr

        def failed(exc: BaseException) -> bool:
            nonlocal failures
            failures += 1
            self.stats["failed_attempts"] += 1
            signals.record_embedding_failure(type(exc).__qualname__)  # issue 30: embedding failures metric
            logger.warning("embedding attempt %d/%d failed: %s", failures, attempts, type(exc).__name__)
            return True  # any model error: the model (or its server) may answer the next call

        if attempts < 1:
            return None
        try:
            return await gateway.retrying(embed, when=failed, attempts=attempts,
                                          pause_s=lambda n: base_s * 2 ** (n - 1), what="embedding a batch")
        except Exception as exc:
            failed(exc)  # the last call's failure: retrying() re-raises it without asking
            return None

    async def _claim(self, batch: Sequence[MemoryKey], claim: str) -> list[Any]:
        """Claims the batch's rows that are still unclaimed; returns the rows this claim got."""
        now = _now()
        stale = now - timedelta(seconds=self._settings.claim_lease_s)
        groups = _by_user(batch)
        rows: list[Any] = []
        # The claim and its read-back in one transaction: the read sees the claim's own writes
        # whatever snapshot a pooled connection brings (a read on another connection could run
        # on an older REPEATABLE READ snapshot, find no claimed rows, and leave them claimed).
        async with gateway.transaction(self._db) as conn:
            for (app, user), ids in groups.items():
                stmt, params = vq.claim_for_embedding(app, user, ids, claim, now, stale,
                                                      model=self._embedder.model_name, dim=self._embedder.dim)
                await conn.execute(stmt, params)
            for (app, user), ids in groups.items():
                stmt, params = vq.claimed_rows(app, user, ids, claim)
                rows.extend((await conn.execute(stmt, params)).all())
            await self._index_due(conn, [r for r in rows if r.term_count < 0], claim)
        return rows

    async def _index_due(self, conn: Any, due: list[Any], claim: str) -> None:
        """Writes the postings a bulk write left to this round (``term_count < 0``), in the claim's transaction.

        The claim's UPDATE holds the rows: a tombstone, an erasure or a text
        change (each locks or deletes the row before the postings) either
        committed first, and the row is not claimed or not due here, or waits
        and then deletes or replaces these postings.  They are built from the
        row's ``search_text`` as read under that lock: the text it has now.
        Two more statements a round, per user in the batch: the postings' INSERT and the counts' UPDATE.
        """
        if not due:
            return

        def count() -> list[tuple[str, str, str, Any]]:
            return [(r.app_name, r.user_id, r.memory_id, doc_terms(r.search_text or "")) for r in due]

        docs = await asyncio.to_thread(count) if len(due) > _INLINE_TERMS else count()
        groups: dict[tuple[str, str], list[tuple[str, Any]]] = defaultdict(list)
        for app, user, mid, terms in docs:
            groups[(app, user)].append((mid, terms))
        for (app, user), mine in groups.items():
            # replace=False: a due row has no postings (its writer deleted them with the old text, in the
            # transaction that made it due), as for a new row's first postings
            await postings.index_terms(conn, app, user, mine, replace=False)
            stmt, params = vq.postings_written(app, user, [mid for mid, _ in mine], claim)
            await conn.execute(stmt, params)
        self.stats["indexed"] += len(due)

    async def _process(self, batch: list[MemoryKey]) -> None:
        claim = uuid.uuid4().hex
        self._claims[claim] = list(batch)
        try:
            rows = await self._claim(batch, claim)
            if rows:
                await self._embed_and_store(rows, claim)
        finally:
            if not self._closing:  # a round cancelled by close() is given back there
                del self._claims[claim]

    async def _embed_and_store(self, rows: list[Any], claim: str) -> None:
        try:
            done, vecs, failed = await self._embed_rows(rows)
            if done:
                await self._store(done, vecs, _now(), claim)
        except Exception:
            # A store that keeps failing must not loop forever either: it costs the rows a round.
            await self._mark_failed(rows, claim)
            raise
        await self._mark_failed(failed, claim)

    async def _embed_rows(self, rows: list[Any]) -> tuple[list[Any], np.ndarray, list[Any]]:
        """``(embedded rows, their vectors, rows that failed)``: the batch, else each row alone once.

        One text the model cannot take fails the whole batch; a single try per
        row then tells it from the rest, so the others do not lose rounds to it.
        """
        texts = [embedding_text(r.author, r.created_at, r.content) for r in rows]
        vecs = await self._embed_with_retry(texts, self._settings.max_attempts)
        if vecs is not None:
            return rows, vecs, []
        if len(rows) == 1:
            return [], np.zeros((0, self._embedder.dim), dtype=np.float32), rows
        done, singles, failed = [], [], []
        for r, t in zip(rows, texts):
            one = await self._embed_with_retry([t], 1)
            if one is None:
                failed.append(r)
            else:
                done.append(r)
                singles.append(one[0])
        return done, np.stack(singles) if singles else np.zeros((0, self._embedder.dim), dtype=np.float32), failed

    async def _mark_failed(self, rows: Sequence[Any], claim: str) -> None:
        """Counts a failed round on each row; the rows go back to ``pending`` or, out of rounds, to ``failed``."""
        if not rows:
            return
        self.stats["failed_batches"] += 1
        async with gateway.transaction(self._db) as conn:
            for (app, user), ids in _by_user([(r.app_name, r.user_id, r.memory_id) for r in rows]).items():
                stmt, params = vq.mark_embed_failed(app, user, ids, claim, _now(), self._settings.max_row_attempts)
                await conn.execute(stmt, params)
        # Their next round may be due at once (retry_interval_s = 0): let flush look again.
        self._backlog = True

    async def _store(self, rows: list[Any], vecs: np.ndarray, now: datetime, claim: str) -> None:
        dialect = self._db.dialect
        neighbours = neighbour_search(dialect)
        model = self._embedder.model_name
        s = self._settings

        async def once() -> int:
            merged_n = 0
            async with gateway.transaction(self._db) as conn:
                if s.consolidate:
                    groups: dict[tuple[str, str], list[tuple]] = defaultdict(list)
                    for r, v in zip(rows, vecs):
                        if (r.extractor or "").startswith("turn:"):
                            continue  # dialogue turns are records, not facts: never near-duplicate merged
                        if not servable(float(r.confidence), bool(r.tainted), s.min_confidence):
                            continue  # a memory search never returns must not supersede (nor absorb) another
                        groups[(r.app_name, r.user_id)].append(
                            (r.memory_id, r.created_at, v, _loads(r.event_ids), _loads(r.topics), float(r.importance_score),
                             r.content)
                        )
                    for (app, user), batch in groups.items():
                        merged = await merge_near_duplicates(
                            conn, neighbours, app, user, batch, model=model, min_confidence=s.min_confidence,
                            threshold=s.near_duplicate_similarity, min_overlap=s.near_duplicate_min_overlap, now=now, scan_limit=s.numpy_scan_limit,
                        )
                        merged_n += len(merged)
                # One UPDATE per user and EMBEDDINGS_PER_UPDATE rows (vq.set_embeddings: ~1.2 instead of ~3 ms a row).
                by_user: dict[tuple[str, str], list[tuple[str, np.ndarray]]] = defaultdict(list)
                for r, v in zip(rows, vecs):
                    by_user[(r.app_name, r.user_id)].append((r.memory_id, v))
                step = vq.EMBEDDINGS_PER_UPDATE
                for (app, user), stored in by_user.items():
                    stored.sort(key=lambda p: p[0])  # key order: the same lock order as the row range the claim reads
                    for start in range(0, len(stored), step):
                        chunk = stored[start:start + step]
                        await conn.execute(vq.set_embeddings(dialect.vector_type(), len(chunk)),
                                           vq.set_embeddings_params(app, user, chunk, claim=claim, model=model, now=now))
            return merged_n

        # A deadlock victim (MariaDB: the store's UPDATE against a claim's range scan, seen under full-suite
        # load) was rolled back whole; its re-run writes the same rows under the same claim.
        self.stats["merged"] += await gateway.retrying(once, when=is_deadlock, attempts=3,
                                                       pause_s=lambda n: 0.05 * n, what="storing vectors")
        self.stats["embedded"] += len(rows)
        self.upkeep.stored(len(rows))


_INLINE_TERMS = 64
"""Due rows whose terms are counted on the event loop; more are counted in a worker thread."""


def _by_user(keys: Iterable[MemoryKey]) -> dict[tuple[str, str], list[str]]:
    """Memory ids grouped by ``(app_name, user_id)``: every statement addresses one tenant's key prefix."""
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for app, user, mid in keys:
        groups[(app, user)].append(mid)
    return groups
