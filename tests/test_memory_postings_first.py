"""The postings-first full-text candidates (big users): the same candidates and scores as the row-first form.

Every test runs on seekdb and on MariaDB.  ``fulltext_overfetch_rows=0`` makes
every user "big", so small fixtures exercise the form the service uses for
users holding thousands of memories; on seekdb it goes with the HNSW vector
candidates (``vector_search="ann"``), as for those users.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import pytest
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types
from sqlalchemy import text

from adk_oceanbase.errors import ConfigurationError
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService, ScoreWeights
from adk_oceanbase.memory.postings import STATS_VAR, bm25_ctes, bm25_statistics
from adk_oceanbase.memory.search_sql import snapshot_reads
from adk_oceanbase.rawtx import raw_transaction

from .test_memory_lexical import WORDS, entries

APP, USER = "app", "u1"
QUERIES = ["apple pie in paris", "my sister is a nurse", "coffee and tea", "violin piano garden", "kyoto museum"]
START = datetime(2025, 1, 1, tzinfo=timezone.utc)
FT_ONLY = ScoreWeights(semantic=0.0, fulltext=1.0, recency=0.0, frequency=0.0, importance=0.0, context=0.0, version=0.0)
BASE = dict(bump_access=False, vector_search="ann", ef_search=400, retry_base_s=0.01, batch_wait_s=0.0, fulltext_overfetch_rows=0)


@pytest.fixture(params=["seekdb", "mariadb"])
def db(request):
    return request.getfixturevalue("database" if request.param == "seekdb" else "mariadb_database")


async def services(db, statistics="variables", **kw):
    row_first = OceanBaseMemoryService(database=db, embedder=HashEmbedder(),
                                       settings=MemorySettings(**BASE, fulltext_overfetch=None, **kw))
    postings_first = OceanBaseMemoryService(database=db, embedder=HashEmbedder(), settings=MemorySettings(
        **BASE, fulltext_overfetch=2, fulltext_statistics=statistics, **kw))
    return row_first, postings_first


def ranked(hits) -> list[tuple[str, float, float]]:
    return [(h.memory_id, round(h.signals.fulltext, 9), round(h.signals.ft_cov, 9)) for h in hits]


@pytest.mark.parametrize("statistics", ["variables", "inline"])
async def test_postings_first_gives_the_row_first_ranking(db, statistics):
    row_first, postings_first = await services(db, statistics)
    try:
        await row_first.add_memory(app_name=APP, user_id=USER, memories=entries("m", 120, seed=3))
        await row_first.flush()
        for q in QUERIES:
            want = await row_first.search(APP, USER, q, top_k=20, weights=FT_ONLY)
            got = await postings_first.search(APP, USER, q, top_k=20, weights=FT_ONLY)
            assert want and ranked(got) == ranked(want), q
            # the hybrid ranking too (both take the same vector candidates)
            assert [h.memory_id for h in await postings_first.search(APP, USER, q, top_k=10)] == \
                [h.memory_id for h in await row_first.search(APP, USER, q, top_k=10)]
    finally:
        await row_first.close()
        await postings_first.close()


async def test_postings_first_never_returns_out_of_scope_memories(db):
    row_first, postings_first = await services(db)
    try:
        await row_first.add_memory(app_name=APP, user_id=USER, memories=entries("m", 60, seed=5))
        await row_first.flush()
        best = [h.memory_id for h in await row_first.search(APP, USER, "coffee and tea", top_k=5, weights=FT_ONLY)]
        # the two best matches leave the scope: one deleted (a tombstone keeps no postings), one superseded
        await row_first.delete_memory(app_name=APP, user_id=USER, memory_id=best[0])
        async with db.engine.begin() as conn:
            await conn.execute(text("UPDATE agent_memories SET superseded_by = :b WHERE app_name = :a AND "
                                    "user_id = :u AND memory_id = :m"), {"a": APP, "u": USER, "m": best[1], "b": best[2]})
        want = ranked(await row_first.search(APP, USER, "coffee and tea", top_k=10, weights=FT_ONLY))
        got = ranked(await postings_first.search(APP, USER, "coffee and tea", top_k=10, weights=FT_ONLY))
        assert got == want
        assert not {best[0], best[1]} & {m for m, _, _ in got}
    finally:
        await row_first.close()
        await postings_first.close()


async def test_caller_filters_check_rows_first(db):
    """A filter can exclude every over-fetched match: filtered searches must not use the cut."""
    # pool 2 x overfetch 2: the postings-first cut keeps 4 matches; the agent's only match ranks lower
    row_first, postings_first = await services(db, candidate_pool=2)
    try:
        await row_first.add_memory(app_name=APP, user_id=USER, memories=[
            MemoryEntry(id=f"s{i}", author="user", timestamp=(START + timedelta(hours=i)).isoformat(),
                        content=types.Content(parts=[types.Part.from_text(text=f"coffee coffee {WORDS[i]}")]))
            for i in range(6)
        ])
        await row_first.add_memory(app_name=APP, user_id=USER, memories=[
            MemoryEntry(id="t1", author="travel_agent", timestamp=START.isoformat(),
                        content=types.Content(parts=[types.Part.from_text(text="coffee in kyoto near the museum garden")]))
        ])
        await row_first.flush()
        hits = await postings_first.search(APP, USER, "coffee", top_k=5, weights=FT_ONLY, filters={"author": "travel_agent"})
        # found by its words (the vector candidates bring every in-scope memory too, with no full-text signal)
        assert [(h.memory_id, h.signals.fulltext > 0) for h in hits] == [("t1", True)]
        # unfiltered, the cut keeps the strongest matches (the agent's memory is not among them)
        hits = await postings_first.search(APP, USER, "coffee", top_k=10, weights=FT_ONLY)
        assert sum(h.signals.fulltext > 0 for h in hits) == 2
        assert all(h.signals.fulltext == 0 for h in hits if h.memory_id == "t1")
    finally:
        await row_first.close()
        await postings_first.close()


def test_overfetch_settings_are_checked():
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ConfigurationError, match="fulltext_overfetch"):
            MemorySettings(fulltext_overfetch=bad)
    with pytest.raises(ConfigurationError, match="fulltext_overfetch_rows"):
        MemorySettings(fulltext_overfetch_rows=-5)
    assert MemorySettings(fulltext_overfetch=None).fulltext_overfetch is None
    with pytest.raises(ConfigurationError, match="fulltext_statistics"):
        MemorySettings(fulltext_statistics="cached")
    with pytest.raises(ValueError, match="pool"):
        bm25_ctes({"coffee": 1}, "1 = 1", {}, None, overfetch=2)


async def test_gated_search_gets_the_row_first_coverage(db):
    """With a lexical floor the gate filters on every candidate's coverage, so the postings-first form
    sums it for all of them (elsewhere only the winners get it): the same hits and coverage either way."""
    row_first, postings_first = await services(db, relevance_min_lexical=0.3)
    try:
        await row_first.add_memory(app_name=APP, user_id=USER, memories=entries("m", 120, seed=4))
        await row_first.flush()
        for q in QUERIES:
            want = ranked(await row_first.search(APP, USER, q, top_k=20))
            assert want == ranked(await postings_first.search(APP, USER, q, top_k=20)), q
            assert all(cov >= 0.3 or ft == 0 for _, ft, cov in want)
    finally:
        await row_first.close()
        await postings_first.close()


async def test_statistics_variables_hold_the_inline_statistics(engine_db):
    """``bm25_statistics`` sets the values the inline CTEs compute: each term's weight (a repeated
    query term counts twice), the length factor and the idf mass (an unseen term at the highest idf)."""
    svc = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), settings=MemorySettings(**BASE))
    try:
        await svc.add_memory(app_name=APP, user_id=USER, memories=entries("m", 60, seed=2))
        await svc.flush()
        terms = {"coffe": 1, "tea": 2, "zzzunseen": 1}
        params = {"app": APP, "user": USER}
        ctes = bm25_ctes(terms, "1 = 1", params, 10)[:4]  # st, df, idf, qm
        inline = text(f"WITH {', '.join(ctes)} SELECT :kb / CAST(st.avgdl AS DOUBLE), qm.mass, "
                      "(SELECT w FROM idf WHERE term = :qt0), (SELECT w FROM idf WHERE term = :qt1) FROM st CROSS JOIN qm")
        async with raw_transaction(engine_db.engine) as tx:
            stats, params_s = bm25_statistics(APP, USER, terms)
            (_, want), _, (_, got) = await tx.batch([
                (inline, params), (stats, params_s),
                (text(f"SELECT {STATS_VAR}lf, {STATS_VAR}mass, {STATS_VAR}w0, {STATS_VAR}w1, {STATS_VAR}w2"), {}),
            ])
            (_, n_df), = await tx.batch([(text(
                "SELECT (SELECT COUNT(*) FROM agent_memories WHERE app_name = :app AND user_id = :user AND term_count > 0), "
                "(SELECT COUNT(*) FROM memory_terms WHERE app_name = :app AND user_id = :user AND term = 'tea')"), params)])
        lf, mass, w_coffee, w_tea = want[0]
        # sorted order: coffe, tea, zzzunseen (its weight is never read: it has no postings)
        assert got[0][:4] == pytest.approx((lf, mass, w_coffee, w_tea), rel=1e-12)
        (n, df), = n_df
        assert df > 0 and w_tea == pytest.approx(2 * max(math.log((n - df + 0.5) / (df + 0.5)), 0.25 * math.log(1 + n / 3.4)))
        assert mass == pytest.approx(w_coffee + w_tea + math.log((n + 0.5) / 0.5))  # the unseen term at the highest idf
    finally:
        await svc.close()
    with pytest.raises(ValueError, match="at least one"):
        bm25_statistics(APP, USER, {})
    with pytest.raises(ValueError, match="postings-first"):
        bm25_ctes({"coffee": 1}, "1 = 1", {}, 10, statistics="variables")
    with pytest.raises(ValueError, match="inline or variables"):
        bm25_ctes({"coffee": 1}, "1 = 1", {}, 10, overfetch=2, statistics="cached")


async def test_statistics_and_search_read_one_snapshot(engine_db, engine):
    """The statistics and the search are two statements; ``snapshot_reads`` puts them in one snapshot,
    so a memory committed between them counts in both or in neither (seekdb defaults to READ COMMITTED;
    MariaDB's InnoDB to REPEATABLE READ, where a plain transaction reads one snapshot already)."""
    count = text("SELECT COUNT(*) FROM agent_memories WHERE app_name = :app AND user_id = :user")
    params = {"app": APP, "user": USER}
    svc = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), settings=MemorySettings(**BASE))
    try:
        await svc.add_memory(app_name=APP, user_id=USER, memories=entries("m", 5, seed=1))
        await svc.flush()
        plain_is_one_snapshot = engine == "mariadb"
        for seed, (first, expect_same) in enumerate(((snapshot_reads(), True), ((text("SELECT 1"), {}), plain_is_one_snapshot))):
            async with raw_transaction(engine_db.engine) as tx:
                _, (_, before) = await tx.batch([first, (count, params)])
                await svc.add_memory(app_name=APP, user_id=USER, memories=entries(f"n{seed}", 1, seed=20 + seed))
                (_, after), = await tx.batch([(count, params)])
            assert (after == before) is expect_same, (before, after)
    finally:
        await svc.close()


