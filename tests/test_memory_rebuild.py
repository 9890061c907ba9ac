"""``rebuild_vector_index()`` after a bulk load: it waits for the upkeep's rebuild, and compacts (seekdb).

seekdb (OceanBase) only where the index is concerned; on MariaDB the call answers ``False`` and
touches nothing (also asserted in test_memory_service.py).
"""

from __future__ import annotations

import random

import pytest

from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from adk_oceanbase import gateway
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService
from adk_oceanbase.memory import queries as q

APP = "app"
WORDS = "apple banana cherry hiking paris london kyoto dog cat piano guitar coffee tea sister nurse flight".split()


def _entries(n: int, seed: int) -> list[MemoryEntry]:
    rng = random.Random(seed)
    return [
        MemoryEntry(id=f"m{i}", author="user", content=types.Content(parts=[types.Part.from_text(
            text=" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 7))) + f" #{i}")]))
        for i in range(n)
    ]


@pytest.mark.timeout(900)  # a compaction round covers every database of the test server: minutes when loaded
async def test_rebuild_waits_for_the_upkeeps_rebuild_then_compacts(database):
    """The upkeep's own rebuild is running when the caller asks: no 4179, one compaction round after."""
    # index_upkeep_rows=1 and delta rate 0: every stored batch starts a real REBUILD_INDEX in the background
    svc = OceanBaseMemoryService(database=database, embedder=HashEmbedder(), settings=MemorySettings(
        bump_access=False, consolidate=False, index_upkeep_rows=1, index_upkeep_delta_rate=0.0))
    try:
        await svc.add_memory(app_name=APP, user_id="u", memories=_entries(300, 1))
        await svc.flush()
        async with gateway.connection(database) as conn:
            frozen_before = (await conn.execute(q.MAJOR_COMPACTION_STATE)).first()[0]
        svc.vectorizer.upkeep.stored(1)  # one more check, started now, still running below
        assert svc.vectorizer.upkeep.running
        assert await svc.rebuild_vector_index() is True
        stats = svc.vectorizer.upkeep.describe()
        assert not stats["running"] and stats["compactions"] == 1 and not stats["compact_failed"], stats
        async with gateway.connection(database) as conn:
            frozen, merged, status = (await conn.execute(q.MAJOR_COMPACTION_STATE)).first()
        assert int(frozen) > int(frozen_before) and int(merged) >= int(frozen) and status == "IDLE"
        hits = await svc.search(APP, "u", "apple pie in paris", top_k=5)
        assert len(hits) == 5
    finally:
        await svc.close()


async def test_rebuild_on_mariadb_answers_false_and_compacts_nothing(mariadb_database):
    svc = OceanBaseMemoryService(database=mariadb_database, embedder=HashEmbedder(),
                                 settings=MemorySettings(bump_access=False, consolidate=False))
    try:
        await svc.add_memory(app_name=APP, user_id="u", memories=_entries(5, 2))
        await svc.flush()
        assert await svc.rebuild_vector_index() is False
        stats = svc.vectorizer.upkeep.describe()
        assert not stats["compactions"] and not stats["compact_failed"]
    finally:
        await svc.close()
