"""Ranking: the SQL path and the numpy (MySQL) path agree; EXPLAIN shows the HNSW index is used."""

from __future__ import annotations

import dataclasses
import random
from datetime import datetime, timedelta, timezone

import pytest
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types
from sqlalchemy import text

from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService, ScoreWeights
from adk_oceanbase.memory import search_sql as sq
from adk_oceanbase.memory.lexical import stem_text
from .engines import seekdb_only

APP, USER = "app", "u1"
WORDS = ("apple banana cherry hiking paris london kyoto dog cat piano guitar coffee tea sister brother "
         "nurse teacher flight hotel museum 苹果 香蕉 咖啡 音乐 旅行").split()
QUERIES = ["apple pie in paris", "sister is a nurse", "flight to kyoto", "coffee or tea", "piano guitar music", "苹果 咖啡"]


SEED_START = datetime(2024, 1, 1, tzinfo=timezone.utc)
"""The seed's first day, fixed: the embedded and indexed text carries each memory's date ("3 Feb 2024,
user: ..."), so a seed dated from the wall clock was different data every day, and a ranking test at
its threshold passed one day and failed the next."""


async def seed(svc: OceanBaseMemoryService, engine_db, n: int = 240) -> None:
    rng = random.Random(7)
    start = SEED_START
    memories = []
    for i in range(n):
        body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8))) + f" #{i}"
        memories.append(MemoryEntry(
            id=f"m{i:04d}", author=rng.choice(["user", "agent"]),
            timestamp=(start + timedelta(hours=rng.randint(0, 24 * 200))).isoformat(),
            content=types.Content(parts=[types.Part.from_text(text=body)]),
            custom_metadata={"importance": round(rng.random(), 3)},
        ))
    await svc.add_memory(app_name=APP, user_id=USER, memories=memories)
    await svc.flush()
    async with engine_db.engine.begin() as conn:
        await conn.execute(
            text("UPDATE agent_memories SET access_count = :c WHERE memory_id = :id"),
            [{"c": rng.choice([0, 0, 1, 3, 10, 40]), "id": f"m{i:04d}"} for i in range(n)],
        )


async def _seeded(engine_db):
    settings = MemorySettings(
        bump_access=False, consolidate=False, candidate_pool=25, vector_search="exact",
        weights=ScoreWeights(semantic=0.6, fulltext=0.3, recency=0.2, frequency=0.1, importance=0.1),
        recency_half_life_s=60 * 86400.0,
    )
    svc = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), settings=settings)
    await seed(svc, engine_db)
    return svc


@pytest.fixture
async def seeded(engine_db):
    svc = await _seeded(engine_db)
    yield svc
    await svc.close()


@pytest.fixture
async def seeded_pristine(engine_pristine_database):
    """``seeded`` on never-used tables: for comparing full-text scores across statements."""
    svc = await _seeded(engine_pristine_database)
    yield svc
    await svc.close()


@seekdb_only("compares the SQL scoring path with its numpy mirror: the SQL path needs cosine_distance (OceanBase/seekdb)")
@pytest.mark.parametrize("fusion", ["linear", "minmax", "rrf"])
async def test_sql_and_numpy_paths_rank_the_same(seeded_pristine, fusion):
    seeded = seeded_pristine
    seeded.settings = dataclasses.replace(seeded.settings, fusion=fusion)
    sql_svc = seeded
    np_settings = dataclasses.replace(sql_svc.settings, scoring="numpy")
    np_svc = OceanBaseMemoryService(database=sql_svc.database, embedder=sql_svc.embedder, settings=np_settings)
    linear = OceanBaseMemoryService(database=sql_svc.database, embedder=sql_svc.embedder,
                                    settings=dataclasses.replace(sql_svc.settings, fusion="linear"))
    try:
        compared, borrowed, tie_queries = 0, 0, 0
        # the last two ask for the user's / the agent's words (memory.asker; the seed has both authors)
        for query in QUERIES + ["what did I say about apple pie in paris", "the coffee or tea you recommended"]:
            a = await sql_svc.search(APP, USER, query, top_k=15)
            b = await np_svc.search(APP, USER, query, top_k=15)
            assert len(a) == 15 and len(b) == 15
            tied: set[str] = set()
            if fusion == "rrf":
                similarity = {h.memory_id: h.signals.semantic for h in await linear.search(APP, USER, query, top_k=100)}
                tied = float_tied(similarity)
            if not tied & {h.memory_id for h in a + b}:
                assert [h.memory_id for h in a] == [h.memory_id for h in b], query
            else:
                tie_queries += 1
            by_id = {h.memory_id: h for h in b}
            for x in a:
                y = by_id.get(x.memory_id)
                if y is None:
                    continue  # moved across the cut by a tie's rank (only where ``tied``: else the ids are equal)
                for f in ("semantic", "recency", "frequency", "fulltext", "importance", "version", "author", "score"):
                    if x.memory_id in tied and f in ("semantic", "score"):
                        assert getattr(x.signals, f) == pytest.approx(getattr(y.signals, f), abs=0.02), (query, f)
                    else:
                        assert getattr(x.signals, f) == pytest.approx(getattr(y.signals, f), abs=1e-4), (query, f)
            compared += 1
            borrowed += sum(h.signals.version > 0 for h in a)
            # The ranking is not trivially driven by one signal.
            assert len({round(h.signals.recency, 3) for h in a}) > 1
        assert compared == len(QUERIES) + 2
        assert tie_queries <= 2, tie_queries  # a tie is the exception, not what the comparison rests on
        assert borrowed > 0  # the version signal (facts lending full-text matches) was compared too
    finally:
        await np_svc.close()
        await linear.close()


