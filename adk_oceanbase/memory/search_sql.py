"""SQL of memory search: the one-statement hybrid ranking and its parts; named builders, no I/O.

The centrepiece is :func:`hybrid_search`, ONE statement on OceanBase/seekdb:

1. ``ann``: the user's nearest memories by ``cosine_distance ... APPROXIMATE
   LIMIT n`` (the HNSW index; EXPLAIN shows ``VECTOR INDEX ... SCAN``; ``n`` is
   ``MemorySettings.ann_pool`` there, ``candidate_pool`` for the exact scan);
2. ``ft``: the user's best full-text matches, BM25 over the user's own
   postings in ``memory_terms`` (``postings.bm25_ctes``: one primary-key
   range per query term, statistics of this user only); the terms are those
   of ``search_text``, the embedded layout date + speaker + content, stemmed
   (``lexical``; CJK as character bigrams), and so is the query; for big
   users the statistics (N, mean length, each term's weight) are set into
   session variables by a statement just before, in the same round trip and
   snapshot (:func:`set_fulltext_statistics`, :func:`snapshot_reads`);
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
   :func:`_context_exprs`; ``w_ver*version`` lets a fact borrow the full-text
   match of a version of itself (a newer "Alice moved to Denver" shares in the
   old "Alice lives in Lisbon"'s match on "live", and recency then puts it
   first), pairs compared in SQL, see :func:`_version_ctes`.  The
   per-candidate signals are one CTE (``sig``), which the server materialises
   once (EXPLAIN: ``TEMP TABLE INSERT sig``) although two parts read it; it
   carries only the columns the ranking reads, and the k winners' other
   columns (content, JSON, metadata) are fetched at the end;
4. the relevance gate (``relevance.py``, off by default): only candidates with
   semantic or lexical evidence (or next to / near one that has it) are
   returned, and recency, frequency and importance may be limited to those
   within a margin of the best relevance.

APPROXIMATE cannot order by a composite score (the server rejects it), hence
the candidate subqueries.  Timestamps are bound from the client: seekdb's
``NOW(6)`` is unreliable.

Which rows a search may see (:class:`SearchFilters`, the shared WHERE) and the
MySQL prefilter live in :mod:`.search_scope`, the query's words
(:func:`fulltext_query`) in :mod:`.lexical`; both are re-exported here.
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.sql.elements import TextClause

from . import relevance as rv
from .asker import AGENT, USER
from .lexical import STOPWORDS, fulltext_query, query_terms
from .postings import bm25_ctes, bm25_statistics, coverage_of
from .queries import FACT_TEST, ROW_COLUMNS, T
from .search_scope import SearchFilters, numpy_prefilter, scope_where, user_authors, user_rows_capped
from .settings import MemorySettings, ScoreWeights

LN2 = 0.6931471805599453
_statement = functools.lru_cache(maxsize=512)(text)
"""``text()`` by its SQL: the statement's text repeats (its shape depends on the settings and the
plan, never on the query's values), and SQLAlchemy's parse of its ~100 bind parameters was ~15% of
a store search's client CPU at 30k items (cProfile, process time).  A ``TextClause`` is immutable
(``bindparams()`` copies), so one may be shared."""
VECTOR_INDEX = "ix_memories_embedding"
"""The HNSW index on ``agent_memories.embedding`` (schema.ENGINE_INDEXES), named by ``ann_post_filter``'s hint."""

