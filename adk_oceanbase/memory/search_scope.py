"""Which rows a memory search may see, and the MySQL path's prefilter; named builders, no I/O.

Every candidate list of both rankings (``search_sql.hybrid_search``'s HNSW
and BM25 lists, :func:`numpy_prefilter`'s newest rows and BM25 list) is cut
by the same WHERE (:func:`scope_where`): the tenant, live rows, the
poisoning guards, the caller's :class:`SearchFilters`.  The two reads of a
user's profile (``retrieval.SearchPlanner.profile``) are here too.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Sequence

from sqlalchemy import text
from sqlalchemy.sql.elements import TextClause
from sqlalchemy.sql.selectable import TextualSelect
from sqlalchemy.types import TypeEngine

from .lexical import query_terms
from .postings import bm25_ctes
from .queries import ROW_COLUMNS, T, naive_utc
from .settings import MemorySettings

__all__ = ["SearchFilters", "as_float32", "numpy_prefilter", "scope_where", "table_rows_capped", "user_authors", "user_rows_capped"]


@dataclass(frozen=True)
class SearchFilters:
    """Restricts a search; every given field must hold (AND).

    Attributes:
        topics: keep memories tagged with at least one of these topics.
        author: keep memories by this author (``"user"``, an agent name).
        session_id: keep memories that came from this session.
        since: keep memories created at or after this UTC time.
        until: keep memories created before this UTC time.
    """

    topics: Sequence[str] | None = None
    author: str | None = None
    session_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None


def scope_where(
    alias: str, filters: SearchFilters | None, include_superseded: bool, params: dict[str, Any], min_confidence: float
) -> str:
    """The WHERE body shared by every candidate list: tenant, liveness, poisoning guards, filters."""
    a = alias
    parts = [f"{a}.app_name = :app", f"{a}.user_id = :user", f"{a}.embed_status <> 'deleted'"]
    # Poisoning guards (migration 0011): never a tainted or doubtful memory.
    parts.append(f"{a}.tainted = 0 AND {a}.confidence >= :min_conf")
    params["min_conf"] = as_float32(min_confidence)
    if not include_superseded:
        parts.append(f"{a}.superseded_by IS NULL")
    if filters is not None:
        if filters.author is not None:
            parts.append(f"{a}.author = :f_author")
            params["f_author"] = filters.author
        if filters.session_id is not None:
            parts.append(f"{a}.session_id = :f_session")
            params["f_session"] = filters.session_id
        if filters.since is not None:
            parts.append(f"{a}.created_at >= :f_since")
            params["f_since"] = naive_utc(filters.since)
        if filters.until is not None:
            parts.append(f"{a}.created_at < :f_until")
            params["f_until"] = naive_utc(filters.until)
        if filters.topics:
            ors = []
            for i, topic in enumerate(filters.topics):
                params[f"f_topic{i}"] = json.dumps(topic)
                ors.append(f"JSON_CONTAINS({a}.topics, :f_topic{i})")
            parts.append("(" + " OR ".join(ors) + ")")
    return " AND ".join(parts)


def as_float32(value: float) -> float:
    """``value`` rounded to single precision like the FLOAT ``confidence`` column (0.7 is stored as 0.69999999)."""
    return struct.unpack("<f", struct.pack("<f", float(value)))[0]


def user_rows_capped(app_name: str, user_id: str, cap: int) -> tuple[TextClause, dict[str, Any]]:
    """How many memories the user has, counting no further than ``cap`` (an index range scan of at most ``cap``)."""
    stmt = text(f"SELECT COUNT(*) FROM (SELECT 1 FROM {T} WHERE app_name = :app AND user_id = :user LIMIT :cap) t")
    return stmt, {"app": app_name, "user": user_id, "cap": int(cap)}


def table_rows_capped(cap: int) -> tuple[TextClause, dict[str, Any]]:
    """How many rows the memory table holds (every tenant's), counting no further than ``cap``."""
    return text(f"SELECT COUNT(*) FROM (SELECT 1 FROM {T} LIMIT :cap) t"), {"cap": int(cap)}


def user_authors(app_name: str, user_id: str) -> tuple[TextClause, dict[str, Any]]:
    """The distinct authors of a user's memories (bounded: a user has a handful)."""
    stmt = text(
        f"SELECT DISTINCT author FROM {T} WHERE app_name = :app AND user_id = :user AND author IS NOT NULL LIMIT 1000"
    )
    return stmt, {"app": app_name, "user": user_id}


def numpy_prefilter(
    *,
    app_name: str,
    user_id: str,
    query_text: str,
    settings: MemorySettings,
    filters: SearchFilters | None = None,
    fulltext_overfetch: int | None = None,
    vector_type: TypeEngine,
) -> tuple[TextualSelect, dict[str, Any]]:
    """MySQL path: the user's newest rows plus their best BM25 matches, scored later in numpy.

    Output columns: :data:`ROW_COLUMNS`, ``embedding`` (read through ``vector_type``,
    the engine's: a numpy array or ``None``), ``embedding_model``,
    ``fts`` and ``ft_cov`` (0 for rows outside the BM25 candidates; ``ft_cov``
    is also the relevance gate's lexical evidence).  The full-text candidates are exactly :func:`hybrid_search`'s
    (the same ``ft`` CTE), so both paths see the same full-text list; the
    semantic candidates come from the newest ``numpy_scan_limit`` rows.
    """
    params: dict[str, Any] = {"app": app_name, "user": user_id, "lim": settings.numpy_scan_limit}
    where = scope_where("m", filters, settings.include_superseded, params, settings.min_confidence)
    cols = ", ".join(f"m.{c}" for c in ROW_COLUMNS)
    newest = f"SELECT m.memory_id FROM {T} m WHERE {where} ORDER BY m.created_at DESC LIMIT :lim"
    terms = query_terms(query_text.split())
    if not terms:
        sql = f"SELECT {cols}, m.embedding, m.embedding_model, 0 AS fts, 0 AS ft_cov FROM {T} m " \
              f"WHERE {where} ORDER BY m.created_at DESC LIMIT :lim"
        return text(sql).columns(embedding=vector_type), params
    ft_where = scope_where("f", filters, settings.include_superseded, params, settings.min_confidence)
    ctes = bm25_ctes(terms, ft_where, params, settings.candidate_pool, overfetch=fulltext_overfetch)
    sql = (
        f"WITH {', '.join(ctes)} SELECT {cols}, m.embedding, m.embedding_model, COALESCE(ft.fts, 0) AS fts, "
        f"COALESCE(ft.cov, 0) AS ft_cov FROM (SELECT n.memory_id FROM ({newest}) n UNION SELECT memory_id FROM ft) c "
        f"JOIN {T} m ON m.app_name = :app AND m.user_id = :user AND m.memory_id = c.memory_id "
        "LEFT JOIN ft ON ft.memory_id = c.memory_id"
    )
    return text(sql).columns(embedding=vector_type), params
