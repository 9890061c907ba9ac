"""The two retrievers behind :class:`~.retrieval.Retriever`, and the choice between them.

:class:`OceanBaseRetriever` ranks in one SQL statement (OceanBase/seekdb:
``VECTOR``, HNSW, the BM25 postings); :class:`MySQLRetriever` prefilters in
SQL and ranks in numpy (MySQL/MariaDB, or any engine with ``scoring="numpy"``).
:func:`retriever_for` picks one from the engine dialect's ``ranking`` unless
``MemorySettings.scoring`` names one; nothing here tests an engine's name.
Each class also finds a new vector's stored near-duplicates the way its
engine can (consolidation, :func:`neighbour_search`).
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, Sequence

import numpy as np
from sqlalchemy.ext.asyncio import AsyncConnection

from .. import gateway
from ..dialects import EngineDialect
from ..engine import Database
from ..errors import OB_INTERNAL_ERROR
from . import queries as q
from . import search_sql as sq
from . import vector_queries as vq
from .search_scope import numpy_prefilter
from .consolidation import NeighbourSearch
from .results import MemoryHit, SearchRow, to_hit
from .retrieval import HitJoin, ProfileCache, SearchPlanner, SearchRequest
from .scoring import rank_rows
from .settings import MemorySettings

__all__ = ["MySQLRetriever", "OceanBaseRetriever", "RETRIEVERS", "neighbour_search", "retriever_for"]


class OceanBaseRetriever(SearchPlanner):
    """The one-statement ranking (:func:`.search_sql.hybrid_search`), sent with its ``SET`` statements in one round trip."""

    async def search(self, request: SearchRequest) -> list[MemoryHit]:
        return [to_hit(SearchRow(*t)) for t in await self._ranked(request)]

    async def search_joined(self, request: SearchRequest, join: HitJoin) -> list[tuple[Any, ...]]:
        """``join``'s rows, the hybrid statement ending in its SELECT: one statement, one round trip.

        The LangGraph Store's search read its items for the hits as a second query, and
        decoded 50 memory rows it did not use (see benchmarks/README.md, the Store section).
        """
        return [tuple(t) for t in await self._ranked(request, join)]

    async def _ranked(self, request: SearchRequest, join: HitJoin | None = None) -> list[Any]:
        """The search's batch (session variables, then the statement) in one round trip: its last result's rows."""
        s, dialect = self.settings, self.database.dialect
        app, user = request.app_name, request.user_id
        profile = await self.profile(app, user)
        query = self.fulltext_query(request, profile)
        approximate = self.approximate(profile)
        # A raw-driver batch bypasses SQLAlchemy's types: the dialect's codec encodes the query vector.
        encoded = None if request.query_vector is None else dialect.encode_vector(request.query_vector)
        overfetch = self.overfetch(profile, request.filters, hnsw=encoded is not None and approximate)
        # Big users: the BM25 statistics go into session variables first (postings.bm25_statistics:
        # constants in the postings sum), in the same round trip and snapshot.
        stats = None if overfetch is None or s.fulltext_statistics == "inline" \
            else sq.set_fulltext_statistics(app, user, query)
        batch = [sq.snapshot_reads()] if stats is not None else []
        if encoded is not None:
            batch.append(sq.bind_query_vector(encoded, self.ef_search(approximate, request.top_k)))
        if stats is not None:
            batch.append(stats)
        batch.append(sq.hybrid_search(
            app_name=app, user_id=user, query_vector=encoded, query_text=query,
            embedding_model=self.embedding_model, now=request.now, top_k=request.top_k, weights=request.weights,
            settings=s, filters=request.filters, min_score=request.min_score, approximate=approximate,
            fulltext_overfetch=overfetch, fulltext_statistics="inline" if stats is None else "variables",
            author_cue=request.author_cue, ann_post_filter=approximate and self.owns_table(profile),
            hits_select=None if join is None else join.sql,
        ))
        if join is not None:
            stmt, params = batch[-1]
            batch[-1] = (stmt, {**params, **join.params})  # join's names start with "j_", the statement's never
        # seekdb answered 4016 ("Internal error") once in ~1,000 hybrid searches over 100k rows in
        # one user, never twice in a row; a search is a pure read, so it runs once more.
        _, tuples = (await gateway.read_batch(self.database, batch, rerun_codes=frozenset({OB_INTERNAL_ERROR})))[-1]
        return tuples

    async def rebuild_index(self, conn: AsyncConnection) -> bool:
        """Rebuilds the HNSW index in one pass (``queries.REBUILD_VECTOR_INDEX``): minutes at 1M rows."""
        await conn.execute(q.REBUILD_VECTOR_INDEX)
        return True

    @staticmethod
    async def neighbours(conn: AsyncConnection, app_name: str, user_id: str, batch: Sequence[tuple[str, np.ndarray]],
                         *, dialect: EngineDialect, model: str, min_confidence: float, scan_limit: int) -> list[Any]:
        """Each new vector's nearest stored facts by the HNSW index (three apiece)."""
        out: list[Any] = []
        vt = dialect.vector_type()
        for mid, vec in batch:
            stmt, params = vq.nearest_neighbour(app_name, user_id, mid, vec, model, min_confidence, vt)
            out.extend((await conn.execute(stmt, params)).all())
        return out


