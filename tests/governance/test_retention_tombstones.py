"""A memory its user deleted never comes back: the sweep keeps its tombstone while any source event is stored (issue 33)."""

from __future__ import annotations

import time

from adk_oceanbase import OceanBaseSessionService
from adk_oceanbase.governance import Retention, RetentionPolicy, sweep
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService

from .retention_helpers import DAY, db, execute, rows, scalar, turn  # noqa: F401  (db: the two-engine fixture)

APP = "tomb"
LOCKER = "Please remember that my locker code is 4711 at the gym."
POLICY = RetentionPolicy(Retention(memory_ttl="180d"))


def services(db):
    sessions = OceanBaseSessionService(database=db)
    memory = OceanBaseMemoryService(database=db, embedder=HashEmbedder(), settings=MemorySettings(bump_access=False))
    return sessions, memory


async def session_with(sessions, user: str, *said: str, ts: float | None = None):
    s = await sessions.create_session(app_name=APP, user_id=user)
    for i, text in enumerate(said):
        await sessions.append_event(s, turn(text, None if ts is None else ts + i))
    return await sessions.get_session(app_name=APP, user_id=user, session_id=s.id)


async def locker_id(db, user: str) -> str:
    return await scalar(db, "SELECT memory_id FROM agent_memories WHERE app_name = :a AND user_id = :u "
                            "AND (content LIKE '%locker%' OR embed_status = 'deleted')", a=APP, u=user)


async def served(memory, user: str) -> list[str]:
    hits = await memory.search(APP, user, "locker code gym", top_k=10, bump_access=False)
    return [h.entry.content.parts[0].text for h in hits]


async def test_re_ingesting_a_live_session_after_a_sweep_does_not_resurrect(db):
    sessions, memory = services(db)
    try:
        s = await session_with(sessions, "u", LOCKER, "I moved to Porto in May and I love it there.")
        await memory.add_session_to_memory(s)
        await memory.flush()
        mid = await locker_id(db, "u")
        await memory.delete_memory(app_name=APP, user_id="u", memory_id=mid)

        counts = await sweep(db, POLICY, now=time.time() + 200 * DAY)  # long after the deletion
        await memory.add_session_to_memory(s)
        await memory.flush()
        assert await rows(db, "SELECT embed_status FROM agent_memories WHERE app_name = :a AND memory_id = :m",
                          a=APP, m=mid) == [("deleted",)]
        assert await scalar(db, "SELECT COUNT(*) FROM agent_memories WHERE app_name = :a AND content LIKE '%locker%'",
                            a=APP) == 0
        assert not any("locker" in t for t in await served(memory, "u"))
        assert counts.tombstones_kept == 1  # its session is stored: re-ingesting it would re-create it
        assert counts.memories == 1  # the other memory, never served, did expire (and may come back: not deleted by its user)

        # once the session is gone nothing can re-create it: the tombstone expires with its own TTL
        await sessions.delete_session(app_name=APP, user_id="u", session_id=s.id)
        counts = await sweep(db, POLICY, now=time.time() + 200 * DAY)
        assert counts.tombstones_kept == 0
        assert await scalar(db, "SELECT COUNT(*) FROM agent_memories WHERE app_name = :a AND memory_id = :m",
                            a=APP, m=mid) == 0
    finally:
        await memory.close()


async def test_a_merged_tombstone_is_kept_by_any_of_its_sessions(db):
    """A repeat said in two sessions is one row named after the newer one; deleting that session is not enough."""
    sessions, memory = services(db)
    try:
        first = await session_with(sessions, "u", LOCKER, ts=time.time() - 2 * DAY)
        second = await session_with(sessions, "u", LOCKER)
        for s in (first, second):
            await memory.add_session_to_memory(s)
        await memory.flush()
        [(mid, session_id)] = await rows(db, "SELECT memory_id, session_id FROM agent_memories WHERE app_name = :a",
                                         a=APP)
        assert session_id == second.id
        await memory.delete_memory(app_name=APP, user_id="u", memory_id=mid)
        await sessions.delete_session(app_name=APP, user_id="u", session_id=second.id)

        counts = await sweep(db, POLICY, now=time.time() + 200 * DAY)
        await memory.add_session_to_memory(first)
        await memory.flush()
        assert await rows(db, "SELECT embed_status FROM agent_memories WHERE app_name = :a", a=APP) == [("deleted",)]
        assert await served(memory, "u") == []
        assert (counts.memories, counts.tombstones_kept) == (0, 1)  # the first session still holds one of its events
    finally:
        await memory.close()


async def test_a_tombstone_counts_its_ttl_from_the_deletion(db):
    """Not from its source's time: a memory of a year-old conversation deleted today keeps its tombstone 180 days."""
    sessions, memory = services(db)
    try:
        s = await session_with(sessions, "u", LOCKER, ts=time.time() - 400 * DAY)
        await memory.add_session_to_memory(s)
        await memory.flush()
        mid = await locker_id(db, "u")
        await sessions.delete_session(app_name=APP, user_id="u", session_id=s.id)
        await memory.delete_memory(app_name=APP, user_id="u", memory_id=mid)

        assert (await sweep(db, POLICY)).memories == 0  # deleted seconds ago, by the database clock
        assert await scalar(db, "SELECT COUNT(*) FROM agent_memories WHERE app_name = :a", a=APP) == 1
        assert (await sweep(db, POLICY, now=time.time() + 181 * DAY)).memories == 1
        assert await scalar(db, "SELECT COUNT(*) FROM agent_memories WHERE app_name = :a", a=APP) == 0
    finally:
        await memory.close()


async def test_a_dry_run_counts_what_the_sweep_keeps_and_deletes(db):
    sessions, memory = services(db)
    try:
        s = await session_with(sessions, "u", LOCKER)
        await memory.add_session_to_memory(s)
        await memory.flush()
        await memory.delete_memory(app_name=APP, user_id="u", memory_id=await locker_id(db, "u"))
        dry = await sweep(db, POLICY, dry_run=True, now=time.time() + 200 * DAY, memory_batch=1)
        assert dry.memories == 0
        assert dry.tombstones_kept == 1
        assert await scalar(db, "SELECT COUNT(*) FROM agent_memories WHERE app_name = :a", a=APP) == 1
    finally:
        await memory.close()
