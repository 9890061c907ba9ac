"""The memory search seam: one typed request, one retriever interface, the planning both engines share.

Whoever searches memories -- :class:`~.service.OceanBaseMemoryService`, and
next a LangGraph store or an Agno database -- builds a :class:`SearchRequest`
and asks a :class:`Retriever`; it never asks which engine it is on.  The
engine dialect names where ranking happens (``EngineDialect.ranking``) and
:func:`.retrievers.retriever_for` hands out the matching implementation:

* ``OceanBaseRetriever`` (``"sql"``): the one-statement ranking of
  :mod:`.search_sql` over HNSW candidates and the user's BM25 postings
  (:mod:`.postings`), sent with its session variables in one round trip;
* ``MySQLRetriever`` (``"numpy"``): the SQL prefilter of :mod:`.search_sql`
  (newest rows plus the same BM25 candidates), ranked by :mod:`.scoring`.

Both return :class:`~.results.MemoryHit` objects decoded by the one row
decoder, :func:`.results.to_hit`.  Like ADK's ``MemorySearchBackend``, the
retriever only reads: validation, the query embedding and the access
bookkeeping stay with the caller.  Example, outside the memory service::

    from adk_oceanbase.memory import MemorySettings, ProfileCache, ScoreWeights, SearchRequest, retriever_for

    retriever = retriever_for(database, MemorySettings(), embedder.model_name, ProfileCache())  # a started Database
    hits = await retriever.search(SearchRequest(
        app_name="app", user_id="u1", query="where does Alice live?",
        query_vector=embedder.embed(["where does Alice live?"])[0],
        now=datetime(2025, 6, 1, 12), top_k=5, weights=ScoreWeights(),  # naive UTC
    ))

What both implementations share lives here: the per-user profile cache
(author names, a capped row count), and the plan drawn from it -- the
full-text query, exact scan or HNSW (``vector_search``), the postings-first
full-text form for big users (``fulltext_overfetch``).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Iterable, Mapping, Protocol, runtime_checkable

import numpy as np
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from .. import gateway
from ..engine import Database
from ..errors import ValidationError
from .lexical import fulltext_query, stem_text
from .results import MemoryHit
from .search_scope import SearchFilters, table_rows_capped, user_authors, user_rows_capped
from .settings import MemorySettings, ScoreWeights

__all__ = ["HitJoin", "ProfileCache", "Retriever", "SearchPlanner", "SearchRequest", "UserProfile"]


@dataclass(frozen=True)
class SearchRequest:
    """One memory search, as a retriever receives it (already validated by the caller).

    Attributes:
        app_name: the tenant's app.
        user_id: whose memories are searched; nothing else is ever read.
        query: the question as asked (the full-text query is drawn from it).
        query_vector: the question's embedding by ``embedding_model``; ``None``
            searches full-text only (the embedder is down or still loading).
        now: the moment the question is asked, naive UTC: caps the recency reference.
        top_k: how many hits at most.
        weights: the signal weights of the score.
        filters: restricts the candidates (every given field must hold).
        min_score: hits scoring below it are dropped.
        author_cue: whose words the question asks about (``asker.author_cue``).
    """

    app_name: str
    user_id: str
    query: str
    query_vector: np.ndarray | None
    now: datetime
    top_k: int
    weights: ScoreWeights
    filters: SearchFilters | None = None
    min_score: float | None = None
    author_cue: str | None = None

    def __post_init__(self) -> None:
        if self.now.tzinfo is not None:
            raise ValidationError("SearchRequest.now must be naive UTC (queries.naive_utc)")
        if self.top_k < 1:
            raise ValidationError(f"SearchRequest.top_k must be at least 1, got {self.top_k}")


@dataclass(frozen=True)
class HitJoin:
    """A caller's read of its search hits, run with the search (:meth:`Retriever.search_joined`).

    A store that keeps memories as the index of its own rows (the LangGraph
    Store's item fields) needs its rows for the hits, not the memories: as a
    second query that is one more round trip and statement after the search,
    and the winners' memory rows decoded for nothing.  With a ``HitJoin`` the
    SQL ranking ends in the caller's SELECT instead (one statement, one round
    trip); the numpy ranking runs it after its own search, over the hits as
    literal rows.  The ranking itself is untouched: the join only reads.

    Attributes:
        sql: a SELECT reading the relation ``hits`` (columns ``memory_id`` and
            ``score``: the ranked top k, in no order) joined to the caller's
            tables, with ``:name`` parameters.  Order the rows yourself.
        params: its parameters; names start with ``j_`` (the search's own never do).
    """

    sql: str
    params: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        bad = [name for name in self.params if not name.startswith("j_")]
        if bad:
            raise ValidationError(f"HitJoin parameter names must start with 'j_', got {sorted(bad)}")


@runtime_checkable
class Retriever(Protocol):
    """Ranks one user's memories for a request; one implementation per engine (:mod:`.retrievers`)."""

    async def search(self, request: SearchRequest) -> list[MemoryHit]:
        """The best ``request.top_k`` hits, best first; reads only."""
        ...

    async def search_joined(self, request: SearchRequest, join: HitJoin) -> list[tuple[Any, ...]]:
        """``join``'s rows over the best ``request.top_k`` hits (:class:`HitJoin`); reads only."""
        ...

    def learn_authors(self, app_name: str, user_id: str, authors: Iterable[str]) -> None:
        """Tells the cached profile about authors just written (``fulltext_drop_authors``)."""
        ...

    async def rebuild_index(self, conn: AsyncConnection) -> bool:
        """Rebuilds the engine's vector index on ``conn`` after a bulk load; ``False`` where there is none.

        ``conn`` is a maintenance connection (:mod:`adk_oceanbase.maintenance`): the caller commits.
        """
        ...


@dataclass(frozen=True)
class UserProfile:
    """What search needs to know about a user, cached per (app, user)."""

    at: float
    author_terms: frozenset[str]
    rows: int
    """The user's memory rows, counted up to ``exact_scan_rows`` (or ``fulltext_overfetch_rows``, the larger)."""
    table_rows: int | None = None
    """The memory table's rows (every tenant's), counted just past ``rows / ann_owner_share``: enough
    to tell whether the user owns that share (``SearchPlanner.approximate``); ``None`` where the plan
    does not depend on it (no ``ann_owner_share``, or the user's size alone decides)."""


class ProfileCache:
    """User profiles by (app, user), kept ``author_cache_s``; shared by a caller's retrievers (settings may change)."""

    MAX_USERS = 10_000
    """Past this many cached users the cache starts over (a bound, not an LRU: a profile is one cheap read)."""

    def __init__(self) -> None:
        self._profiles: dict[tuple[str, str], UserProfile] = {}

    def get(self, key: tuple[str, str], max_age_s: float) -> UserProfile | None:
        hit = self._profiles.get(key)
        return hit if hit is not None and time.monotonic() - hit.at < max_age_s else None

    def put(self, key: tuple[str, str], profile: UserProfile) -> None:
        if len(self._profiles) > self.MAX_USERS:
            self._profiles.clear()
        self._profiles[key] = profile

    def learn_authors(self, key: tuple[str, str], authors: Iterable[str]) -> None:
        hit = self._profiles.get(key)
        if hit is not None:
            new = name_terms(authors)
            if not new <= hit.author_terms:
                self._profiles[key] = dataclasses.replace(hit, author_terms=hit.author_terms | new)


class SearchPlanner:
    """The plan both retrievers share: profile, full-text query, exact or HNSW candidates, postings-first form."""

    def __init__(self, database: Database, settings: MemorySettings, embedding_model: str,
                 profiles: ProfileCache | None = None):
        self.database = database
        self.settings = settings
        self.embedding_model = embedding_model
        self.profiles = profiles if profiles is not None else ProfileCache()

    def learn_authors(self, app_name: str, user_id: str, authors: Iterable[str]) -> None:
        self.profiles.learn_authors((app_name, user_id), authors)

    async def profile(self, app_name: str, user_id: str) -> UserProfile:
        """The user's author-name stems and memory count (capped), cached ``author_cache_s``.

        Authors feed ``fulltext_drop_authors``; the count decides, for
        ``vector_search="auto"``, the exact vector scan (below ``exact_scan_rows``).
        """
        key = (app_name, user_id)
        hit = self.profiles.get(key, self.settings.author_cache_s)
        if hit is not None:
            return hit
        clock = time.monotonic()
        cap = max(self.settings.exact_scan_rows, self.settings.fulltext_overfetch_rows)

        async def load(conn: AsyncConnection) -> tuple[list[str], int, int | None]:
            stmt, params = user_authors(app_name, user_id)
            names = [r[0] for r in (await conn.execute(stmt, params)).all()]
            stmt, params = user_rows_capped(app_name, user_id, cap)
            rows = int((await conn.execute(stmt, params)).scalar() or 0)
            table = None
            if self._owner_share_decides(rows):
                stmt, params = table_rows_capped(int(rows / self.settings.ann_owner_share) + 1)
                table = int((await conn.execute(stmt, params)).scalar() or 0)
            return names, rows, table

        names, rows, table = await gateway.read(self.database, load)
        profile = UserProfile(clock, name_terms(names), rows, table)
        self.profiles.put(key, profile)
        return profile

    def fulltext_query(self, request: SearchRequest, profile: UserProfile) -> str:
        """The stemmed words the full-text half looks up; empty skips it.

        A zero full-text weight skips the BM25 candidates altogether, unless the relevance
        gate's lexical floor needs their coverage (``ft_cov``) or there is no query vector.
        """
        s = self.settings
        if not (request.weights.fulltext or s.relevance_min_lexical is not None or request.query_vector is None):
            return ""
        drop = profile.author_terms if s.fulltext_drop_authors else frozenset()
        return fulltext_query(request.query, drop_stopwords=s.fulltext_stopwords, drop_terms=drop)

    def overfetch(self, profile: UserProfile, filters: SearchFilters | None, hnsw: bool = True) -> int | None:
        """The postings-first full-text form's factor for big users without caller filters, else None.

        ``hnsw``: the statement takes its vector candidates from the HNSW index.  Next to an exact
        vector scan, or with no query vector, seekdb plans the postings-first form slowly or not at
        all (``MemorySettings.fulltext_overfetch_rows``); MariaDB (the numpy path) plans it well.
        """
        s = self.settings
        filtered = filters is not None and any(v for v in dataclasses.astuple(filters))
        if s.fulltext_overfetch is None or filtered or not hnsw or profile.rows < s.fulltext_overfetch_rows:
            return None
        return s.fulltext_overfetch

    def approximate(self, profile: UserProfile) -> bool:
        """Whether the vector candidates come from the HNSW index (else: exact scan of the user's rows).

        ``auto``: users of ``exact_scan_rows`` memories or more, and users of ``ann_owner_min_rows``
        or more who own ``ann_owner_share`` of the whole table (``MemorySettings.ann_owner_share``).
        """
        s = self.settings
        if s.vector_search != "auto":
            return s.vector_search == "ann"
        return profile.rows >= s.exact_scan_rows or self.owns_table(profile)

    def owns_table(self, profile: UserProfile) -> bool:
        """Whether a user below ``exact_scan_rows`` owns ``ann_owner_share`` of the table (HNSW, post-filtered)."""
        s = self.settings
        return (s.vector_search == "auto" and profile.table_rows is not None and s.ann_owner_share is not None
                and profile.rows < s.exact_scan_rows and profile.rows >= s.ann_owner_share * profile.table_rows)

    def _owner_share_decides(self, rows: int) -> bool:
        """Whether the table's size is needed to plan this user's vector search (:meth:`approximate`)."""
        s = self.settings
        return s.ann_owner_share is not None and s.ann_owner_min_rows <= rows < s.exact_scan_rows

    def ef_search(self, approximate: bool, top_k: int) -> int | None:
        """``ob_hnsw_ef_search`` for an HNSW search (``None`` for the exact scan).

        ef below the candidate LIMIT makes the filtered HNSW scan repeat itself:
        88 ms vs 12 ms at pool 200 on seekdb (benchmarks/_scale.py).
        """
        if not approximate:
            return None
        return max(self.settings.ef_search or 64, self.settings.vector_pool(True, top_k))

    async def rebuild_index(self, conn: AsyncConnection) -> bool:
        return False

    async def search(self, request: SearchRequest) -> list[MemoryHit]:  # pragma: no cover - each retriever has one
        raise NotImplementedError

    async def search_joined(self, request: SearchRequest, join: HitJoin) -> list[tuple[Any, ...]]:
        """The search, then ``join`` over its hits as literal rows (a second round trip; the SQL ranking overrides it)."""
        hits = await self.search(request)
        if not hits:
            return []
        params: dict[str, Any] = dict(join.params)
        rows = []
        for i, hit in enumerate(hits):
            params[f"h_id{i}"], params[f"h_score{i}"] = hit.memory_id, float(hit.score)
            rows.append(f"SELECT :h_id{i} AS memory_id, :h_score{i} AS score")
        stmt = text(f"WITH hits AS ({' UNION ALL '.join(rows)})\n{join.sql}")
        ((_, found),) = await gateway.read_batch(self.database, [(stmt, params)])
        return [tuple(r) for r in found]


def name_terms(names: Any) -> frozenset[str]:
    """Match keys of single-word author names ("Caroline", "assistant").

    Multi-word names ("travel_agent", "Dr Smith") are left alone: dropping
    "travel" from every query of a travel agent would cost more than it saves.
    """
    out = set()
    for name in names:
        if not name:
            continue
        words = stem_text(name).split()
        if len(words) == 1:
            out.add(words[0])
    return frozenset(out)
