"""The relevance gate (``memory/relevance.py``): nothing irrelevant is returned, real matches still are.

Without the gate a search always returns ``top_k`` memories: recency and
importance add near-constants, so unrelated memories fill the list.  These
tests run both scoring paths on seekdb (SQL and the numpy mirror) and check
they agree with the gate on; the numpy path runs on MariaDB too.  The lexical evidence is the per-user BM25
coverage ``ft_cov`` (share of the query's IDF mass matched), so a rare name
is evidence and a word most memories contain is not.
"""

from __future__ import annotations

import dataclasses
import time
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session
from google.genai import types

from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService, ScoreWeights
from adk_oceanbase.memory import relevance as rv
from tests.test_memory_context import FILLER, TRIP, ev
from tests.test_memory_ranking import APP, QUERIES, USER, _seeded
from .engines import SCORING_PER_ENGINE, seekdb_only

CLOCK = datetime(2025, 6, 1, 12, tzinfo=timezone.utc)
"""When the hand-made memories below are dated: a fixed day, since each memory's date is embedded
and indexed with its text (a wall-clock date made them different data every day)."""
GATE = dict(relevance_min_similarity=0.35, relevance_min_lexical=0.5, relevance_margin=0.2)


# ------------------------------------------------------------------ pure parts
def test_gate_off_builds_constant_fragments():
    s, params = MemorySettings(), {}
    assert not rv.gate_enabled(s)
    assert rv.eligible_sql(s, params, sem="x", has_vec="h", lex="l") == "1"
    assert rv.margin_sql(s, params, rel="r", ok="o") == "1"
    assert params == {}
    assert rv.relevant_mask(s, np.array([0.1]), np.array([True]), np.array([0.0])).all()


def test_masks_follow_the_floors_and_the_margin():
    s = MemorySettings(relevance_min_similarity=0.4, relevance_min_lexical=0.5, relevance_margin=0.1)
    sem, has_vec, lex = np.array([0.5, 0.3, 0.3, 0.5]), np.array([True, True, True, False]), np.array([0, 0.5, 0.4, 0])
    assert rv.relevant_mask(s, sem, has_vec, lex).tolist() == [True, True, False, False]
    ok = np.array([True, True, False, False])
    assert rv.boost_mask(s, np.array([1.0, 0.85, 2.0, 0.95]), ok).tolist() == [True, False, True, True]


# ------------------------------------------------------------------ on seekdb
@pytest.fixture
async def gated(engine_pristine_database):
    svc = await _seeded(engine_pristine_database)
    svc.settings = dataclasses.replace(svc.settings, **GATE)
    np_svc = OceanBaseMemoryService(database=svc.database, embedder=svc.embedder,
                                    settings=dataclasses.replace(svc.settings, scoring="numpy"))
    yield svc, np_svc
    await np_svc.close()
    await svc.close()


async def test_a_query_about_something_never_stored_returns_nothing(gated):
    for svc in gated:
        assert await svc.search(APP, USER, "quarterly zeppelin maintenance invoices", top_k=10) == []
        # the same store without the gate fills the list with whatever is there
        off = dataclasses.replace(svc.settings, relevance_min_similarity=None, relevance_min_lexical=None)
        plain = OceanBaseMemoryService(database=svc.database, embedder=svc.embedder, settings=off)
        try:
            assert len(await plain.search(APP, USER, "quarterly zeppelin maintenance invoices", top_k=10)) == 10
        finally:
            await plain.close()


async def test_real_matches_still_return_and_every_hit_has_evidence(gated):
    sql_svc, _ = gated
    for query in QUERIES:
        hits = await sql_svc.search(APP, USER, query, top_k=10)
        assert hits, query
        for h in hits:  # these memories have no session neighbours: own evidence only
            assert h.signals.semantic >= GATE["relevance_min_similarity"] or h.signals.ft_cov >= 0.5, (query, h)


@seekdb_only("compares the SQL scoring path with its numpy mirror: the SQL path needs cosine_distance (OceanBase/seekdb)")
@pytest.mark.parametrize("fill", [None, 0.15])
async def test_sql_and_numpy_paths_agree_with_the_gate_on(gated, fill):
    sql_svc, np_svc = gated
    for svc in gated:
        svc.settings = dataclasses.replace(svc.settings, relevance_fill_margin=fill)
    compared = 0
    for query in QUERIES + ["zeppelin apple", "hotel"]:
        a = await sql_svc.search(APP, USER, query, top_k=15)
        b = await np_svc.search(APP, USER, query, top_k=15)
        assert [h.memory_id for h in a] == [h.memory_id for h in b], query
        for x, y in zip(a, b):
            for f in ("semantic", "fulltext", "ft_cov", "context", "version", "score"):
                assert getattr(x.signals, f) == pytest.approx(getattr(y.signals, f), abs=1e-4), (query, f)
        compared += len(a)
    assert compared > 30