__all__ = [
    "STOPWORDS",
    "QV",
    "SIGNAL_COLUMNS",
    "SearchFilters",
    "bind_query_vector",
    "fulltext_query",
    "hybrid_search",
    "numpy_prefilter",
    "set_fulltext_statistics",
    "snapshot_reads",
    "user_authors",
    "user_rows_capped",
]


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
    approximate: bool | None = None,
    fulltext_overfetch: int | None = None,
    fulltext_statistics: str = "inline",
    author_cue: str | None = None,
    ann_post_filter: bool = False,
    hits_select: str | None = None,
) -> tuple[TextClause, dict[str, Any]]:
    """The one-statement hybrid search (OceanBase/seekdb). Returns ``(statement, params)``.

    Output columns: :data:`ROW_COLUMNS`, then :data:`SIGNAL_COLUMNS`
    (``ft_n``: how many full-text candidates there were; ``ft_cov``: the share
    of the query's idf mass the memory matches, 0..1, see ``postings.bm25_ctes``;
    also the relevance gate's lexical evidence, see ``relevance.py``).
    ``query_text`` is :func:`fulltext_query`'s output (stemmed words); ``query_vector``
    the dialect-encoded query embedding, which the statement reads from the
    session variable :data:`QV`: run :func:`bind_query_vector` with it first,
    on the same connection.  ``None`` runs the full-text half
    alone (e.g. the embedder is down).  ``fulltext_overfetch`` picks the
    postings-first full-text candidates (``postings.bm25_ctes``; the service
    passes it for big users without filters); with it, ``fulltext_statistics=
    "variables"`` reads the BM25 statistics from the session variables that
    :func:`set_fulltext_statistics` sets (run it first, on the same connection, in
    the same transaction; :func:`snapshot_reads` before both).  ``author_cue``:
    whose words the question asks about (``asker.author_cue``; the ``auth`` signal).
    ``ann_post_filter`` (with ``approximate``): name the HNSW index in a hint, which makes seekdb
    walk the graph and filter as it goes (``POST-ITERATIVE-FILTER``) rather than pick its
    ``PRE-FILTER`` scan, a brute-force pass over every row in the filter; for a user who owns
    most of the table (``MemorySettings.ann_owner_share``).
    ``hits_select``: a caller's SELECT over the relation ``hits`` (``memory_id``, ``score``: the
    ranked top k, no order) that replaces the output above, so that what the caller reads about its
    hits comes in the search's own round trip (:class:`.retrieval.HitJoin`); its ``:name``
    parameters are bound by the caller.
    """
    params: dict[str, Any] = {
        "app": app_name,
        "user": user_id,
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
    sources = []  # the candidate lists, united in ``cand``
    if query_vector is not None:
        # The vector is read from a session variable set just before (bind_query_vector): as a
        # bound literal it made every search a new statement text, and seekdb re-optimised this
        # statement for each query vector (250-750 ms with the exact scan, ~10 ms from the plan cache).
        params.pop("qv", None)
        where = scope_where("a", filters, settings.include_superseded, params, settings.min_confidence)
        # APPROXIMATE takes nothing but the distance; the exact scan breaks ties by id
        # (identical texts have identical vectors) like the numpy path does.
        if approximate is None:
            approximate = settings.vector_search == "ann"
        order = " APPROXIMATE" if approximate else ", a.memory_id"
        params["apool"] = int(settings.vector_pool(approximate, int(top_k)))
        # seekdb 1.4 plans a table of 10k rows owned by one user as PRE-FILTER (57 ms, the top 100
        # of 10k rows, 2 vCPU at load 20) and 30k as POST-ITERATIVE-FILTER (4-9 ms); the INDEX hint
        # picks the latter at 10k too (4.5 ms).  VECTOR_INDEX(...) and opt_param hints did not.
        hint = f"MATERIALIZE INDEX(a {VECTOR_INDEX})" if approximate and ann_post_filter else "MATERIALIZE"
        ctes.append(
            f"ann AS (SELECT /*+ {hint} */ a.memory_id FROM {T} a WHERE {where} AND a.embedding_model = :model "
            f"ORDER BY cosine_distance(a.embedding, {QV}){order} LIMIT :apool)"
        )
        sources.append("ann")
        has_vec = "(m.embedding IS NOT NULL AND m.embedding_model = :model)"
        sem_raw = f"CASE WHEN m.embedding IS NULL OR m.embedding_model <> :model THEN 0 ELSE 1 - cosine_distance(m.embedding, {QV}) END"
    else:
        has_vec, sem_raw = "0", "0"
    terms = query_terms(query_text.split())
    if terms:
        where = scope_where("f", filters, settings.include_superseded, params, settings.min_confidence)
        # Coverage for every candidate only where the relevance gate filters on it; else for the
        # k winners (postings.coverage_of), when the statistics are in variables.
        winners_cov = fulltext_statistics == "variables" and settings.relevance_min_lexical is None
        ctes.extend(bm25_ctes(terms, where, params, settings.candidate_pool, overfetch=fulltext_overfetch,
                              statistics=fulltext_statistics, coverage=not winners_cov))
        sources.append("ft")
        ft_join, in_ft = "LEFT JOIN ft ON ft.memory_id = c.memory_id", "(ft.memory_id IS NOT NULL)"
        fts, cov = "COALESCE(ft.fts, 0)", "COALESCE(ft.cov, 0)"
    else:
        ft_join, in_ft, fts, cov, winners_cov = "", "0", "0", "0", False
    if not sources:
        raise ValueError("hybrid_search needs a query vector or a query text")
    # Recency reference: the newest candidate (capped at now) or now itself.
    ref = "LEAST(MAX(r.created_at) OVER (), :now)" if settings.recency_reference == "newest" else ":now"
    sem, ft = _fusion_exprs(settings, params)
    ctes.append("cand AS (SELECT /*+ MATERIALIZE */ memory_id FROM " + " UNION SELECT memory_id FROM ".join(sources) + ")")
    cols = ", ".join(f"m.{c}" for c in _SIGNAL_INPUTS) + ", COALESCE(CHAR_LENGTH(m.content), 0) AS content_chars"
    r_cols = ", ".join(f"r.{c}" for c in (*_SIGNAL_INPUTS, "content_chars"))
    out_cols = ", ".join(f"w.{c}" for c in ROW_COLUMNS)
    params["w_ctx"] = float(weights.context)
    params["w_ver"] = float(weights.version)
    rel_ok = rv.eligible_sql(settings, params, sem="r.sem_raw", has_vec="r.has_vec", lex="r.ft_cov")
    ctx, nb_ok = _context_exprs(settings.context_window if weights.context else 0, settings.context_mode,
                                settings.context_full_chars, params, long_lends_less=settings.context_long_lends_less)
    # Per-candidate signals; a CTE because the version signal reads it twice.
    ctes.append(f"""sig AS (
  SELECT /*+ MATERIALIZE */ {r_cols},
    {sem} AS sem,
    EXP(-{LN2} * GREATEST(TIMESTAMPDIFF(MICROSECOND, r.created_at, {ref}), 0) / 1000000.0 / :half_life) AS rec,
    LEAST(LN(1 + r.access_count) / :freq_norm, 1) AS freq,
    {ft} AS ft,
    r.importance_score AS imp,
    {_author_expr(author_cue, params)} AS auth,
    SUM(r.in_ft) OVER () AS ft_n,
    r.in_ft, r.ft_cov,
    r.sem_raw, r.has_vec, r.is_fact, {rel_ok} AS rel_ok
  FROM (
    SELECT /*+ LEADING(c m) USE_NL(m) */ {cols}, {sem_raw} AS sem_raw, {has_vec} AS has_vec, {fts} AS fts,
      {cov} AS ft_cov, {in_ft} AS in_ft, {_is_fact("m")} AS is_fact
    FROM cand c JOIN {T} m ON m.app_name = :app AND m.user_id = :user AND m.memory_id = c.memory_id {ft_join}
  ) r
)""")
    if weights.version and query_vector is not None and settings.version_pool > 1:
        ctes.extend(_version_ctes(settings, params))
        ver, ver_join = "COALESCE(v.gain, 0)", "LEFT JOIN ver v ON v.memory_id = q.memory_id"
    else:
        ver, ver_join = "0", ""
    # Relevance (what the query matched, own or borrowed) and the gated non-relevance boosts.
    params["g_nb"] = 1 if settings.relevance_gate_neighbours else 0
    rel = "(:w_sem * t.sem + :w_ft * t.ft + :w_ctx * t.ctx + :w_ver * t.ver)"
    boost = rv.margin_sql(settings, params, rel=rel, ok="t.ok")
    params["w_auth"] = float(weights.author)
    fill = rv.fill_sql(settings, params, rel="(:w_sem * s.sem + :w_ft * s.ft + :w_ctx * s.ctx + :w_ver * s.ver)",
                       rel_ok="s.rel_ok")
    # The ranking reads the narrow columns; the row's content, JSON and metadata are fetched for
    # the k winners only (LEADING/USE_NL: k primary-key lookups).
    out_sig = [f"z.{c}" for c in SIGNAL_COLUMNS]
    if winners_cov:
        out_sig[SIGNAL_COLUMNS.index("ft_cov")] = \
            f"CASE WHEN z.in_ft = 1 THEN {coverage_of('z.memory_id', len(terms))} ELSE 0 END AS ft_cov"
    capped = _session_cap_expr(settings.max_hits_per_session, params)
    ranked = f"""SELECT d.* FROM (
SELECT u.memory_id, u.created_at, u.in_ft, {', '.join(f"u.{c}" for c in SIGNAL_COLUMNS)}, {capped} AS capped
FROM (
  SELECT t.*, {rel} + {boost} * (:w_rec * t.rec + :w_freq * t.freq + :w_imp * t.imp + :w_auth * t.auth) AS score
  FROM (
    SELECT s.*, CASE WHEN s.rel_ok = 1 OR (:g_nb = 1 AND s.nb_ok = 1) OR {fill} = 1 THEN 1 ELSE 0 END AS ok
    FROM (
      SELECT q.*, {ctx} AS ctx, {nb_ok} AS nb_ok, {ver} AS ver
      FROM sig q {ver_join}
    ) s
  ) t
) u
WHERE u.ok = 1 AND u.score >= :min_score
) d
ORDER BY d.capped, d.score DESC, d.created_at DESC, d.memory_id
LIMIT :k"""
    if hits_select is not None:
        # The caller's read of its hits, in place of the winners' memory rows (never fetched then).
        ctes.append(f"hits AS (SELECT z.memory_id, z.score FROM ({ranked}) z)")
        return _statement(f"WITH {', '.join(ctes)}\n{hits_select}"), params
    sql = f"""WITH {', '.join(ctes)}
SELECT /*+ LEADING(z w) USE_NL(w) */ {out_cols}, {', '.join(out_sig)}
FROM (
{ranked}
) z JOIN {T} w ON w.app_name = :app AND w.user_id = :user AND w.memory_id = z.memory_id
ORDER BY z.capped, z.score DESC, z.created_at DESC, z.memory_id"""
    return _statement(sql), params


def _session_cap_expr(cap: int | None, params: dict[str, Any]) -> str:
    """1 for a hit beyond the ``cap`` best of its source session (``MemorySettings.max_hits_per_session``), else 0.

    The outer ORDER BY puts those after every other hit, so one session's
    many near-identical lines cannot fill the top k while other sessions have
    matches; ``scoring.cap_per_session`` is the numpy twin (same tie-break).
    """
    if cap is None:
        return "0"
    params["s_cap"] = int(cap)
    return ("CASE WHEN u.session_id IS NOT NULL AND ROW_NUMBER() OVER (PARTITION BY u.session_id "
            "ORDER BY u.score DESC, u.created_at DESC, u.memory_id) > :s_cap THEN 1 ELSE 0 END")


SIGNAL_COLUMNS = ("sem", "rec", "freq", "ft", "imp", "ctx", "ver", "score", "ft_n", "ft_cov", "auth")
""":func:`hybrid_search`'s columns after :data:`ROW_COLUMNS`, in order."""

_SIGNAL_INPUTS = ("memory_id", "session_id", "turn_pos", "importance_score", "access_count", "created_at", "author")
"""The row columns the ranking reads (``sig``, with ``content_chars``); the others are fetched for the returned rows only."""


def _author_expr(cue: str | None, params: dict[str, Any]) -> str:
    """The author signal of candidate ``r`` (``asker.author_match`` in SQL): 0 for all without a cue."""
    if cue is None:
        return "0"
    if cue not in (USER, AGENT):
        raise ValueError(f"unknown author cue {cue!r}")
    params["user_author"] = USER
    test = "r.author = :user_author" if cue == USER else "r.author <> :user_author"  # NULL author: 0
    return f"(CASE WHEN {test} THEN 1 ELSE 0 END)"


def _is_fact(alias: str) -> str:
    """1 for a fact (LLM-extracted or ``add_memory``), 0 for a dialogue turn (``turn:*`` extractor)."""
    return "(" + FACT_TEST.format(a=alias + ".") + ")"


def _version_ctes(settings: MemorySettings, params: dict[str, Any]) -> list[str]:
    """``vtop`` and ``ver``: the version signal of the best ``version_pool`` fact candidates.

    Two facts are versions of each other when their embeddings are close
    (``cosine_distance <= 1 - version_similarity``) and the query sees them
    about equally (raw cosines within ``version_band``).  A fact's ``gain`` is
    how much higher its best version's full-text signal is: a version's word
    match counts for the fact too, while its semantic similarity stays its own.
    The pairs are compared on the candidate rows only (a primary-key lookup
    for each vector), never on the whole table.
    """
    params["vpool"] = int(settings.version_pool)
    params["vdist"] = 1.0 - float(settings.version_similarity)
    params["vband"] = float(settings.version_band)
    return [
        f"vtop AS (SELECT /*+ MATERIALIZE LEADING(g e) USE_NL(e) */ g.memory_id, g.sem_raw, g.ft, e.embedding FROM "
        f"(SELECT memory_id, sem_raw, ft FROM sig WHERE is_fact = 1 AND has_vec = 1 "
        f"ORDER BY :w_sem * sem + :w_ft * ft DESC, memory_id LIMIT :vpool) g "
        f"JOIN {T} e ON e.app_name = :app AND e.user_id = :user AND e.memory_id = g.memory_id)",
        "ver AS (SELECT /*+ MATERIALIZE */ a.memory_id, MAX(b.ft) - a.ft AS gain FROM vtop a "
        "JOIN vtop b ON b.ft > a.ft AND ABS(a.sem_raw - b.sem_raw) <= :vband "
        "WHERE cosine_distance(a.embedding, b.embedding) <= :vdist GROUP BY a.memory_id, a.ft)",
    ]


def _context_exprs(
    window: int, mode: str = "best", full_chars: int | None = None, params: dict[str, Any] | None = None,
    *, long_lends_less: bool = False,
) -> tuple[str, str]:
    """The context signal of candidate ``q`` and whether it has an eligible neighbour (``nb_ok``).

    Context is the best relevance among its session neighbours: candidates of
    the same session within ``window`` turn positions on either side
    (``turn_pos``, the event's place in the session); relevance is the
    weighted semantic + full-text part of their score, whether or not the
    relevance gate lets the neighbour through (the gate decides what may be
    returned, not how it ranks; ``nb_ok`` is whether a neighbour has evidence
    of its own, ``rel_ok``).  A turn next to a strong match is often the other half of
    it (question / answer), which neither signal sees on its own.  Two
    one-sided RANGE frames leave the row itself out.  Rows without a position
    get 0.  ``mode`` ``gap`` (``MemorySettings.context_mode``) keeps only what
    that best neighbour has beyond the row's own relevance.  ``full_chars``
    (``MemorySettings.context_full_chars``, bound into ``params``) scales the
    signal by ``LEAST(1, full_chars / CHAR_LENGTH(content))`` (``sig``'s
    ``content_chars``): a long turn is
    about what it says itself and borrows less; with ``long_lends_less``
    (``MemorySettings.context_long_lends_less``) a long neighbour's relevance
    is scaled the same way before the window takes its maximum, so it lends
    less too.
    """
    w = int(window)
    if w < 1:
        return "0", "0"
    if mode not in ("best", "gap"):
        raise ValueError(f"unknown context_mode {mode!r}; choose best or gap")
    part = "PARTITION BY q.session_id ORDER BY q.turn_pos"
    frames = (f"RANGE BETWEEN {w} PRECEDING AND 1 PRECEDING", f"RANGE BETWEEN 1 FOLLOWING AND {w} FOLLOWING")

    def best(value: str) -> str:
        return ("CASE WHEN q.turn_pos IS NULL OR q.session_id IS NULL THEN 0 ELSE GREATEST("
                + ", ".join(f"COALESCE(MAX({value}) OVER ({part} {f}), 0)" for f in frames) + ", 0) END")

    own = ":w_sem * q.sem + :w_ft * q.ft"
    share = "LEAST(1, :ctx_chars / GREATEST(q.content_chars, 1))"  # a long turn's share (full_chars)
    if full_chars is not None:
        if params is None:
            raise ValueError("context_full_chars needs the statement's params to bind into")
        params["ctx_chars"] = float(full_chars)
    ctx = best(f"({own}) * {share}" if full_chars is not None and long_lends_less else own)
    if mode == "gap":
        ctx = f"GREATEST({ctx} - GREATEST({own}, 0), 0)"  # no neighbour (0): nothing, whatever its own
    if full_chars is not None:
        ctx = f"({ctx}) * {share}"
    return ctx, best("q.rel_ok")


QV = "@adk_ob_qv"
"""The session variable :func:`hybrid_search` reads the query vector from (see :func:`bind_query_vector`)."""


def bind_query_vector(query_vector: str, ef_search: int | None = None) -> tuple[TextClause, dict[str, Any]]:
    """``SET`` the query vector (and, for the HNSW path, ``ob_hnsw_ef_search``) on this connection.

    Run on the same connection right before :func:`hybrid_search`'s statement.
    Why a variable: seekdb does not parameterise the vector literal, so with it
    inline every query vector was a new statement to parse and optimise; the
    plan of this statement costs far more than running it (measured with 600
    memories per user: 250-750 ms per search with the exact scan vs 10-25 ms
    once the text is stable).
    """
    if ef_search is None:
        return _statement(f"SET {QV} = :qv"), {"qv": query_vector}
    return _statement(f"SET ob_hnsw_ef_search = :ef, {QV} = :qv"), {"qv": query_vector, "ef": int(ef_search)}


def set_fulltext_statistics(app_name: str, user_id: str, query_text: str) -> tuple[TextClause, dict[str, Any]] | None:
    """The statement that sets :func:`hybrid_search`'s BM25 statistics (``fulltext_statistics="variables"``).

    ``query_text`` as for :func:`hybrid_search`; ``None`` when it has no
    full-text terms (the search then has no full-text half).
    """
    terms = query_terms(query_text.split())
    return bm25_statistics(app_name, user_id, terms) if terms else None


def snapshot_reads() -> tuple[TextClause, dict[str, Any]]:
    """``SET TRANSACTION ISOLATION LEVEL REPEATABLE READ``: the next transaction reads one snapshot.

    For a read made of more than one statement (the BM25 statistics, then the
    search that uses them): at the server's default READ COMMITTED each
    statement would see the writes committed before it, so a memory stored
    in between could count in N but miss from the postings.  First in the
    batch, before anything opens the transaction; it applies to that
    transaction only.
    """
    return _statement("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"), {}


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
