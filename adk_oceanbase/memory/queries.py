"""SQL of the memory service: named builders returning statements plus their parameters; no I/O.

The centrepiece is :func:`hybrid_search`, ONE statement on OceanBase/seekdb:

1. ``ann``: the user's nearest memories by ``cosine_distance ... APPROXIMATE
   LIMIT n`` (the HNSW index; EXPLAIN shows ``VECTOR INDEX ... SCAN``);
2. ``ft``: the user's best full-text matches, ``MATCH(search_text) AGAINST(q)``
   on the ik full-text index (words for English, segmentation for CJK and
   Korean); ``search_text`` is the embedded layout, date + speaker + content,
   stemmed (``lexical``), and so is the query;
3. the union of both candidate lists is joined back to the table (a
   nested-loop hint: the optimizer sizes the ANN CTE at the whole table and
   otherwise hash-joins a full scan, 72 ms vs 16 ms at 100k rows) and every
   candidate gets ``w_sem*sim + w_rec*recency + w_freq*frequency +
   w_ft*ft/max(ft) + w_imp*importance + w_ctx*context`` computed in SQL,
   ordered, cut to k.  Recency is measured from the newest candidate of this
   search (window ``MAX(created_at) OVER ()``, capped at ``now``), see
   ``MemorySettings.recency_reference``; context is the best semantic +
   full-text relevance among the candidate's session neighbours (two
   one-sided ``RANGE`` window frames over ``turn_pos``), see
   :func:`_context_expr`.

APPROXIMATE cannot order by a composite score (the server rejects it), hence
the candidate subqueries.  Timestamps are bound from the client: seekdb's
``NOW(6)`` is unreliable.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Sequence

from sqlalchemy import bindparam, text
from sqlalchemy.sql.elements import TextClause

from .lexical import stem
from .settings import MemorySettings, ScoreWeights

__all__ = [
    "SearchFilters",
    "ROW_COLUMNS",
    "bump_access",
    "claim_rows_for_embedding",
    "delete_memory",
    "embedding_models_in_use",
    "existing_ids",
    "find_by_hashes",
    "fulltext_query",
    "hybrid_search",
    "insert_memory",
    "mark_embed_failed",
    "merge_into",
    "near_duplicate_candidates",
    "naive_utc",
    "nearest_neighbour",
    "session_event_log",
    "numpy_prefilter",
    "reset_other_models",
    "REBUILD_VECTOR_INDEX",
    "set_ef_search",
    "set_embedding",
    "supersede",
    "sweep_unembedded",
    "event_positions",
    "last_turn_pos",
    "user_authors",
    "user_rows_capped",
]

T = "agent_memories"
LN2 = 0.6931471805599453
# Rows near-duplicate consolidation may touch: facts (LLM-extracted, manual), not raw dialogue turns.
FACTS = "COALESCE(extractor, '') NOT LIKE 'turn:%'"

# Columns returned for every memory row, in this order (prefixed by the alias).
ROW_COLUMNS = (
    "memory_id",
    "content",
    "author",
    "session_id",
    "event_ids",
    "topics",
    "custom_metadata",
    "importance_score",
    "access_count",
    "last_accessed_at",
    "created_at",
    "extractor",
    "superseded_by",
    "turn_pos",
)


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


def _scope_where(alias: str, filters: SearchFilters | None, include_superseded: bool, params: dict[str, Any]) -> str:
    """The WHERE body shared by every candidate list: tenant, liveness, filters."""
    a = alias
    parts = [f"{a}.app_name = :app", f"{a}.user_id = :user", f"{a}.embed_status <> 'deleted'"]
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


def naive_utc(ts: datetime) -> datetime:
    """Naive UTC, the form every DATETIME(6) column holds."""
    if ts.tzinfo is not None:
        from datetime import timezone

        ts = ts.astimezone(timezone.utc).replace(tzinfo=None)
    return ts


def hybrid_search(
    *,
    app_name: str,
    user_id: str,
    query_vector: str | None,
    query_text: str,
    embedding_model: str,
    now: datetime,
    top_k: int,
    weights: ScoreWeights,
    settings: MemorySettings,
    filters: SearchFilters | None = None,
    min_score: float | None = None,
    fulltext_overfetch: int | None = None,
) -> tuple[TextClause, dict[str, Any]]:
    """The one-statement hybrid search (OceanBase/seekdb). Returns ``(statement, params)``.

    Output columns: :data:`ROW_COLUMNS`, then ``sem, rec, freq, ft, imp, ctx, score, ft_n``
    (``ft_n``: how many full-text candidates there were).  ``query_vector`` is
    the dialect-encoded query embedding; ``None`` runs the full-text half
    alone (e.g. the embedder is down).

    ``fulltext_overfetch=M`` takes the full-text candidates from the table's
    best ``M`` matches, then keeps the user's: for a user who owns most of the
    table that avoids reading every one of their matching rows (100k memories
    in one user: ~370 ms -> ~40 ms measured).  Exact whenever at least
    ``candidate_pool`` of the user's rows are among those ``M`` (they are then
    the user's best); the caller checks ``ft_n`` and re-runs without it otherwise.
    """
    params: dict[str, Any] = {
        "app": app_name,
        "user": user_id,
        "qtext": query_text,
        "model": embedding_model,
        "now": now,
        "pool": int(settings.candidate_pool),
        "k": int(top_k),
        "half_life": float(settings.recency_half_life_s),
        "freq_norm": float(settings.frequency_norm),
        "w_sem": float(weights.semantic),
        "w_rec": float(weights.recency),
        "w_freq": float(weights.frequency),
        "w_ft": float(weights.fulltext),
        "w_imp": float(weights.importance),
        "min_score": -1e9 if min_score is None else float(min_score),
    }
    ctes = []
    branches = []
    if query_vector is not None:
        params["qv"] = query_vector
        where = _scope_where("a", filters, settings.include_superseded, params)
        # APPROXIMATE takes nothing but the distance; the exact scan breaks ties by id
        # (identical texts have identical vectors) like the numpy path does.
        order = " APPROXIMATE" if settings.vector_search == "ann" else ", a.memory_id"
        ctes.append(
            f"ann AS (SELECT a.memory_id FROM {T} a WHERE {where} AND a.embedding_model = :model "
            f"ORDER BY cosine_distance(a.embedding, :qv){order} LIMIT :pool)"
        )
        branches.append("SELECT memory_id FROM ann")
        has_vec = "(m.embedding IS NOT NULL AND m.embedding_model = :model)"
        sem_raw = "CASE WHEN m.embedding IS NULL OR m.embedding_model <> :model THEN 0 ELSE 1 - cosine_distance(m.embedding, :qv) END"
    else:
        has_vec, sem_raw = "0", "0"
    has_text = bool(query_text.strip())
    if has_text:
        where = _scope_where("f", filters, settings.include_superseded, params)
        if fulltext_overfetch:
            params["over"] = int(fulltext_overfetch)
            ctes.append(
                f"ft AS (SELECT f.memory_id, g.fts FROM (SELECT x.memory_id, MATCH(x.search_text) AGAINST(:qtext) AS fts "
                f"FROM {T} x WHERE MATCH(x.search_text) AGAINST(:qtext) ORDER BY fts DESC LIMIT :over) g "
                f"JOIN {T} f ON f.memory_id = g.memory_id WHERE {where} ORDER BY g.fts DESC, f.memory_id LIMIT :pool)"
            )
        else:
            ctes.append(
                f"ft AS (SELECT f.memory_id, MATCH(f.search_text) AGAINST(:qtext) AS fts FROM {T} f "
                f"WHERE {where} AND MATCH(f.search_text) AGAINST(:qtext) ORDER BY fts DESC, f.memory_id LIMIT :pool)"
            )
        branches.append("SELECT memory_id FROM ft")
        ft_join, in_ft, fts = "LEFT JOIN ft ON ft.memory_id = c.memory_id", "(ft.memory_id IS NOT NULL)", "COALESCE(ft.fts, 0)"
    else:
        ft_join, in_ft, fts = "", "0", "0"
    if not branches:
        raise ValueError("hybrid_search needs a query vector or a query text")
    # Recency reference: the newest candidate (capped at now) or now itself.
    ref = "LEAST(MAX(r.created_at) OVER (), :now)" if settings.recency_reference == "newest" else ":now"
    sem, ft = _fusion_exprs(settings, params)
    ctes.append("cand AS (" + " UNION ".join(branches) + ")")
    cols = ", ".join(f"m.{c}" for c in ROW_COLUMNS)
    r_cols = ", ".join(f"r.{c}" for c in ROW_COLUMNS)
    out_cols = ", ".join(f"s.{c}" for c in ROW_COLUMNS)
    params["w_ctx"] = float(weights.context)
    ctx = _context_expr(settings.context_window) if weights.context else "0"
    base = "(:w_sem * s.sem + :w_rec * s.rec + :w_freq * s.freq + :w_ft * s.ft + :w_imp * s.imp + :w_ctx * s.ctx)"
    sql = f"""WITH {', '.join(ctes)}