@SCORING_PER_ENGINE
async def test_recency_cannot_lift_a_weak_match_over_a_strong_one_within_the_margin(engine_db, engine, scoring):
    now = CLOCK
    old = MemoryEntry(id="strong", author="user", timestamp=(now - timedelta(days=900)).isoformat(),
                      content=types.Content(parts=[types.Part.from_text(text="my sister works as a nurse in kyoto")]))
    new = MemoryEntry(id="weak", author="user", timestamp=now.isoformat(),
                      content=types.Content(parts=[types.Part.from_text(text="kyoto trains were late again today")]))
    weights = ScoreWeights(semantic=0.5, fulltext=0.5, recency=1.0, frequency=0.0, importance=0.0, context=0.0)
    base = MemorySettings(bump_access=False, consolidate=False, vector_search="exact", scoring=scoring, weights=weights,
                          recency_half_life_s=30 * 86400.0, relevance_min_similarity=0.9,
                          relevance_min_lexical=0.3)
    svc = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), settings=base)
    try:
        await svc.add_memory(app_name=APP, user_id=USER, memories=[old, new])
        await svc.flush()
        query = "is my sister a nurse in kyoto"  # terms: sister nurse kyoto; the weak one has 1/3
        assert [h.memory_id for h in await svc.search(APP, USER, query)][0] == "weak"  # recency outweighs
        svc.settings = dataclasses.replace(base, relevance_margin=0.1)
        hits = await svc.search(APP, USER, query)
        assert [h.memory_id for h in hits] == ["strong", "weak"]  # the weak match lost its boost, not its place
        assert hits[1].score < hits[0].score
    finally:
        await svc.close()


async def store_trip_and_filler(svc: OceanBaseMemoryService, t0: float) -> None:
    """Two sessions as ADK hands them over: the vacation exchange (TRIP) and unrelated chat (FILLER)."""
    await svc.add_session_to_memory(Session(id="trip", app_name=APP, user_id=USER,
                                            events=[ev(a, t, t0 + i) for i, (a, t) in enumerate(TRIP)]))
    await svc.add_session_to_memory(Session(id="other", app_name=APP, user_id=USER,
                                            events=[ev(a, t, t0 + 10 + i) for i, (a, t) in enumerate(FILLER)]))
    await svc.flush()


@SCORING_PER_ENGINE
async def test_a_turn_next_to_an_eligible_turn_is_eligible_when_neighbours_count(engine_db, engine, scoring):
    weights = ScoreWeights(semantic=0.7, fulltext=0.3, recency=0.0, frequency=0.0, importance=0.0, context=0.5)
    s = MemorySettings(bump_access=False, consolidate=False, vector_search="exact", scoring=scoring, weights=weights,
                       context_window=1, relevance_min_similarity=0.5, relevance_min_lexical=0.99)
    svc = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), settings=s)
    t0 = time.time() - 3600
    try:
        await store_trip_and_filler(svc, t0)
        query = "where did you go on vacation last summer"
        with_nb = [h.entry.content.parts[0].text for h in await svc.search(APP, USER, query)]
        assert TRIP[0][1] in with_nb and TRIP[1][1] in with_nb  # the question, and the answer next to it
        assert TRIP[3][1] not in with_nb  # two turns away: outside the window
        svc.settings = dataclasses.replace(s, relevance_gate_neighbours=False)
        own = [h.entry.content.parts[0].text for h in await svc.search(APP, USER, query)]
        assert TRIP[0][1] in own and TRIP[1][1] not in own
    finally:
        await svc.close()


async def test_the_fill_margin_brings_near_matches_along_but_never_answers_the_unanswerable(gated):
    query = "apple in paris"  # terms appl, pari: memories with both have all the idf mass, with one about half
    for svc in gated:
        svc.settings = dataclasses.replace(svc.settings, relevance_min_similarity=0.9, relevance_min_lexical=0.6)
        strict = await svc.search(APP, USER, query, top_k=50)
        assert strict and all(h.signals.ft_cov >= 0.6 for h in strict)
        svc.settings = dataclasses.replace(svc.settings, relevance_fill_margin=2.0)  # every candidate
        filled = await svc.search(APP, USER, query, top_k=50)
        assert {h.memory_id for h in strict} < {h.memory_id for h in filled}
        assert await svc.search(APP, USER, "quarterly zeppelin maintenance invoices", top_k=10) == []


