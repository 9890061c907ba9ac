"""Upkeep of the embeddings: the model check, re-embedding, the vector index rebuild, per-status counts.

A mixin of :class:`~.service.OceanBaseMemoryService`; the background
embedding itself is :mod:`.vectorizer`'s, and the engine's vector index is
the retriever's (:meth:`.retrieval.Retriever.rebuild_index`).
"""

from __future__ import annotations

import logging
import sys
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from sqlalchemy.ext.asyncio import AsyncConnection

from .. import gateway, maintenance
from ..errors import DDL_BUSY, EmbeddingModelMismatchError, IndexRebuildBusyError, driver_error_code, is_rerunnable
from ..telemetry import traced
from ..validation import check_id
from . import queries as q
from . import vector_queries as vq
from .embedding import Embedder
from .retrieval import Retriever
from .vectorizer import Vectorizer

if TYPE_CHECKING:
    from ..engine import Database

__all__ = ["REBUILD_BUSY_WAIT_S", "EmbeddingUpkeep"]

logger = logging.getLogger(__name__)

REBUILD_BUSY_WAIT_S = 1800.0
"""How long :meth:`EmbeddingUpkeep.rebuild_vector_index` waits for another rebuild of the index to end
(a 100k-row rebuild took minutes on 2 loaded vCPUs; the upkeep's own is bounded by ``index_upkeep_timeout_s``)."""


def _busy_pause(runs: int) -> float:
    """Seconds to wait after the ``runs``-th rebuild was refused with 4179: 1, 2, 4, ... up to 15."""
    return min(2.0 ** (runs - 1), 15.0)


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


class EmbeddingUpkeep:
    """Embedding model checks and maintenance for the memory service (a mixin)."""

    _db: "Database"
    _embedder: Embedder
    _vectorizer: Vectorizer
    _checked: bool
    retriever: Retriever  # the service's property

    async def _check_embedding_model(self) -> None:
        """Refuses to mix embedding models or dimensions silently."""
        want_dim = self._db.config.embedding_dim
        if self._embedder.dim != want_dim:
            raise EmbeddingModelMismatchError(
                f"embedder {self._embedder.model_name} makes {self._embedder.dim}-d vectors but the memory "
                f"column holds {want_dim}-d ones (Config.embedding_dim)"
            )
        async with gateway.connection(self._db) as conn:
            rows = (await conn.execute(vq.embedding_models_in_use())).all()
        others = [(m, d, n) for m, d, n in rows if m != self._embedder.model_name or d != self._embedder.dim]
        if others:
            desc = ", ".join(f"{m} ({d}-d, {n} rows)" for m, d, n in others)
            raise EmbeddingModelMismatchError(
                f"stored memories were embedded by {desc}, not {self._embedder.model_name}: use that model, "
                "or call `await service.reembed()` to re-embed everything with the new one"
            )

    @traced
    async def rebuild_vector_index(self, *, busy_wait_s: float = REBUILD_BUSY_WAIT_S, compact: bool = True) -> bool:
        """Rebuilds the HNSW index after a bulk load (OceanBase/seekdb); ``False`` on MySQL (no index).

        Run it off-peak: it takes minutes at 100k rows, and searches are ~30x
        faster afterwards than on an index grown row by row.  Also gathers the
        table's optimizer statistics, which a bulk load leaves behind
        (``queries.GATHER_TABLE_STATS``: without them a big user's ANN search
        is planned as an exact scan).  With ``compact`` (the default) it then
        runs a major compaction of the tenant and waits for it (bounded by
        ``Config.maintenance_timeout_s``; a failure is logged, not raised):
        rows just loaded are scanned row by row until the server compacts
        them, daily on its own (``queries.MAJOR_FREEZE``: 30k rows, a search's
        statistics 78 -> 1.6 ms, the exact vector scan 240 -> 68 ms).  It
        compacts every table of the tenant: pass ``compact=False`` where a
        DBA schedules compactions.

        The server runs one rebuild of an index at a time and refuses a second
        with error 4179: this waits for the vectorizer's own upkeep rebuild
        (:class:`~.index_upkeep.IndexUpkeep`) first, and while another one is
        still running (another process's, or the server's daily one) asks again
        with a growing pause for up to ``busy_wait_s`` seconds, then raises
        :class:`~adk_oceanbase.errors.IndexRebuildBusyError`.
        """
        await self._engine()
        await self._vectorizer.upkeep.wait()
        busy_until = time.monotonic() + busy_wait_s
        runs = 0

        async def once() -> bool:
            nonlocal runs
            runs += 1
            # minutes at 1M rows, and a full statistics gather: Config.maintenance_timeout_s, one connection
            async with maintenance.connection(self._db) as conn:
                if not await self.retriever.rebuild_index(conn):
                    return False
                await conn.commit()
                if compact:
                    await self._vectorizer.upkeep.compact(conn, self._db.config.maintenance_timeout_s)
                await self._vectorizer.upkeep.refresh_statistics(conn, force=True)
            return True

        def busy(exc: BaseException) -> bool:
            if driver_error_code(exc) != DDL_BUSY or time.monotonic() + _busy_pause(runs) > busy_until:
                return False
            logger.info("rebuild_vector_index: another rebuild of the index is running (4179); again in %.1f s",
                        _busy_pause(runs))
            return True

        try:
            return await gateway.retrying(once, when=busy, attempts=sys.maxsize, pause_s=_busy_pause,
                                          what="rebuild_vector_index")
        except Exception as exc:
            if driver_error_code(exc) == DDL_BUSY:
                raise IndexRebuildBusyError(
                    f"another rebuild of the vector index was still running after {busy_wait_s:.0f} s (error 4179): "
                    "wait for it to finish (the server's own rebuild, or another process's "
                    "rebuild_vector_index) and call rebuild_vector_index() again, or pass a longer busy_wait_s"
                ) from exc
            raise

    @traced
    async def reembed(self) -> int:
        """Marks rows embedded by another model as pending; the vectorizer re-embeds them. Returns the count.

        Deleted memories (tombstones) stay deleted; the count includes
        tombstones whose model was cleared.
        """
        stmt, params = vq.reset_other_models(self._embedder.model_name, self._embedder.dim, _now())

        async def once() -> int:
            # no schema check first: it refuses the other model; one UPDATE of every row: Config.maintenance_timeout_s
            async with maintenance.connection(self._db) as conn:
                count = int((await conn.execute(stmt, params)).rowcount or 0)
                await conn.commit()
                return count

        # ready -> pending for other models is harmless to run twice
        count = await gateway.retrying(once, when=is_rerunnable, what="reembed")
        self._checked = False
        await self._engine()
        return count

    async def stats(self, *, app_name: str | None = None) -> dict[str, dict[str, int]]:
        """Memory rows per app and embedding status (``ready``, ``pending``, ``failed``, ``deleted``).

        ``pending`` rows wait for the vectorizer; ``deleted`` are tombstones
        that keep re-ingestion from bringing a deleted memory back.
        """
        app = check_id("app_name", app_name) if app_name is not None else None
        stmt, params = q.memory_stats(app)

        async def load(conn: AsyncConnection) -> list:
            return (await conn.execute(stmt, params)).all()

        rows = await self._read(load)
        out: dict[str, dict[str, int]] = {}
        for app_row, status, n in rows:
            out.setdefault(app_row, {})[status] = int(n)
        return out