def float_tied(similarity: dict[str, float], eps: float = 1e-6) -> set[str]:
    """Memories whose cosine similarity is within ``eps`` of another's.

    Why: seekdb computes ``cosine_distance`` in float32 (values ~1e-7 off numpy's), so two candidates
    whose similarities agree to that precision may take each other's rank in ``fusion="rrf"`` (ranks
    by similarity, ties by id) on one path and not the other.  Their semantic signal then differs by
    one rank step, and the ordering of the hits around them may too; nothing else may differ."""
    ordered = sorted(similarity.items(), key=lambda kv: kv[1])
    out: set[str] = set()
    for (i, x), (j, y) in zip(ordered, ordered[1:]):
        if y - x < eps:
            out |= {i, j}
    return out


@seekdb_only("approximate (HNSW) search exists on OceanBase/seekdb only; MySQL/MariaDB always scans exactly")
async def test_ann_path_recall_against_exact(seeded_pristine):
    """The HNSW path (``vector_search="ann"``) returns what the exact scan returns when its beam can
    hold every row: deterministic, where a partial beam's recall is not.

    HNSW's layer-0 search stops only once its result list of ``ef_search`` entries is full and no
    closer candidate is left; with ``ef_search`` (1000) above the rows the index holds (the 240
    seeded on never-used tables) it visits every row it can reach, so each query's top 10 must match
    the exact scan's by score.  A partial beam (``ef_search=200``) gave 5.4/6 here, a value with no
    derivable bound.  The lists have the same depth (``ann_pool`` = ``candidate_pool``), so the
    signals measured over the candidates (recency from the newest one) agree too.
    """
    seeded = seeded_pristine
    ann = OceanBaseMemoryService(
        database=seeded.database, embedder=seeded.embedder,
        settings=dataclasses.replace(seeded.settings, vector_search="ann", ef_search=1000,
                                     ann_pool=seeded.settings.candidate_pool),
    )
    now = SEED_START + timedelta(days=210)
    try:
        recall = []
        for query in QUERIES:
            exact = await seeded.search(APP, USER, query, top_k=10, now=now)
            approx = await ann.search(APP, USER, query, top_k=10, now=now)
            # Recall by score, not by id: memories with identical words have identical
            # vectors, and which of two tied rows makes the cut is arbitrary.
            cut = exact[-1].score - 1e-6
            recall.append(sum(h.score >= cut for h in approx))
        assert recall == [10] * len(QUERIES)
    finally:
        await ann.close()


async def explain(engine_db, settings: MemorySettings) -> str:
    vec = engine_db.dialect.encode_vector(HashEmbedder().embed(["apple"])[0])
    stmt, params = sq.hybrid_search(
        app_name=APP, user_id=USER, query_vector=vec, query_text="apple", embedding_model="hash-v1-384",
        now=datetime(2024, 6, 1), top_k=10, weights=settings.weights, settings=settings,
    )
    async with engine_db.engine.connect() as conn:
        await conn.execute(*sq.bind_query_vector(vec))
        rows = (await conn.execute(text("EXPLAIN " + stmt.text), params)).all()
    return "\n".join(r[0] for r in rows)


def test_the_statement_text_is_the_same_for_every_query_vector():
    """The vector comes from a session variable: one statement text, so seekdb plans it once, not per query."""
    texts = set()
    for word in ("apple", "paris"):
        vec = "[" + ",".join(f"{x:.8g}" for x in HashEmbedder().embed([word])[0]) + "]"
        stmt, params = sq.hybrid_search(
            app_name=APP, user_id=USER, query_vector=vec, query_text="appl pie", embedding_model="hash-v1-384",
            now=datetime(2024, 6, 1), top_k=10, weights=MemorySettings().weights, settings=MemorySettings(),
        )
        texts.add(stmt.text)
        assert vec not in stmt.text and vec not in params.values()
    assert len(texts) == 1


