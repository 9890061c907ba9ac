"""Background embedding: a bounded queue, batches, retries, and a sweep so no row is ever lost.

``add_*`` returns once the memory row is committed with ``embed_status =
'pending'``; its id is handed to :meth:`Vectorizer.submit`, which never
blocks.  When the in-process queue is full (backpressure), the id is simply
not queued: the row is still ``pending`` in the database, and the sweep finds
it once the queue has room.  The same sweep runs at start (rows left pending
by a crash) and every ``sweep_interval_s`` (rows whose embedding ``failed``).

The model call runs in a worker thread; the vector and ``embed_status =
'ready'`` are written by one UPDATE, so search never sees a half-made row.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from datetime import datetime, timezone
from typing import Any, Iterable

import numpy as np

from ..engine import Database
from . import queries as q
from .consolidation import _loads, merge_near_duplicates
from .embedding import Embedder
from .extraction import embedding_text
from .settings import MemorySettings

__all__ = ["Vectorizer"]

logger = logging.getLogger(__name__)


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
        self._queue: asyncio.Queue[str] | None = None
        self._queued: set[str] = set()
        self._task: asyncio.Task[None] | None = None
        self._backlog = True  # rows pending from before we started: sweep once
        self._sweep_lock: asyncio.Lock | None = None
        self._initial_sweep: asyncio.Event | None = None
        # Bumped on every overflow: a sweep whose query ran before an overflow
        # (its snapshot may predate the overflowing rows' commit) must not
        # clear the backlog flag.
        self._overflows = 0
        self._closing = False
        self.stats: dict[str, int] = defaultdict(int)
        """Counters: ``embedded``, ``merged``, ``failed_attempts``, ``failed_batches``, ``dropped_to_backlog``."""

    @property
    def queue_depth(self) -> int:
        """Memory rows waiting in the queue for their embedding (rows beyond it wait for the sweep)."""
        return self._queue.qsize() if self._queue is not None else 0

    # ----------------------------------------------------------- lifecycle
    def _ensure_started(self) -> asyncio.Queue[str]:
        if self._queue is None:
            self._queue = asyncio.Queue(maxsize=self._settings.queue_size)
            self._sweep_lock = asyncio.Lock()
            self._initial_sweep = asyncio.Event()
        if self._task is None or self._task.done():
            self._closing = False
            self._task = asyncio.get_running_loop().create_task(self._run(), name="adk-oceanbase-vectorizer")
        return self._queue

    def submit(self, memory_ids: Iterable[str]) -> None:
        """Queues ids for embedding without ever waiting; overflow stays pending for the sweep."""
        queue = self._ensure_started()
        for mid in memory_ids:
            if mid in self._queued:
                continue
            try:
                queue.put_nowait(mid)
                self._queued.add(mid)
            except asyncio.QueueFull:
                self._backlog = True
                self._overflows += 1
                self.stats["dropped_to_backlog"] += 1

    async def flush(self) -> None:
        """Waits until every submitted or pending row has been embedded (or marked failed)."""
        queue = self._ensure_started()
        assert self._initial_sweep is not None
        await self._initial_sweep.wait()
        while True:
            await queue.join()
            if not self._backlog:
                return
            # Queues what the backlog holds; the next join() waits for it.  Ends:
            # the flag is only kept while at least a queue's worth is pending.
            await self._sweep(include_failed=False)

    async def close(self) -> None:
        """Drains the queue, then stops the worker."""
        if self._task is None:
            return
        try:
            await self.flush()
        finally:
            self._closing = True
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    # -------------------------------------------------------------- worker
    async def _sweep(self, *, include_failed: bool) -> int:
        """Queues rows left pending (and, periodically, failed) that no queue entry covers."""
        assert self._queue is not None and self._sweep_lock is not None
        async with self._sweep_lock:
            room = self._queue.maxsize - self._queue.qsize()
            if room <= 0:
                return 0
            overflows = self._overflows
            limit = room + len(self._queued)
            stmt, params = q.sweep_unembedded(limit, include_failed=include_failed)
            async with self._db.engine.connect() as conn:
                ids = [r[0] for r in (await conn.execute(stmt, params)).all()]
            fresh = [i for i in ids if i not in self._queued][:room]
            if len(ids) >= limit:
                self._backlog = True
            elif overflows == self._overflows:
                self._backlog = False
            for mid in fresh:
                self._queue.put_nowait(mid)
                self._queued.add(mid)
            return len(fresh)

    async def _run(self) -> None:
        assert self._queue is not None
        queue = self._queue
        s = self._settings
        # Rows a previous process left pending or failed (crash, outage): retry them now.
        await self._safe_sweep(include_failed=True)
        assert self._initial_sweep is not None
        self._initial_sweep.set()
        while not self._closing:
            try:
                first = await asyncio.wait_for(queue.get(), timeout=s.sweep_interval_s)
            except (asyncio.TimeoutError, TimeoutError):
                await self._safe_sweep(include_failed=True)
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
            except Exception:  # the rows stay pending/failed in the database; the sweep retries them
                logger.exception("vectorizer batch of %d failed", len(batch))
            finally:
                for mid in batch:
                    self._queued.discard(mid)
                    queue.task_done()
            if self._backlog and queue.empty():
                await self._safe_sweep(include_failed=False)

    async def _safe_sweep(self, *, include_failed: bool) -> None:
        try:
            await self._sweep(include_failed=include_failed)
        except Exception:
            logger.warning("vectorizer sweep failed; will retry", exc_info=True)

    async def _embed_with_retry(self, texts: list[str]) -> np.ndarray | None:
        s = self._settings
        for attempt in range(s.max_attempts):
            try:
                vecs = await asyncio.to_thread(self._embedder.embed, texts)
                arr = np.asarray(vecs, dtype=np.float32)
                if arr.shape != (len(texts), self._embedder.dim):
                    raise ValueError(f"embedder returned shape {arr.shape}, expected {(len(texts), self._embedder.dim)}")
                return arr
            except Exception as exc:
                self.stats["failed_attempts"] += 1
                logger.warning("embedding attempt %d/%d failed: %s", attempt + 1, s.max_attempts, type(exc).__name__)
                if attempt + 1 < s.max_attempts:
                    await asyncio.sleep(s.retry_base_s * (2**attempt))
        return None

    async def _process(self, batch: list[str]) -> None:
        stmt, params = q.claim_rows_for_embedding(batch)
        async with self._db.engine.connect() as conn:
            rows = (await conn.execute(stmt, params)).all()
        if not rows:
            return
        texts = [embedding_text(r.author, r.created_at, r.content) for r in rows]
        vecs = await self._embed_with_retry(texts)
        now = _now()
        if vecs is None:
            self.stats["failed_batches"] += 1
            stmt, params = q.mark_embed_failed([r.memory_id for r in rows], now)
            async with self._db.engine.begin() as conn:
                await conn.execute(stmt, params)
            return
        await self._store(rows, vecs, now)

    async def _store(self, rows: list[Any], vecs: np.ndarray, now: datetime) -> None:
        dialect = self._db.dialect
        model = self._embedder.model_name
        s = self._settings
        async with self._db.engine.begin() as conn:
            if s.consolidate:
                groups: dict[tuple[str, str], list[tuple]] = defaultdict(list)
                for r, v in zip(rows, vecs):
                    if (r.extractor or "").startswith("turn:"):
                        continue  # dialogue turns are records, not facts: never near-duplicate merged
                    groups[(r.app_name, r.user_id)].append(
                        (r.memory_id, r.created_at, v, _loads(r.event_ids), _loads(r.topics), float(r.importance_score),
                         r.content)
                    )
                for (app, user), batch in groups.items():
                    merged = await merge_near_duplicates(
                        conn, dialect, app, user, batch, model=model,
                        threshold=s.near_duplicate_similarity, min_overlap=s.near_duplicate_min_overlap, now=now, scan_limit=s.numpy_scan_limit,
                    )
                    self.stats["merged"] += len(merged)
            await conn.execute(
                q.set_embedding(),
                [
                    {"memory_id": r.memory_id, "embedding": dialect.encode_vector(v), "model": model,
                     "dim": int(v.shape[0]), "now": now}
                    for r, v in zip(rows, vecs)
                ],
            )
        self.stats["embedded"] += len(rows)
