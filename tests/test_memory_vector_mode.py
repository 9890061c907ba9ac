"""``vector_search="auto"``: small users are scanned exactly, big ones use the HNSW index (seekdb).

seekdb (OceanBase) only, on the ``database`` fixture: MySQL/MariaDB have no vector index
(``rebuild_vector_index`` answers ``False`` there, asserted in test_memory_service.py).
"""

from __future__ import annotations

import dataclasses
import random
from datetime import datetime

import pytest
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types
from sqlalchemy import text

from adk_oceanbase.errors import ConfigurationError
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService
from adk_oceanbase.memory import search_sql as sq

APP = "app"
WORDS = "apple banana cherry hiking paris london kyoto dog cat piano guitar coffee tea sister nurse flight".split()
QUERIES = ["apple pie in paris", "sister is a nurse", "flight to kyoto", "coffee or tea"]


async def _add(svc: OceanBaseMemoryService, user: str, n: int, seed: int) -> None:
    rng = random.Random(seed)
    await svc.add_memory(app_name=APP, user_id=user, memories=[
        MemoryEntry(id=f"{user}-{i}", author="user", content=types.Content(parts=[types.Part.from_text(
            text=" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 7))) + f" #{i}")]))
        for i in range(n)
    ])
    await svc.flush()


def _vector_depth(settings: MemorySettings, *, approximate: bool, top_k: int) -> int:
    """The LIMIT of the statement's vector candidate list."""
    _, params = sq.hybrid_search(
        app_name=APP, user_id="u", query_vector="[0]", query_text="", embedding_model="m", now=datetime(2024, 6, 1),
        top_k=top_k, weights=settings.weights, settings=settings, approximate=approximate,
    )
    return params["apool"]


def _spy(monkeypatch) -> list[bool | None]:
    seen: list[bool | None] = []
    real = sq.hybrid_search

    def spy(**kw):
        seen.append(kw.get("approximate"))
        return real(**kw)

    monkeypatch.setattr(sq, "hybrid_search", spy)
    return seen


async def test_auto_scans_small_users_exactly_and_big_users_through_the_index(database, monkeypatch):
    settings = MemorySettings(bump_access=False, consolidate=False, candidate_pool=20, exact_scan_rows=60,
                              fulltext_overfetch_rows=40)
    assert MemorySettings().vector_search == "auto"
    svc = OceanBaseMemoryService(database=database, embedder=HashEmbedder(), settings=settings)
    exact = OceanBaseMemoryService(database=database, embedder=HashEmbedder(),
                                   settings=dataclasses.replace(settings, vector_search="exact"))
    try:
        await _add(svc, "small", 30, 1)
        await _add(svc, "big", 90, 2)
        seen = _spy(monkeypatch)
        for query in QUERIES:
            auto_hits = await svc.search(APP, "small", query, top_k=10)
            exact_hits = await exact.search(APP, "small", query, top_k=10)
            # the same statement as the exact mode: the same answer, whatever the index holds
            assert [h.memory_id for h in auto_hits] == [h.memory_id for h in exact_hits], query
        assert seen and all(a is False for a in seen), seen
        seen.clear()
        hits = await svc.search(APP, "big", "apple pie in paris", top_k=10)
        assert seen == [True] and len(hits) == 10
        assert all(h.memory_id.startswith("big-") for h in hits)
        # counted no further than the larger of exact_scan_rows and fulltext_overfetch_rows: enough to pick both
        # modes (the vector scan, the full-text list)
        assert (await svc.retriever.profile(APP, "big")).rows == 60 and (await svc.retriever.profile(APP, "small")).rows == 30
        wide = OceanBaseMemoryService(database=database, embedder=HashEmbedder(),
                                      settings=dataclasses.replace(settings, fulltext_overfetch_rows=80))
        try:
            assert (await wide.retriever.profile(APP, "big")).rows == 80
        finally:
            await wide.close()
    finally:
        await svc.close()
        await exact.close()


async def test_auto_takes_the_index_for_a_user_owning_most_of_the_table(database, monkeypatch):
    """Below ``exact_scan_rows``, a user holding ``ann_owner_share`` of the table is searched through the index."""
    settings = MemorySettings(bump_access=False, consolidate=False, candidate_pool=20, exact_scan_rows=1000,
                              ann_owner_share=0.5, ann_owner_min_rows=20)
    svc = OceanBaseMemoryService(database=database, embedder=HashEmbedder(), settings=settings)
    try:
        await _add(svc, "owner", 40, 4)
        await _add(svc, "tiny", 10, 5)   # owns 10 of 50 rows, and under ann_owner_min_rows
        seen: list[tuple[bool, bool]] = []
        real = sq.hybrid_search
        monkeypatch.setattr(sq, "hybrid_search", lambda **kw: seen.append((kw["approximate"], kw["ann_post_filter"]))
                            or real(**kw))
        hits = await svc.search(APP, "owner", "apple pie in paris", top_k=10)
        await svc.search(APP, "tiny", "apple pie in paris", top_k=5)
        assert seen == [(True, True), (False, False)] and len(hits) == 10 and all(h.memory_id.startswith("owner-") for h in hits)
        profile = await svc.retriever.profile(APP, "owner")
        # counted just past rows / share: 40 / 0.5 + 1 = 81 would be the cap; the table holds 50
        assert (profile.rows, profile.table_rows) == (40, 50)
        assert (await svc.retriever.profile(APP, "tiny")).table_rows is None  # under ann_owner_min_rows: not counted
    finally:
        await svc.close()
    # Another user grows past the owner's share: the owner goes back to the exact scan (new profile).
    other = OceanBaseMemoryService(database=database, embedder=HashEmbedder(), settings=settings)
    try:
        await _add(other, "other", 45, 6)
        seen.clear()
        await other.search(APP, "owner", "apple pie in paris", top_k=10)
        assert seen == [(False, False)]
        assert (await other.retriever.profile(APP, "owner")).table_rows == 81  # capped
        assert MemorySettings(ann_owner_share=1).ann_owner_share == 1
        with pytest.raises(ConfigurationError):
            MemorySettings(ann_owner_share=0)
        with pytest.raises(ConfigurationError):
            MemorySettings(ann_owner_share=1.5)
    finally:
        await other.close()


async def test_explicit_modes_override_the_row_count(database, monkeypatch):
    base = MemorySettings(bump_access=False, consolidate=False, exact_scan_rows=10**9)
    svc = OceanBaseMemoryService(database=database, embedder=HashEmbedder(), settings=base)
    ann = OceanBaseMemoryService(database=database, embedder=HashEmbedder(),
                                 settings=dataclasses.replace(base, vector_search="ann"))
    try:
        await _add(svc, "u", 20, 3)
        seen = _spy(monkeypatch)
        await svc.search(APP, "u", "coffee", top_k=5)
        await ann.search(APP, "u", "coffee", top_k=5)
        assert seen == [False, True]
    finally:
        await svc.close()
        await ann.close()


async def _plan(database, query_text: str, **kw) -> str:
    """EXPLAIN of the hybrid statement for user ``u`` and the query "apple"."""
    vec = database.dialect.encode_vector(HashEmbedder().embed(["apple"])[0])
    stmt, params = sq.hybrid_search(
        app_name=APP, user_id="u", query_vector=vec, query_text=query_text, embedding_model="hash-v1-384",
        now=datetime(2024, 6, 1), top_k=10, weights=MemorySettings().weights, settings=MemorySettings(), **kw,
    )
    async with database.engine.connect() as conn:
        await conn.execute(*sq.bind_query_vector(vec))
        return "\n".join(r[0] for r in (await conn.execute(text("EXPLAIN " + stmt.text), params)).all())


async def test_the_exact_statement_scans_the_users_key_range(database):
    """EXPLAIN: the exact form reads the user's primary-key range, never the vector index."""
    plans = {approximate: await _plan(database, "", approximate=approximate) for approximate in (False, True)}
    assert "VECTOR INDEX" in plans[True], plans[True]
    assert "VECTOR INDEX" not in plans[False] and "TABLE RANGE SCAN" in plans[False], plans[False]


async def test_the_owners_index_search_is_post_filtered(database):
    """EXPLAIN: ``ann_post_filter`` makes seekdb walk the graph and filter (it picks a pre-filter scan of
    every row in the filter for a small table); without it, the plan is the server's choice."""
    svc = OceanBaseMemoryService(database=database, embedder=HashEmbedder(),
                                 settings=MemorySettings(bump_access=False, consolidate=False))
    try:
        await _add(svc, "u", 30, 7)
    finally:
        await svc.close()
    plans = {post: await _plan(database, "apple", approximate=True, ann_post_filter=post) for post in (False, True)}
    assert "POST-ITERATIVE-FILTER" in plans[True], plans[True]
    assert "POST-ITERATIVE-FILTER" not in plans[False], plans[False]  # 30 rows: the server's pick is a pre-filter scan


async def test_the_index_path_takes_ann_pool_vector_candidates_and_the_exact_scan_candidate_pool(database):
    """``ann_pool`` is the HNSW list's depth only (at least top_k); ``None`` falls back to ``candidate_pool``;
    bad values are refused."""
    base = MemorySettings(bump_access=False, consolidate=False, candidate_pool=20, ann_pool=5)
    svcs = {
        name: OceanBaseMemoryService(database=database, embedder=HashEmbedder(), settings=dataclasses.replace(base, **kw))
        for name, kw in (("ann", {"vector_search": "ann"}), ("ann_unset", {"vector_search": "ann", "ann_pool": None}),
                         ("exact", {"vector_search": "exact"}))
    }
    try:
        await _add(svcs["ann"], "u", 40, 4)
        # no query word is in any memory: the vector list is the only candidate list
        counts = {name: len(await svc.search(APP, "u", "zzqx wvvy", top_k=4)) for name, svc in svcs.items()}
        assert counts == {"ann": 4, "ann_unset": 4, "exact": 4}, counts
        depth = {name: _vector_depth(svc.settings, approximate=name != "exact", top_k=4) for name, svc in svcs.items()}
        assert depth == {"ann": 5, "ann_unset": 20, "exact": 20}, depth
        # asked for more hits than ann_pool: the HNSW list takes top_k (30 of the 40 memories), the exact
        # scan keeps candidate_pool (20)
        counts = {name: len(await svc.search(APP, "u", "zzqx wvvy", top_k=30)) for name, svc in svcs.items()}
        assert counts == {"ann": 30, "ann_unset": 20, "exact": 20}, counts
    finally:
        for svc in svcs.values():
            await svc.close()
    for bad in (0, -1, 2.5, True, "100"):
        with pytest.raises(ConfigurationError):
            MemorySettings(ann_pool=bad)
