"""The user-keyed lexical index (``memory_terms``): its writes, and the BM25 candidate list search reads.

Why our own index instead of the server's ``MATCH ... AGAINST``: a FULLTEXT
index keeps one set of BM25 statistics for the whole table, so a user's
ranking moved when other tenants' memories arrived (issue #13: top-10 exact
search 0.818 right after a user's ingest, 0.777 once 60 users were loaded),
and ``MATCH`` read every matching row of every user before the tenant filter
(search p50 190 ms / p95 873 ms in a 29k-row app).  Here each posting is
``(app_name, user_id, term, memory_id, tf)``, so the statistics are the
user's own, counted in the search statement itself (document frequency over
the user's postings; N and the mean length over the user's
``agent_memories.term_count``, from ``ix_memories_user_terms``) and each query
term is one primary-key range scan inside the user's key range.

Two forms of the candidate list (:func:`bm25_ctes`):

* **row-first** (the default): every matching posting is joined to its
  memory row, which carries the scope (liveness, poisoning guards, the
  caller's filters) and the document length.  Exact for any scope, but each
  posting costs a row lookup: 75-120 ms for a user holding 100k memories
  whose query terms each occur in 12% of them (``benchmarks/_scale.py``).
* **postings-first** (``overfetch``): the score is summed from the postings
  alone (each posting carries its memory's length, ``doc_len``, revision
  0013; one range scan per term with the term's weight computed once), the
  best ``pool x overfetch`` are cut, and only those are joined to their rows
  for the scope.  18 ms on the same data.  It can only return fewer
  candidates than the first form, never different scores: a memory outside
  the scope still takes a place in the cut.  The service uses it for big
  users without caller filters (``MemorySettings.fulltext_overfetch``).
  On OceanBase its statistics come first, into session variables
  (:func:`bm25_statistics`, same round trip and snapshot): constants in the
  sum, 8.3 instead of 11.2 ms for that user's list (with the statement's
  other CTEs; session 9's measurement in benchmarks/README.md).

Postings are written in the transaction that writes the memory's
``search_text`` (:func:`index_memories`): a memory is never searchable by
words it no longer has, nor missing words it has.  One exception, the
*deferred* postings of a bulk write (Agno's ``upsert_memories``): its rows
are written with ``term_count`` negated (minus the count) and no postings,
old postings of a changed text deleted in the call, and the vectorizer's
round writes the postings in its claim's transaction and flips the count
back (``Vectorizer._index_due``): the row is found by its words once that
round has claimed it, as it is found by its vector once stored, and the
vectorizer's ``flush()`` waits for both.  A row with ``term_count < 0`` is
due: the statistics count only ``term_count > 0``, so it weighs in N and the
mean length exactly when its postings exist; any writer that gives such a
row a positive count writes its postings too.  Every path that deletes a
memory (tombstone, erasure, opt-out purge, retention) deletes or locks the
row before its postings, so it either waits for a claim holding the row and
then deletes its postings, or commits first and the claim misses the row.

Scoring is rank-bm25's ``BM25Okapi`` (k1 1.5, b 0.75): ``idf = ln((N - df +
0.5) / (df + 0.5))``, floored at ``0.25 x`` the vocabulary's mean idf for
terms in more than half the memories.  rank-bm25 computes that mean over
every term of the corpus, which would read all the user's postings on every
search; the vocabulary is mostly words seen once, and on LoCoMo's ten
conversations (369-689 turns each, rank-bm25 on the baseline's tokens)
``ln(1 + N / 3.4)`` matched the mean within 0.06 in nine and 0.11 in one,
so that estimate is the floor here.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from typing import Any, Sequence

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import TextClause

from .lexical import doc_terms

__all__ = [
    "BM25_B",
    "BM25_EPSILON",
    "BM25_K1",
    "P",
    "STATS_VAR",
    "bm25_ctes",
    "bm25_statistics",
    "coverage_of",
    "delete_postings",
    "index_memories",
    "index_terms",
    "insert_postings",
    "insert_postings_json",
]

P = "memory_terms"
_statement = functools.lru_cache(maxsize=64)(text)
"""``text()`` by its SQL, for texts that repeat (see ``search_sql._statement``)."""
BM25_K1 = 1.5
BM25_B = 0.75
BM25_EPSILON = 0.25  # rank-bm25's default floor factor (benchmarks/_baselines.py uses it)
_MEAN_IDF_N = 3.4  # mean idf of a user's vocabulary ~ ln(1 + N / 3.4) (module docstring)


def insert_postings() -> TextClause:
    """One posting (executemany-friendly)."""
    return text(
        f"INSERT INTO {P} (app_name, user_id, term, memory_id, tf, doc_len) "
        "VALUES (:app, :user, :term, :memory_id, :tf, :doc_len)"
    )


def insert_postings_json() -> TextClause:
    """Many postings of one user in one statement: ``:rows`` is a JSON list of ``[term, memory_id, tf, doc_len]``.

    One bound string instead of six parameters a posting: a bulk load's
    8,000 postings (500 memories) were 55k values for the driver to escape
    one by one; the server expands the list with ``JSON_TABLE`` (MariaDB
    10.6, MySQL 8.0.4, OceanBase 4.x).  Insert of 8,000 postings on seekdb
    at load 10: 163-376 ms against 388-1,298 ms as an executemany (raw
    pymysql, 2026-11-26).  ``utf8mb4`` so a term outside the BMP arrives whole.
    """
    return text(
        f"INSERT INTO {P} (app_name, user_id, term, memory_id, tf, doc_len) "
        "SELECT :app, :user, j.term, j.memory_id, j.tf, j.doc_len FROM JSON_TABLE(:rows, '$[*]' COLUMNS ("
        "term VARCHAR(64) CHARACTER SET utf8mb4 PATH '$[0]', memory_id VARCHAR(64) CHARACTER SET utf8mb4 PATH '$[1]', "
        "tf INT PATH '$[2]', doc_len INT PATH '$[3]')) AS j"
    )


def delete_postings(app_name: str, user_id: str, memory_ids: Sequence[str]) -> tuple[TextClause, dict[str, Any]]:
    """Every posting of these memories (the ``ix_memory_terms_memory`` range of each)."""
    stmt = text(
        f"DELETE FROM {P} WHERE app_name = :app AND user_id = :user AND memory_id IN :ids"
    ).bindparams(bindparam("ids", expanding=True))
    return stmt, {"app": app_name, "user": user_id, "ids": list(memory_ids)}


def posting_rows(app_name: str, user_id: str, memory_id: str, terms: Counter[str]) -> list[dict[str, Any]]:
    """The postings of one memory; ``doc_len`` is its ``term_count`` (the sum of ``terms``)."""
    doc_len = sum(terms.values())
    return [
        {"app": app_name, "user": user_id, "term": t, "memory_id": memory_id, "tf": n, "doc_len": doc_len}
        for t, n in terms.items()
    ]


async def index_memories(
    conn: AsyncConnection, app_name: str, user_id: str, docs: Sequence[tuple[str, str | None]], *, replace: bool
) -> None:
    """Writes the postings of ``(memory_id, search_text)`` pairs on ``conn`` (the caller's transaction).

    ``replace=True`` first deletes what the memories had (a rewritten
    ``search_text``); new rows pass ``False``.  A ``None`` text leaves the
    memory without postings (a tombstone).  The caller writes ``term_count``
    with the row (``sum(doc_terms(text).values())``).
    """
    await index_terms(conn, app_name, user_id, [(mid, doc_terms(body)) for mid, body in docs], replace=replace)


async def index_terms(
    conn: AsyncConnection, app_name: str, user_id: str, docs: Sequence[tuple[str, Counter[str]]], *, replace: bool
) -> None:
    """:func:`index_memories` for a caller that already has each memory's :func:`doc_terms` (its ``term_count``).

    A bulk write counts the terms once for the row and its postings: the
    second count was a third of the client's time of a 500-memory batch.
    """
    if not docs:
        return
    if replace:
        stmt, params = delete_postings(app_name, user_id, [mid for mid, _ in docs])
        await conn.execute(stmt, params)
    rows = [[t, mid, n, total] for mid, terms in docs for total in [sum(terms.values())] for t, n in terms.items()]
    if rows:
        await conn.execute(insert_postings_json(),
                           {"app": app_name, "user": user_id, "rows": json.dumps(rows, separators=(",", ":"))})


def bm25_ctes(
    terms: Counter[str],
    where: str,
    params: dict[str, Any],
    pool: int | None,
    *,
    overfetch: int | None = None,
    statistics: str = "inline",
    coverage: bool = True,
) -> list[str]:
    """CTEs ``st``, ``df``, ``idf``, ``qm`` and ``ft``: the user's best BM25 matches of ``terms``.

    ``where`` is the scope condition on alias ``f`` (the memory row: tenant,
    liveness, filters); the statistics (N, average length, df) count every
    memory of the user that has postings, whatever the filters, so a filter
    narrows the list without changing anyone's score.  ``ft`` has
    ``memory_id``, ``fts`` (the BM25 score) and ``cov``: the share of the
    query's idf mass (every query term, unseen ones at the highest idf) that
    the memory matches, in [0, 1].  ``pool`` cuts ``ft`` to the best ``pool``
    (score, then id); ``None`` keeps every match.  ``overfetch`` selects the
    postings-first form (module docstring; needs ``pool``): the best ``pool x
    overfetch`` by score, then the scope.  ``:app``/``:user`` are the caller's.

    Scores are rounded to 9 decimals: the two forms add a memory's terms in
    their own order, and equal texts (a user's repeated messages) then differ
    by 1e-15, enough to order ties differently and cut different ones (same
    list in 27% of LoCoMo-text queries at 100k rows before the rounding).

    ``statistics="variables"`` (postings-first form only; OceanBase) leaves
    the statistics out: the term weights, the length factor and the idf mass
    are read from the session variables that :func:`bm25_statistics` sets,
    run just before on the same connection and transaction (see there why).
    There, ``coverage=False`` leaves ``cov`` NULL: its sum was a second
    aggregate over every posting (about 1 ms of the 100k-row list), and a
    search that does not filter on it computes it for its winners only
    (:func:`coverage_of`).
    """
    if statistics not in ("inline", "variables"):
        raise ValueError(f"unknown statistics {statistics!r}; choose inline or variables")
    if statistics == "variables" and overfetch is None:
        raise ValueError("statistics in session variables are for the postings-first form (overfetch)")
    names = []
    qn_case = []
    ordered = _ordered(terms)
    for i, (term, n) in enumerate(ordered):
        params[f"qt{i}"], params[f"qn{i}"] = term, int(n)
        names.append(f":qt{i}")
        qn_case.append(f"WHEN :qt{i} THEN :qn{i}")
    params.update(k1=BM25_K1, b=BM25_B, eps=BM25_EPSILON, mean_n=_MEAN_IDF_N, qn_total=int(sum(terms.values())),
                  k1p1=BM25_K1 + 1, kk=BM25_K1 * (1 - BM25_B), kb=BM25_K1 * BM25_B)
    in_list = ", ".join(names)
    limit = "" if pool is None else " LIMIT :pool"
    if pool is not None:
        params["pool"] = int(pool)
    stats = [
        "st AS (SELECT /*+ MATERIALIZE */ COUNT(*) AS n, COALESCE(AVG(term_count), 1) AS avgdl FROM agent_memories "
        "WHERE app_name = :app AND user_id = :user AND term_count > 0)",
        f"df AS (SELECT /*+ MATERIALIZE */ p.term, COUNT(*) AS df FROM {P} p WHERE p.app_name = :app AND p.user_id = :user "
        f"AND p.term IN ({in_list}) GROUP BY p.term)",
        # MATERIALIZE on every CTE here and in search_sql: the server materialised them all anyway
        # (EXPLAIN: TEMP TABLE INSERT each), but left to choose, it weighed inlining each reference
        # (``st`` is read once per term branch): planning the postings-first form grew ~2x per query
        # term, 0.8 s at 4 terms, and from 5 terms (8 without a query vector) failed with "Exceed
        # query memory limit" (11049) unless the vector list came from the HNSW index.  And inlined,
        # every branch counted all the query terms' postings again (``idf``).
        "idf AS (SELECT /*+ MATERIALIZE */ d.term, d.qn, d.qn * GREATEST(LN((st.n - d.df + 0.5) / (d.df + 0.5)), "
        ":eps * LN(1 + st.n / :mean_n)) AS w "
        f"FROM (SELECT term, df, CASE term {' '.join(qn_case)} ELSE 0 END AS qn FROM df) d CROSS JOIN st)",
        # unseen query terms weigh ln((N + 0.5) / 0.5), the idf of df = 0
        "qm AS (SELECT /*+ MATERIALIZE */ COALESCE(SUM(i.w), 0) + (:qn_total - COALESCE(SUM(i.qn), 0)) * LN((MAX(st.n) + 0.5) / 0.5) "
        "AS mass FROM st LEFT JOIN idf i ON 1 = 1)",
    ]
    if overfetch is not None:
        if pool is None:
            raise ValueError("the postings-first form needs a pool to over-fetch")
        params["over"] = int(pool) * int(overfetch)
        if statistics == "variables":
            return _postings_first_from_variables(len(ordered), where, coverage)
        return stats + _postings_first(len(ordered), where)
    return stats + [
        # MATERIALIZE (OceanBase; a comment elsewhere): ``ft`` is read twice (candidates, scores) and was
        # otherwise computed twice: 107 -> 66 ms p50 for one user holding 30k memories.
        "ft AS (SELECT /*+ MATERIALIZE */ p.memory_id, "
        "ROUND(SUM(i.w * p.tf * (:k1 + 1) / (p.tf + :k1 * (1 - :b + :b * f.term_count / st.avgdl))), 9) "
        "AS fts, SUM(i.w) / NULLIF(MAX(qm.mass), 0) AS cov "
        f"FROM {P} p JOIN idf i ON i.term = p.term "
        "JOIN agent_memories f ON f.app_name = p.app_name AND f.user_id = p.user_id AND f.memory_id = p.memory_id "
        f"CROSS JOIN st CROSS JOIN qm WHERE p.app_name = :app AND p.user_id = :user AND p.term IN ({in_list}) "
        f"AND {where} GROUP BY p.memory_id ORDER BY fts DESC, p.memory_id{limit})",
    ]


def _postings_first(n_terms: int, where: str) -> list[str]:
    """``fr`` (the best ``:over`` memories by score, from the postings alone) and ``ft`` (those in scope, cut to ``:pool``).

    One branch per query term, each a range scan carrying the term's weight
    and the length factor ``k1 b / avgdl`` as one-time subqueries
    (``NO_UNNEST``: unnested, seekdb joined them to every posting, 230 ms
    instead of 18; in the branches, not inside the sums, which MariaDB
    refuses).  Per posting only ``w tf / (tf + k1 (1 - b) + (k1 b / avgdl) dl)``
    is summed, in DOUBLE (``avgdl`` is a DECIMAL average; 100k rows: 10.6 ms
    instead of 12.3), and the idf mass divides the 400 survivors, not every
    posting.  The same BM25 as the row-first form, term for term (equal to
    1e-9, and the same lists, on the benchmark's 100k rows).
    """
    one = "(SELECT /*+ NO_UNNEST */ {col} FROM {cte}{cond})"
    length = one.format(col=":kb / CAST(avgdl AS DOUBLE)", cte="st", cond="")
    branches = " UNION ALL ".join(
        f"SELECT p.memory_id, p.tf, p.doc_len, {one.format(col='w', cte='idf', cond=f' WHERE term = :qt{i}')} AS w, "
        f"{length} AS lf FROM {P} p WHERE p.app_name = :app AND p.user_id = :user AND p.term = :qt{i}"
        for i in range(n_terms)
    )
    return [
        "fr AS (SELECT /*+ MATERIALIZE */ u.memory_id, ROUND(SUM(u.w * u.tf / (u.tf + :kk + u.lf * u.doc_len)) * :k1p1, 9) AS fts, "
        f"SUM(u.w) AS wsum FROM ({branches}) u GROUP BY u.memory_id ORDER BY fts DESC, u.memory_id LIMIT :over)",
        "ft AS (SELECT /*+ MATERIALIZE */ r.memory_id, r.fts, r.wsum / NULLIF(qm.mass, 0) AS cov FROM fr r "
        f"JOIN agent_memories f ON f.app_name = :app AND f.user_id = :user AND f.memory_id = r.memory_id "
        f"CROSS JOIN qm WHERE {where} ORDER BY r.fts DESC, r.memory_id LIMIT :pool)",
    ]


STATS_VAR = "@adk_bm25_"
"""Prefix of the session variables :func:`bm25_statistics` sets: ``lf`` (``k1 b / avgdl``), ``mass``
(the query's idf mass) and ``w0``, ``w1``, ... (each query term's weight, terms in sorted order)."""


def bm25_statistics(app_name: str, user_id: str, terms: Counter[str]) -> tuple[TextClause, dict[str, Any]]:
    """``SELECT ... INTO`` the session variables that ``bm25_ctes(statistics="variables")`` reads.

    Why a statement of its own: the postings-first sum reads each posting's
    term weight and the length factor.  As one-time subqueries of the CTEs
    (``st``, ``idf``) seekdb evaluated them as expressions on every posting;
    as session variables they are constants, and the term's weight multiplies
    inside its own branch: the full-text list of one user holding 100k
    memories took 8.3 ms instead of 11.2 (benchmarks/README.md, session 9).
    The values are those of ``st``, ``df``, ``idf`` and ``qm`` in
    :func:`bm25_ctes`, computed by the same expressions: N and the mean length
    from ``ix_memories_user_terms``, each term's document frequency by a
    ``COUNT`` over its key range.  The caller runs this and the search in one
    transaction at REPEATABLE READ (``search_sql.snapshot_reads``), so both
    read the same snapshot.  Parameters are this statement's own.
    """
    params: dict[str, Any] = {"app": app_name, "user": user_id, "eps": BM25_EPSILON, "mean_n": _MEAN_IDF_N,
                              "kb": BM25_K1 * BM25_B}
    dfs, weights, mass = [], [], []
    for i, (term, n) in enumerate(_ordered(terms)):
        params[f"qt{i}"], params[f"qn{i}"] = term, int(n)
        dfs.append(f"(SELECT COUNT(*) FROM {P} p WHERE p.app_name = :app AND p.user_id = :user AND p.term = :qt{i}) AS df{i}")
        w = f":qn{i} * GREATEST(LN((st.n - d.df{i} + 0.5) / (d.df{i} + 0.5)), :eps * LN(1 + st.n / :mean_n))"
        weights.append(w)
        # unseen terms (df 0) weigh ln((N + 0.5) / 0.5) in the mass, as in ``qm``
        mass.append(f"CASE WHEN d.df{i} > 0 THEN {w} ELSE :qn{i} * LN((st.n + 0.5) / 0.5) END")
    if not weights:
        raise ValueError("bm25_statistics needs at least one query term")
    into = ", ".join(f"{STATS_VAR}{name}" for name in ("lf", "mass", *(f"w{i}" for i in range(len(weights)))))
    stmt = _statement(  # its text depends on the number of terms only
        f"SELECT :kb / CAST(st.avgdl AS DOUBLE), {' + '.join(mass)}, {', '.join(weights)} INTO {into} "
        "FROM (SELECT COUNT(*) AS n, COALESCE(AVG(term_count), 1) AS avgdl FROM agent_memories "
        "WHERE app_name = :app AND user_id = :user AND term_count > 0) st "
        f"CROSS JOIN (SELECT {', '.join(dfs)} FROM DUAL) d"
    )
    return stmt, params


def _ordered(terms: Counter[str]) -> list[tuple[str, int]]:
    """The query terms in the order their parameters and variables are numbered (sorted)."""
    return sorted(terms.items())


def coverage_of(memory_id: str, n_terms: int) -> str:
    """``cov`` of one memory (the SQL expression ``memory_id`` names it by): the weights of the query
    terms it has over the idf mass, from :func:`bm25_statistics`'s variables and the memory's postings
    (one short range of the primary key per term)."""
    v = STATS_VAR
    weight = "CASE p.term " + " ".join(f"WHEN :qt{i} THEN {v}w{i}" for i in range(n_terms)) + " END"
    terms = ", ".join(f":qt{i}" for i in range(n_terms))
    return (f"COALESCE((SELECT SUM({weight}) FROM {P} p WHERE p.app_name = :app AND p.user_id = :user "
            f"AND p.term IN ({terms}) AND p.memory_id = {memory_id}) / NULLIF({v}mass, 0), 0)")


def _postings_first_from_variables(n_terms: int, where: str, coverage: bool) -> list[str]:
    """``fr`` and ``ft`` of :func:`_postings_first`, with the statistics from :func:`bm25_statistics`'s variables.

    Each branch computes its postings' part of the score (the term's weight is
    a constant there), so the sum adds one precomputed value per posting.
    The same expression, term for term, as the inline form.  ``coverage``:
    see :func:`bm25_ctes`.

    The 9-decimal rounding is applied to the ``:over`` survivors (``ft``), not
    to every memory's sum (about 1 ms of 23k sums at 100k rows): ``fr`` cuts
    by the exact sum.  Memories with the same terms get bit-identical sums
    here (each is added in the branches' order), so a tie is cut by id as the
    rounded order would.  Only sums that agree to 9 decimals without being
    equal (different terms or lengths, by coincidence) could be cut in
    another order; the lists were the same in all 160 searches of the
    100k-row benchmarks that checked it.
    """
    v = STATS_VAR
    w_col, wsum, cov = (", {v}w{i} AS w", ", SUM(u.w) AS wsum", f"r.wsum / NULLIF({v}mass, 0)") if coverage \
        else ("", "", "CAST(NULL AS DOUBLE)")
    branches = " UNION ALL ".join(
        f"SELECT p.memory_id, {v}w{i} * p.tf / (p.tf + :kk + {v}lf * p.doc_len) AS x{w_col.format(v=v, i=i)} "
        f"FROM {P} p WHERE p.app_name = :app AND p.user_id = :user AND p.term = :qt{i}"
        for i in range(n_terms)
    )
    return [
        f"fr AS (SELECT /*+ MATERIALIZE */ u.memory_id, SUM(u.x) * :k1p1 AS fts{wsum} "
        f"FROM ({branches}) u GROUP BY u.memory_id ORDER BY fts DESC, u.memory_id LIMIT :over)",
        f"ft AS (SELECT /*+ MATERIALIZE */ r.memory_id, ROUND(r.fts, 9) AS fts, {cov} AS cov FROM fr r "
        f"JOIN agent_memories f ON f.app_name = :app AND f.user_id = :user AND f.memory_id = r.memory_id "
        f"WHERE {where} ORDER BY ROUND(r.fts, 9) DESC, r.memory_id LIMIT :pool)",
    ]
