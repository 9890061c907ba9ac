"""Upkeep of the embeddings: the model check, re-embedding, the vector index rebuild, per-status counts.

A mixin of :class:`~.service.OceanBaseMemoryService`; the background
embedding itself is :mod:`.vectorizer`'s, and the engine's vector index is
the retriever's (:meth:`.retrieval.Retriever.rebuild_index`).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING

from sqlalchemy.ext.asyncio import AsyncConnection

from .. import gateway, maintenance
from ..errors import EmbeddingModelMismatchError, is_rerunnable
from ..telemetry import traced
from ..validation import check_id
from . import queries as q
from . import vector_queries as vq
from .embedding import Embedder
from .retrieval import Retriever
from .vectorizer import Vectorizer

if TYPE_CHECKING:
    from ..engine import Database

__all__ = ["EmbeddingUpkeep"]


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
    async def rebuild_vector_index(self) -> bool:
        """Rebuilds the HNSW index after a bulk load (OceanBase/seekdb); ``False`` on MySQL (no index).

        Run it off-peak: it takes minutes at 100k rows, and searches are ~30x
        faster afterwards than on an index grown row by row.  Also gathers the
        table's optimizer statistics, which a bulk load leaves behind
        (``queries.GATHER_TABLE_STATS``: without them a big user's ANN search
        is planned as an exact scan).
        """
        await self._engine()
        # minutes at 1M rows, and a full statistics gather: Config.maintenance_timeout_s, one connection
        async with maintenance.connection(self._db) as conn:
            if not await self.retriever.rebuild_index(conn):
                return False
            await conn.commit()
            await self.vectorizer.upkeep.refresh_statistics(conn, force=True)
        return True

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