SELECT {out_cols}, s.sem, s.rec, s.freq, s.ft, s.imp, s.ctx, {base} AS score, s.ft_n
FROM (
  SELECT q.*, {ctx} AS ctx
  FROM (
    SELECT {r_cols},
      {sem} AS sem,
      EXP(-{LN2} * GREATEST(TIMESTAMPDIFF(MICROSECOND, r.created_at, {ref}), 0) / 1000000.0 / :half_life) AS rec,
      LEAST(LN(1 + r.access_count) / :freq_norm, 1) AS freq,
      {ft} AS ft,
      r.importance_score AS imp,
      SUM(r.in_ft) OVER () AS ft_n
    FROM (
      SELECT /*+ LEADING(c m) USE_NL(m) */ {cols}, {sem_raw} AS sem_raw, {has_vec} AS has_vec, {fts} AS fts, {in_ft} AS in_ft
      FROM cand c JOIN {T} m ON m.memory_id = c.memory_id {ft_join}
    ) r
  ) q
) s
WHERE {base} >= :min_score
ORDER BY score DESC, s.created_at DESC, s.memory_id
LIMIT :k"""
    return text(sql), params


def _context_expr(window: int) -> str:
    """The context signal of candidate ``q``: the best relevance among its session neighbours.

    Neighbours are candidates of the same session within ``window`` turn
    positions on either side (``turn_pos``, the event's place in the session);
    relevance is the weighted semantic + full-text part of their score.  A
    turn next to a strong match is often the other half of it (question /
    answer), which neither signal sees on its own.  Two one-sided RANGE frames
    leave the row itself out.  Rows without a position get 0.
    """
    w = int(window)
    if w < 1:
        return "0"
    rel = "(:w_sem * q.sem + :w_ft * q.ft)"
    part = "PARTITION BY q.session_id ORDER BY q.turn_pos"
    return (
        "CASE WHEN q.turn_pos IS NULL OR q.session_id IS NULL THEN 0 ELSE GREATEST("
        f"COALESCE(MAX({rel}) OVER ({part} RANGE BETWEEN {w} PRECEDING AND 1 PRECEDING), 0), "
        f"COALESCE(MAX({rel}) OVER ({part} RANGE BETWEEN 1 FOLLOWING AND {w} FOLLOWING), 0), 0) END"
    )


# English function words dropped from the full-text query (not from the index).  OceanBase's
# BM25 gives every matched term a positive weight (rank-bm25 floors terms in more than half
# the documents to ~0), so "when did ... the ... to" pulled short, unrelated turns up.
STOPWORDS = frozenset(
    "a an the and or but if of at by for with about against between into through during before after above "
    "below to from up down in out on off over under again further then once here there when where why how "
    "all any both each few more most other some such no nor not only own same so than too very can will just "
    "should now i me my myself we our ours you your yours he him his she her hers it its they them their "
    "theirs what which who whom this that these those am is are was were be been being have has had having "
    "do does did doing would could might must shall may s t d ll m o re ve y".split()
    # ADK's author of every user turn is "user", and search_text carries the author: in
    # "does the user have pets?" the word matched every user row and max-normalisation
    # made the shortest one the full-text winner.
    + ["user"]
)
_QUERY_WORDS = re.compile(r"[^\W_]+", re.UNICODE)


def fulltext_query(query: str, *, drop_stopwords: bool = True, drop_terms: frozenset[str] = frozenset()) -> str:
    """The words of ``query`` sent to ``MATCH ... AGAINST``: stemmed like ``search_text``, stopwords removed.

    ``drop_terms`` are stems left out as well (the user's author names, see
    ``MemorySettings.fulltext_drop_authors``).  Keeps every word when nothing
    else is left; CJK and other scripts pass through (neither listed nor stemmed).
    """
    words = [w.lower() for w in _QUERY_WORDS.findall(query)]
    kept = [w for w in words if w not in STOPWORDS] if drop_stopwords else words
    stems = [stem(w) for w in kept]
    useful = [t for t in stems if t not in drop_terms]
    return " ".join(useful or stems or [stem(w) for w in words])


def user_rows_capped(app_name: str, user_id: str, cap: int) -> tuple[TextClause, dict[str, Any]]:
    """How many memories the user has, counting no further than ``cap`` (an index range scan of at most ``cap``)."""
    stmt = text(f"SELECT COUNT(*) FROM (SELECT 1 FROM {T} WHERE app_name = :app AND user_id = :user LIMIT :cap) t")
    return stmt, {"app": app_name, "user": user_id, "cap": int(cap)}


def user_authors(app_name: str, user_id: str) -> tuple[TextClause, dict[str, Any]]:
    """The distinct authors of a user's memories (bounded: a user has a handful)."""
    stmt = text(
        f"SELECT DISTINCT author FROM {T} WHERE app_name = :app AND user_id = :user AND author IS NOT NULL LIMIT 1000"
    )
    return stmt, {"app": app_name, "user": user_id}


def _fusion_exprs(settings: MemorySettings, params: dict[str, Any]) -> tuple[str, str]:
    """The semantic and full-text signals over the candidate rows ``r`` (``settings.fusion``).

    ``linear``: raw cosine and ``fts / max(fts)``; ``minmax``: cosine min-max
    scaled over the candidates (1 for the best, 0 for the worst), ``fts /
    max(fts)``; ``rrf``: ``(k+1) / (k + rank)`` per list (1 for each list's
    best), ranks by score then memory id.  ``scoring.rank_rows`` mirrors these.
    """
    if settings.fusion == "linear":
        return "r.sem_raw", "CASE WHEN r.in_ft THEN COALESCE(r.fts / NULLIF(MAX(r.fts) OVER (), 0), 0) ELSE 0 END"
    if settings.fusion == "minmax":
        lo = "MIN(CASE WHEN r.has_vec THEN r.sem_raw END) OVER ()"
        hi = "MAX(CASE WHEN r.has_vec THEN r.sem_raw END) OVER ()"
        sem = f"CASE WHEN r.has_vec THEN COALESCE((r.sem_raw - {lo}) / NULLIF({hi} - {lo}, 0), 1) ELSE 0 END"
        return sem, "CASE WHEN r.in_ft THEN COALESCE(r.fts / NULLIF(MAX(r.fts) OVER (), 0), 0) ELSE 0 END"
    if settings.fusion == "rrf":
        params["rrf_k"] = float(settings.rrf_k)
        sem = ("CASE WHEN r.has_vec THEN (:rrf_k + 1) / (:rrf_k + ROW_NUMBER() OVER "
               "(ORDER BY r.has_vec DESC, r.sem_raw DESC, r.memory_id)) ELSE 0 END")
        ft = ("CASE WHEN r.in_ft THEN (:rrf_k + 1) / (:rrf_k + ROW_NUMBER() OVER "
              "(ORDER BY r.in_ft DESC, r.fts DESC, r.memory_id)) ELSE 0 END")
        return sem, ft
    raise ValueError(f"unknown fusion {settings.fusion!r}; choose linear, minmax or rrf")


def numpy_prefilter(
    *,
    app_name: str,
    user_id: str,
    query_text: str,
    settings: MemorySettings,
    filters: SearchFilters | None = None,
) -> tuple[TextClause, dict[str, Any]]:
    """MySQL path: the user's newest rows with embedding and full-text score, scored later in numpy.

    Output columns: :data:`ROW_COLUMNS`, ``embedding``, ``embedding_model``, ``fts``.
    """
    params: dict[str, Any] = {"app": app_name, "user": user_id, "qtext": query_text, "lim": settings.numpy_scan_limit}
    where = _scope_where("m", filters, settings.include_superseded, params)
    fts = "MATCH(m.search_text) AGAINST(:qtext)" if query_text.strip() else "0"
    cols = ", ".join(f"m.{c}" for c in ROW_COLUMNS)
    sql = (
        f"SELECT {cols}, m.embedding, m.embedding_model, {fts} AS fts FROM {T} m "
        f"WHERE {where} ORDER BY m.created_at DESC LIMIT :lim"
    )
    return text(sql), params


def bump_access(memory_ids: Sequence[str], now: datetime) -> tuple[TextClause, dict[str, Any]]:
    """ONE statement bumping ``access_count``/``last_accessed_at`` of every returned row."""
    stmt = text(
        f"UPDATE {T} SET access_count = access_count + 1, last_accessed_at = :now WHERE memory_id IN :ids"
    ).bindparams(bindparam("ids", expanding=True))
    return stmt, {"now": now, "ids": list(memory_ids)}


def insert_memory() -> TextClause:
    """Inserts one memory row (executemany-friendly); embedding starts NULL, status ``pending``.

    ``search_text`` (the full-text source) is ``extraction.search_text`` of the row.
    """
    return text(
        f"INSERT INTO {T} (memory_id, app_name, user_id, content, search_text, content_hash, author, session_id, "
        "event_ids, topics, custom_metadata, importance_score, access_count, created_at, updated_at, "
        "embed_status, embed_attempts, extractor, turn_pos) VALUES (:memory_id, :app_name, :user_id, :content, "
        ":search_text, :content_hash, :author, :session_id, :event_ids, :topics, :custom_metadata, :importance_score, 0, "
        ":created_at, :updated_at, 'pending', 0, :extractor, :turn_pos)"
    )


def event_positions(app_name: str, user_id: str, session_id: str, event_ids: Sequence[str]) -> tuple[TextClause, dict[str, Any]]:
    """``(event_id, seq)`` of these events in the stored session log (a unique-key seek each)."""
    stmt = text(
        "SELECT event_id, seq FROM session_events WHERE app_name = :app AND user_id = :user "
        "AND session_id = :sid AND event_id IN :ids"
    ).bindparams(bindparam("ids", expanding=True))
    return stmt, {"app": app_name, "user": user_id, "sid": session_id, "ids": list(event_ids)}


def last_turn_pos(app_name: str, user_id: str, session_id: str) -> tuple[TextClause, dict[str, Any]]:
    """The highest ``turn_pos`` stored for a session (NULL when none): where new turns continue."""
    stmt = text(f"SELECT MAX(turn_pos) FROM {T} WHERE app_name = :app AND user_id = :user AND session_id = :sid")
    return stmt, {"app": app_name, "user": user_id, "sid": session_id}


def existing_ids(memory_ids: Sequence[str]) -> tuple[TextClause, dict[str, Any]]:
    """Which of these ids are stored already (tombstones included): the idempotency check."""
    stmt = text(f"SELECT memory_id FROM {T} WHERE memory_id IN :ids").bindparams(bindparam("ids", expanding=True))
    return stmt, {"ids": list(memory_ids)}


def find_by_hashes(app_name: str, user_id: str, hashes: Sequence[str]) -> tuple[TextClause, dict[str, Any]]:
    """Live or deleted rows with one of these content hashes (exact duplicates), locked for the merge."""
    stmt = text(
        f"SELECT memory_id, content_hash, event_ids, topics, importance_score, embed_status FROM {T} "
        "WHERE app_name = :app AND user_id = :user AND content_hash IN :hashes AND superseded_by IS NULL "
        "ORDER BY created_at FOR UPDATE"
    ).bindparams(bindparam("hashes", expanding=True))
    return stmt, {"app": app_name, "user": user_id, "hashes": list(hashes)}


def merge_into() -> TextClause:
    """Writes merged provenance (event ids, topics, importance) onto the surviving row."""
    return text(
        f"UPDATE {T} SET event_ids = :event_ids, topics = :topics, importance_score = :importance_score, "
        "updated_at = :now WHERE memory_id = :memory_id"
    )


def supersede(app_name: str, user_id: str, old_ids: Sequence[str], new_id: str, now: datetime):
    """Marks older memories as superseded by ``new_id`` (they stay stored, out of default search)."""
    stmt = text(
        f"UPDATE {T} SET superseded_by = :new_id, updated_at = :now WHERE app_name = :app AND user_id = :user "
        "AND memory_id IN :ids AND memory_id <> :new_id AND superseded_by IS NULL"
    ).bindparams(bindparam("ids", expanding=True))
    return stmt, {"new_id": new_id, "now": now, "app": app_name, "user": user_id, "ids": list(old_ids)}


def delete_memory(app_name: str, user_id: str, memory_id: str, now: datetime):
    """Turns a memory into a tombstone: content and vector erased, id and hash kept.

    The id stays so that re-adding the same session does not resurrect what
    the user deleted (ADK's in-memory service behaves the same way).
    """
    stmt = text(
        f"UPDATE {T} SET content = '', search_text = NULL, embedding = NULL, topics = NULL, custom_metadata = NULL, "
        "embed_status = 'deleted', updated_at = :now WHERE app_name = :app AND user_id = :user "
        "AND memory_id = :id AND embed_status <> 'deleted'"
    )
    return stmt, {"now": now, "app": app_name, "user": user_id, "id": memory_id}


def claim_rows_for_embedding(memory_ids: Sequence[str]) -> tuple[TextClause, dict[str, Any]]:
    """Rows of this batch that still need a vector, with what the embedded text is built from."""
    stmt = text(
        f"SELECT memory_id, app_name, user_id, content, author, created_at, event_ids, topics, importance_score, "
        f"extractor FROM {T} WHERE memory_id IN :ids AND embed_status IN ('pending', 'failed')"
    ).bindparams(bindparam("ids", expanding=True))
    return stmt, {"ids": list(memory_ids)}


def sweep_unembedded(limit: int, *, include_failed: bool) -> tuple[TextClause, dict[str, Any]]:
    """Ids of rows left ``pending`` (crash, full queue) and optionally ``failed`` (embedder outage), oldest first."""
    statuses = "('pending', 'failed')" if include_failed else "('pending')"
    stmt = text(f"SELECT memory_id FROM {T} WHERE embed_status IN {statuses} ORDER BY updated_at LIMIT :lim")
    return stmt, {"lim": limit}


def set_embedding() -> TextClause:
    """Stores one row's vector and flips it to ``ready`` in the same UPDATE: never half-made."""
    return text(
        f"UPDATE {T} SET embedding = :embedding, embedding_model = :model, embedding_dim = :dim, "
        "embed_status = 'ready', updated_at = :now WHERE memory_id = :memory_id "
        "AND embed_status IN ('pending', 'failed')"
    )


def mark_embed_failed(memory_ids: Sequence[str], now: datetime) -> tuple[TextClause, dict[str, Any]]:
    """Counts a failed attempt; status ``failed`` rows are retried by the sweep."""
    stmt = text(
        f"UPDATE {T} SET embed_status = 'failed', embed_attempts = embed_attempts + 1, updated_at = :now "
        "WHERE memory_id IN :ids AND embed_status IN ('pending', 'failed')"
    ).bindparams(bindparam("ids", expanding=True))
    return stmt, {"now": now, "ids": list(memory_ids)}


def nearest_neighbour(app_name: str, user_id: str, memory_id: str, vector: str, model: str):
    """OceanBase: the closest other live memories of the user (HNSW; once per newly embedded row)."""
    stmt = text(
        f"SELECT memory_id, content, embedding, created_at, event_ids, topics, importance_score FROM {T} "
        "WHERE app_name = :app AND user_id = :user AND memory_id <> :id AND embed_status = 'ready' "
        f"AND superseded_by IS NULL AND embedding_model = :model AND {FACTS} "
        "ORDER BY cosine_distance(embedding, :qv) APPROXIMATE LIMIT 3"
    )
    return stmt, {"qv": vector, "app": app_name, "user": user_id, "id": memory_id, "model": model}


def near_duplicate_candidates(app_name: str, user_id: str, memory_id: str, model: str, limit: int):
    """MySQL: the user's other live vectors, compared in numpy."""
    stmt = text(
        f"SELECT memory_id, content, embedding, created_at, event_ids, topics, importance_score FROM {T} "
        "WHERE app_name = :app AND user_id = :user "
        "AND memory_id <> :id AND embed_status = 'ready' AND superseded_by IS NULL AND embedding_model = :model "
        f"AND {FACTS} ORDER BY created_at DESC LIMIT :lim"
    )
    return stmt, {"app": app_name, "user": user_id, "id": memory_id, "model": model, "lim": limit}


def embedding_models_in_use() -> TextClause:
    """Distinct (model, dim) pairs of embedded rows: refuse to mix models silently."""
    return text(
        f"SELECT embedding_model, embedding_dim, COUNT(*) FROM {T} WHERE embedding_model IS NOT NULL "
        "GROUP BY embedding_model, embedding_dim"
    )


def reset_other_models(model: str, dim: int, now: datetime) -> tuple[TextClause, dict[str, Any]]:
    """Clears vectors made by another model so the vectorizer re-embeds them (``service.reembed()``)."""
    stmt = text(
        f"UPDATE {T} SET embedding = NULL, embedding_model = NULL, embedding_dim = NULL, embed_status = 'pending', "
        "updated_at = :now WHERE embedding_model <> :m OR embedding_dim <> :d"
    )
    return stmt, {"now": now, "m": model, "d": dim}


REBUILD_VECTOR_INDEX = text(
    "CALL DBMS_VECTOR.REBUILD_INDEX('ix_memories_embedding', 'agent_memories', 'embedding', 0)"
)
"""Rebuilds the HNSW index in one pass (OceanBase/seekdb).

An index grown row by row searched ~30x slower at 100k rows than a rebuilt
one (benchmarks/_scale.py); the server rebuilds on its own only daily and
only past 20% new rows.  Took 85-122 s at 100k rows on 2 cores.
"""


def set_ef_search(ef: int) -> tuple[TextClause, dict[str, Any]]:
    """OceanBase: HNSW search breadth for this connection (server default 64; higher = better recall, slower)."""
    return text("SET ob_hnsw_ef_search = :n"), {"n": int(ef)}


def session_event_log(app_name: str, user_id: str, session_id: str) -> tuple[TextClause, dict[str, Any]]:
    """A stored session's FULL event log in ``seq`` order, compacted (archived) events included.

    ``add_session_to_memory`` reads this: a session loaded by the default
    ``get_session`` lacks the events compaction archived, yet those turns
    are exactly the old ones worth remembering.
    """
    stmt = text(
        "SELECT event_json FROM session_events WHERE app_name = :app AND user_id = :user AND session_id = :sid "
        "ORDER BY seq"
    )
    return stmt, {"app": app_name, "user": user_id, "sid": session_id}