class MySQLRetriever(SearchPlanner):
    """The SQL prefilter (:func:`.search_scope.numpy_prefilter`) ranked by :func:`.scoring.rank_rows` in a worker thread."""

    async def search(self, request: SearchRequest) -> list[MemoryHit]:
        app, user = request.app_name, request.user_id
        profile = await self.profile(app, user)
        stmt, params = numpy_prefilter(
            app_name=app, user_id=user, query_text=self.fulltext_query(request, profile), settings=self.settings,
            filters=request.filters, fulltext_overfetch=self.overfetch(profile, request.filters),
            vector_type=self.database.dialect.vector_type(),
        )

        async def load(conn: AsyncConnection) -> list[Any]:
            # The rows arrive buffered; building them runs the vector type's decoder, CPU work for
            # up to numpy_scan_limit rows (seconds of text vectors on seekdb): off the event loop.
            return await asyncio.to_thread((await conn.execute(stmt, params)).all)

        rows = await gateway.read(self.database, load)
        ranked = await asyncio.to_thread(
            rank_rows, rows, query_vector=request.query_vector, embedding_model=self.embedding_model,
            now=request.now, top_k=request.top_k, weights=request.weights, settings=self.settings,
            min_score=request.min_score, author_cue=request.author_cue,
        )
        return [to_hit(r, sig) for r, sig in ranked]

    @staticmethod
    async def neighbours(conn: AsyncConnection, app_name: str, user_id: str, batch: Sequence[tuple[str, np.ndarray]],
                         *, dialect: EngineDialect, model: str, min_confidence: float, scan_limit: int) -> list[Any]:
        """The user's newest ``scan_limit`` stored facts, compared with the new vectors in numpy."""
        stmt, params = vq.near_duplicate_candidates(app_name, user_id, "", model, scan_limit, min_confidence,
                                                    dialect.vector_type())
        # Decoding up to scan_limit stored vectors (the type's result processor) is CPU work: off the event loop.
        return await asyncio.to_thread((await conn.execute(stmt, params)).all)


RETRIEVERS: dict[str, type[OceanBaseRetriever] | type[MySQLRetriever]] = {
    "sql": OceanBaseRetriever,
    "numpy": MySQLRetriever,
}
"""Retriever by ranking name: ``EngineDialect.ranking`` and ``MemorySettings.scoring`` use these names."""


def retriever_for(
    database: Database, settings: MemorySettings, embedding_model: str, profiles: ProfileCache | None = None
) -> OceanBaseRetriever | MySQLRetriever:
    """The retriever for a started ``database``: the dialect's own ranking, unless ``settings.scoring`` names one."""
    ranking = database.dialect.ranking if settings.scoring == "auto" else settings.scoring
    return RETRIEVERS[ranking](database, settings, embedding_model, profiles)


def neighbour_search(dialect: EngineDialect) -> NeighbourSearch:
    """How consolidation finds a new vector's stored near-duplicates on this engine (its own ranking's way)."""
    return functools.partial(RETRIEVERS[dialect.ranking].neighbours, dialect=dialect)
