"""The MySQL/MariaDB path: vectors as bytes, numpy scoring after an SQL prefilter, same answers as seekdb."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types
from sqlalchemy import text

from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService, ScoreWeights

APP, USER = "app", "u1"
WORDS = "apple banana hiking paris kyoto dog piano coffee tea sister nurse flight museum 苹果 咖啡 旅行".split()


def corpus(n: int = 120) -> list[MemoryEntry]:
    rng = random.Random(3)
    start = datetime(2025, 1, 1, tzinfo=timezone.utc)
    return [
        MemoryEntry(
            id=f"m{i:03d}",
            author="user",
            timestamp=(start + timedelta(hours=7 * i)).isoformat(),
            content=types.Content(parts=[types.Part.from_text(text=" ".join(rng.choice(WORDS) for _ in range(5)) + f" #{i}")]),
            custom_metadata={"importance": round(rng.random(), 2)},
        )
        for i in range(n)
    ]


SETTINGS = MemorySettings(
    bump_access=False,
    consolidate=False,
    vector_search="exact",
    # full-text scores are engine-specific (InnoDB vs OceanBase relevance), so
    # compare the signals both engines compute identically
    weights=ScoreWeights(semantic=0.7, fulltext=0.0, recency=0.2, frequency=0.0, importance=0.1),
)


async def ranked(database, queries: list[str]) -> dict[str, list[tuple[str, float]]]:
    svc = OceanBaseMemoryService(database=database, embedder=HashEmbedder(), settings=SETTINGS)
    try:
        await svc.add_memory(app_name=APP, user_id=USER, memories=corpus())
        await svc.flush()
        out = {}
        now = datetime(2025, 3, 1, tzinfo=timezone.utc)
        for qtext in queries:
            hits = await svc.search(APP, USER, qtext, top_k=8, filters={"until": now})
            out[qtext] = [(h.memory_id, round(h.signals.semantic, 4)) for h in hits]
        return out
    finally:
        await svc.close()


async def test_mariadb_stores_vectors_as_bytes_and_ranks_like_seekdb(database, mariadb_database):
    assert mariadb_database.dialect.native_vectors is False
    queries = ["apple in paris", "sister nurse", "苹果 咖啡", "flight to kyoto"]
    on_maria = await ranked(mariadb_database, queries)
    on_seekdb = await ranked(database, queries)
    assert all(len(v) == 8 for v in on_maria.values())
    maria_ids = {q: [i for i, _ in v] for q, v in on_maria.items()}
    seekdb_ids = {q: [i for i, _ in v] for q, v in on_seekdb.items()}
    assert maria_ids == seekdb_ids
    async with mariadb_database.engine.connect() as conn:
        raw = (await conn.execute(text("SELECT embedding, embedding_dim FROM agent_memories LIMIT 1"))).one()
    assert isinstance(raw.embedding, bytes) and len(raw.embedding) == 4 * raw.embedding_dim == 4 * 384


async def test_mariadb_fulltext_and_delete(mariadb_database):
    svc = OceanBaseMemoryService(database=mariadb_database, embedder=HashEmbedder(), settings=MemorySettings(bump_access=True))
    try:
        await svc.add_memory(
            app_name=APP,
            user_id=USER,
            memories=[MemoryEntry(author="user", content=types.Content(parts=[types.Part.from_text(text=t)])) for t in
                      ("I love green tea", "My dog is called Rex", "My sister is a nurse in Lisbon")],
        )
        await svc.flush()
        res = await svc.search_memory(app_name=APP, user_id=USER, query="what is the dog called?")
        assert res.memories[0].content.parts[0].text == "My dog is called Rex"
        assert res.memories[0].custom_metadata["scores"]["fulltext"] > 0
        async with mariadb_database.engine.connect() as conn:
            bumped = (await conn.execute(text("SELECT access_count FROM agent_memories WHERE content LIKE '%Rex%'"))).scalar()
        assert bumped == 1
        await svc.delete_memory(app_name=APP, user_id=USER, memory_id=res.memories[0].id)
        again = await svc.search_memory(app_name=APP, user_id=USER, query="what is the dog called?")
        assert all("Rex" not in m.content.parts[0].text for m in again.memories)
    finally:
        await svc.close()