@seekdb_only("the plan's vector index exists on OceanBase/seekdb only")
async def test_explain_uses_vector_index_for_ann_candidates(seeded, engine_db):
    plan = await explain(engine_db, MemorySettings(vector_search="ann"))
    assert "VECTOR INDEX" in plan, plan
    # the full-text candidates come from the user's postings (memory_terms), not the table-wide MATCH
    assert "TEXT RETRIEVAL" not in plan, plan
    assert any("RANGE SCAN" in line and "|p " in line for line in plan.splitlines()), plan  # a PK range per term
    assert "ix_memories_user_terms" in plan, plan  # N and mean length from the index alone
    exact_plan = await explain(engine_db, MemorySettings(vector_search="exact"))
    assert "VECTOR INDEX" not in exact_plan, exact_plan


async def test_fulltext_only_when_the_query_embedding_fails(seeded):
    class Broken(HashEmbedder):
        def embed(self, texts):
            raise RuntimeError("model down")

    svc = OceanBaseMemoryService(database=seeded.database, embedder=Broken(), settings=seeded.settings)
    try:
        hits = await svc.search(APP, USER, "kyoto", top_k=5)
        assert hits and all(h.signals.semantic == 0 for h in hits)
        assert all("kyoto" in h.entry.content.parts[0].text for h in hits)
    finally:
        await svc.close()


async def test_zero_fulltext_weight_skips_fulltext_candidates_on_both_paths(seeded):
    np_svc = OceanBaseMemoryService(database=seeded.database, embedder=seeded.embedder,
                                    settings=dataclasses.replace(seeded.settings, scoring="numpy"))
    try:
        with_ft = await seeded.search(APP, USER, "苹果 咖啡", top_k=10)
        assert any(h.signals.fulltext > 0 for h in with_ft)
        a = await seeded.search(APP, USER, "苹果 咖啡", top_k=10, weights={"fulltext": 0.0})
        b = await np_svc.search(APP, USER, "苹果 咖啡", top_k=10, weights={"fulltext": 0.0})
        assert [h.memory_id for h in a] == [h.memory_id for h in b]
        assert all(h.signals.fulltext == 0 for h in a + b)
    finally:
        await np_svc.close()


@seekdb_only("compares the SQL scoring path with its numpy mirror: the SQL path needs cosine_distance (OceanBase/seekdb)")
async def test_recency_is_measured_from_the_newest_candidate_on_both_paths(seeded):
    """The newest candidate gets 1.0 however old everything is; ``recency_reference="now"`` keeps absolute age."""
    np_svc = OceanBaseMemoryService(database=seeded.database, embedder=seeded.embedder,
                                    settings=dataclasses.replace(seeded.settings, scoring="numpy"))
    later = datetime.now(timezone.utc) + timedelta(days=3650)  # ten years on: absolute recency ~0 for all
    try:
        for svc in (seeded, np_svc):
            hits = await svc.search(APP, USER, "flight to kyoto", top_k=100, now=later)  # every candidate
            assert max(h.signals.recency for h in hits) == pytest.approx(1.0)
            assert len({round(h.signals.recency, 3) for h in hits}) > 5
            today = await svc.search(APP, USER, "flight to kyoto", top_k=100)
            assert [h.memory_id for h in today] == [h.memory_id for h in hits]
        absolute = dataclasses.replace(seeded.settings, recency_reference="now")
        for scoring in ("sql", "numpy"):
            svc = OceanBaseMemoryService(database=seeded.database, embedder=seeded.embedder,
                                         settings=dataclasses.replace(absolute, scoring=scoring))
            try:
                hits = await svc.search(APP, USER, "flight to kyoto", top_k=100, now=later)
                assert max(h.signals.recency for h in hits) < 1e-10
            finally:
                await svc.close()
    finally:
        await np_svc.close()


def test_fulltext_query_drops_english_function_words_and_stems_like_the_index():
    assert sq.fulltext_query("When did Caroline go to the LGBTQ support groups?") == "carolin go lgbtq support group"
    assert sq.fulltext_query("苹果 咖啡 in Paris") == "苹果 咖啡 paris"
    assert sq.fulltext_query("what is it?") == "what is it"  # nothing but stopwords: every word kept
    assert sq.fulltext_query("the painting", drop_stopwords=False) == "the paint"
    # the query and the indexed text meet on the same keys
    assert set(sq.fulltext_query("What did Melanie paint?").split()) <= set(stem_text("8 May 2023, Melanie: I painted a lake").split())