@SCORING_PER_ENGINE
async def test_a_rare_name_is_lexical_evidence_and_a_common_word_is_not(engine_db, engine, scoring):
    """The floor applies to the IDF-weighted coverage: with the unweighted share of query terms, each
    memory below matches one of the query's two terms (0.5) and all of them would pass."""
    weights = ScoreWeights(semantic=0.5, fulltext=0.5, recency=0.0, frequency=0.0, importance=0.0, context=0.0)
    s = MemorySettings(bump_access=False, consolidate=False, vector_search="exact", scoring=scoring, weights=weights,
                       relevance_min_lexical=0.5)
    svc = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), settings=s)
    now = CLOCK
    bodies = [f"had coffee at the station, day {i}" for i in range(30)] + ["Zorblat fixed the boiler", "the cat sleeps"]
    entries = [MemoryEntry(id=f"r{i:02d}", author="user", timestamp=(now - timedelta(hours=i)).isoformat(),
                           content=types.Content(parts=[types.Part.from_text(text=b)])) for i, b in enumerate(bodies)]
    try:
        await svc.add_memory(app_name=APP, user_id=USER, memories=entries)
        await svc.flush()
        hits = await svc.search(APP, USER, "coffee with Zorblat", top_k=10)
        assert [h.memory_id for h in hits] == ["r30"]  # the rare name; no coffee-only memory
        assert hits[0].signals.ft_cov > 0.8  # idf ln(31.5 / 1.5) against coffee's floored 0.25 x ln(1 + 32 / 3.4)
        off = dataclasses.replace(s, relevance_min_lexical=None)
        svc.settings = off
        every = await svc.search(APP, USER, "coffee with Zorblat", top_k=40)
        common = [h for h in every if h.memory_id.startswith("r") and h.memory_id < "r30"]
        assert common and all(0 < h.signals.ft_cov < 0.2 for h in common)
        svc.settings = dataclasses.replace(s, relevance_min_lexical=0.05)  # a low floor lets common words in
        assert len(await svc.search(APP, USER, "coffee with Zorblat", top_k=40)) == 31
    finally:
        await svc.close()


async def test_the_lexical_floor_still_sees_full_text_with_a_zero_full_text_weight(engine_db):
    """The floor reads the BM25 candidates' coverage, so they are fetched even when full text weighs 0."""
    weights = ScoreWeights(semantic=1.0, fulltext=0.0, recency=0.0, frequency=0.0, importance=0.0, context=0.0)
    s = MemorySettings(bump_access=False, consolidate=False, vector_search="exact", weights=weights,
                       relevance_min_lexical=0.5)
    svc = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), settings=s)
    entry = MemoryEntry(id="z1", author="user", timestamp=datetime.now(timezone.utc).isoformat(),
                        content=types.Content(parts=[types.Part.from_text(text="Zorblat fixed the boiler")]))
    try:
        await svc.add_memory(app_name=APP, user_id=USER, memories=[entry])
        await svc.flush()
        assert [h.memory_id for h in await svc.search(APP, USER, "Zorblat", top_k=5)] == ["z1"]
    finally:
        await svc.close()


@SCORING_PER_ENGINE
async def test_with_a_wide_fill_margin_an_answerable_query_ranks_as_without_the_gate(engine_db, engine, scoring):
    """The gate decides what may be returned, not how it ranks: context and version are computed
    from every candidate (when only eligible memories lent context, LoCoMo tune R@10 fell 0.746 -> 0.733)."""
    weights = ScoreWeights(semantic=0.7, fulltext=0.3, recency=0.0, frequency=0.0, importance=0.0, context=0.5)
    off = MemorySettings(bump_access=False, consolidate=False, vector_search="exact", scoring=scoring,
                         weights=weights, context_window=2)
    svc = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), settings=off)
    t0 = time.time() - 3600
    try:
        await store_trip_and_filler(svc, t0)
        query = "where did you go on vacation last summer"
        plain = await svc.search(APP, USER, query, top_k=20)
        svc.settings = dataclasses.replace(off, relevance_min_similarity=0.99, relevance_min_lexical=0.99,
                                           relevance_fill_margin=10.0)
        gated = await svc.search(APP, USER, query, top_k=20)
        assert any(h.signals.ft_cov < 0.99 and h.signals.context > 0 for h in gated)  # borrowed from the ineligible
        assert [(h.memory_id, round(h.score, 6)) for h in gated] == [(h.memory_id, round(h.score, 6)) for h in plain]
    finally:
        await svc.close()