class _DownEmbedder(HashEmbedder):
    def embed(self, texts):
        raise RuntimeError("embedding service down")


async def test_long_queries_are_planned_on_every_path(db):
    """25 query terms: one postings branch each.  Left to decide which CTEs to inline, seekdb's planner
    blew its query memory (error 11049) from 5 terms next to the exact vector scan and from 8 without a
    query vector; every CTE is materialised now, and only the HNSW path takes the postings-first form."""
    query = " ".join(WORDS[:20] + ["harbour", "lantern", "orchard", "meadow", "quartz"])
    svcs = [OceanBaseMemoryService(database=db, embedder=emb, settings=MemorySettings(**dict(BASE, **kw)))
            for emb, kw in ((HashEmbedder(), {}), (HashEmbedder(), {"vector_search": "exact"}), (_DownEmbedder(), {}))]
    try:
        await svcs[0].add_memory(app_name=APP, user_id=USER, memories=entries("m", 80, seed=7))
        await svcs[0].flush()
        for svc in svcs:
            hits = await svc.search(APP, USER, query, top_k=10, weights=FT_ONLY)
            assert len(hits) == 10 and all(h.signals.fulltext > 0 for h in hits)
        assert svcs[0].retriever.overfetch(await svcs[0].retriever.profile(APP, USER), None) == 2
        assert svcs[0].retriever.overfetch(await svcs[0].retriever.profile(APP, USER), None, hnsw=False) is None
    finally:
        for svc in svcs:
            await svc.close()
