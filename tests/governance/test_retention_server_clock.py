"""Expiry follows when the server last wrote or served a row, never a time the caller supplied (issue 33)."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from adk_oceanbase import OceanBaseSessionService
from adk_oceanbase.governance import Retention, RetentionPolicy, sweep
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService

from .retention_helpers import DAY, db, execute, rows, scalar, turn, utc  # noqa: F401  (db: the two-engine fixture)

APP = "clock"
SESSIONS_30D = RetentionPolicy(Retention(session_ttl="30d"))
MEMORIES_180D = RetentionPolicy(Retention(memory_ttl="180d"))


def old_entry(said: str, age_days: float) -> MemoryEntry:
    ts = datetime.now(timezone.utc) - timedelta(days=age_days)
    return MemoryEntry(author="user", timestamp=ts.isoformat(), content=types.Content(parts=[types.Part(text=said)]))


async def test_a_session_appended_to_now_survives_an_old_client_timestamp(db):
    svc = OceanBaseSessionService(database=db)
    s = await svc.create_session(app_name=APP, user_id="u")
    await svc.append_event(s, turn("a message my client dated 40 days ago", time.time() - 40 * DAY))
    assert (await sweep(db, SESSIONS_30D)).sessions == 0
    assert await svc.get_session(app_name=APP, user_id="u", session_id=s.id) is not None

    # the same session, really untouched for 40 days (its server time set with SQL), does expire
    await execute(db, "UPDATE agent_sessions SET touched_at = :t WHERE app_name = :a", t=utc(time.time() - 40 * DAY), a=APP)
    assert (await sweep(db, SESSIONS_30D)).sessions == 1
    assert await svc.get_session(app_name=APP, user_id="u", session_id=s.id) is None


async def test_writes_touch_a_session_and_reads_do_not(db):
    """create and append set touched_at from the database clock; get_session and list_sessions leave it."""
    svc = OceanBaseSessionService(database=db)
    s = await svc.create_session(app_name=APP, user_id="u")
    back = utc(time.time() - 40 * DAY)
    await execute(db, "UPDATE agent_sessions SET touched_at = :t WHERE app_name = :a", t=back, a=APP)
    s = await svc.get_session(app_name=APP, user_id="u", session_id=s.id)
    await svc.list_sessions(app_name=APP, user_id="u")
    assert await scalar(db, "SELECT touched_at FROM agent_sessions WHERE app_name = :a", a=APP) == back
    await svc.append_event(s, turn("back again, with a client clock far in the future", time.time() + 400 * DAY))
    touched = await scalar(db, "SELECT touched_at FROM agent_sessions WHERE app_name = :a", a=APP)
    db_now = await scalar(db, "SELECT UTC_TIMESTAMP(6)")
    assert abs((db_now - touched).total_seconds()) < DAY  # the server's day, not the event's (+400 d) nor the old one
    assert (await sweep(db, SESSIONS_30D, now=time.time() + 29 * DAY)).sessions == 0
    assert (await sweep(db, SESSIONS_30D, now=time.time() + 31 * DAY)).sessions == 1


async def test_a_memory_stored_now_survives_its_sources_old_date(db):
    sessions = OceanBaseSessionService(database=db)
    memory = OceanBaseMemoryService(database=db, embedder=HashEmbedder(), settings=MemorySettings(bump_access=False))
    try:
        await memory.add_memory(app_name=APP, user_id="u", memories=[old_entry("the user kept a parrot named Kiwi", 400)])
        s = await sessions.create_session(app_name=APP, user_id="u")
        await sessions.append_event(s, turn("I have spoken Portuguese at home all my life", time.time() - 400 * DAY))
        await memory.add_session_to_memory(await sessions.get_session(app_name=APP, user_id="u", session_id=s.id))
        await memory.flush()
        assert await scalar(db, "SELECT COUNT(*) FROM agent_memories WHERE app_name = :a AND created_at < :t",
                            a=APP, t=utc(time.time() - 300 * DAY)) == 2  # created_at stays the source's time
        assert (await sweep(db, MEMORIES_180D)).memories == 0
        assert await scalar(db, "SELECT COUNT(*) FROM agent_memories WHERE app_name = :a", a=APP) == 2
        assert (await sweep(db, MEMORIES_180D, now=time.time() + 181 * DAY)).memories == 2
    finally:
        await memory.close()


async def test_serving_a_memory_extends_its_life_on_the_servers_clock(db):
    """A search that counts (and ADK's search_memory, always) stamps last_served_at; its replay clock does not."""
    memory = OceanBaseMemoryService(database=db, embedder=HashEmbedder(),
                                    settings=MemorySettings(bump_access=False, search_memory_counts_access=False,
                                                            search_memory_top_k=1))
    try:
        await memory.add_memory(app_name=APP, user_id="u", memories=[
            old_entry("the user kept a parrot named Kiwi", 1), old_entry("the user collects old maps of Lisbon", 1),
            old_entry("the user plays the cello on Sundays", 1)])
        await memory.flush()
        await execute(db, "UPDATE agent_memories SET stored_at = :t WHERE app_name = :a", t=utc(time.time() - 200 * DAY), a=APP)

        replay = datetime(2020, 1, 1)  # a replay's clock: ranks and stamps last_accessed_at, not retention
        await memory.search(APP, "u", "parrot Kiwi", top_k=1, bump_access=True, now=replay)
        await memory.search_memory(app_name=APP, user_id="u", query="cello Sundays")
        await memory.search(APP, "u", "maps Lisbon", top_k=3, bump_access=False)  # a look-up: leaves no trace

        served = {r[0] for r in await rows(db, "SELECT content FROM agent_memories WHERE app_name = :a "
                                               "AND last_served_at IS NOT NULL", a=APP)}
        assert served == {"the user kept a parrot named Kiwi", "the user plays the cello on Sundays"}
        assert await scalar(db, "SELECT last_accessed_at FROM agent_memories WHERE content LIKE '%Kiwi%'") == replay
        assert await scalar(db, "SELECT access_count FROM agent_memories WHERE content LIKE '%cello%'") == 0
        counts = await sweep(db, MEMORIES_180D)
        kept = {r[0] for r in await rows(db, "SELECT content FROM agent_memories WHERE app_name = :a", a=APP)}
        assert kept == served and counts.memories == 1
    finally:
        await memory.close()


async def test_a_repeat_stores_a_memory_anew(db):
    """The user saying it again (a merged exact duplicate) is a write: the row's retention restarts."""
    memory = OceanBaseMemoryService(database=db, embedder=HashEmbedder(), settings=MemorySettings(bump_access=False))
    try:
        said = "I am allergic to peanuts, please remember it."
        first, again = turn(said, time.time() - 300 * DAY), turn(said, time.time() - 250 * DAY)
        await memory.add_events_to_memory(app_name=APP, user_id="u", events=[first])
        long_ago = utc(time.time() - 300 * DAY)
        await execute(db, "UPDATE agent_memories SET stored_at = :t WHERE app_name = :a", t=long_ago, a=APP)
        await memory.add_events_to_memory(app_name=APP, user_id="u", events=[again])
        assert await scalar(db, "SELECT occurrences FROM agent_memories WHERE app_name = :a", a=APP) == 2
        assert (await sweep(db, MEMORIES_180D)).memories == 0
        # re-ingesting events the row already holds is no repeat: nothing is stored anew
        await execute(db, "UPDATE agent_memories SET stored_at = :t WHERE app_name = :a", t=long_ago, a=APP)
        await memory.add_events_to_memory(app_name=APP, user_id="u", events=[first, again])
        assert await scalar(db, "SELECT stored_at FROM agent_memories WHERE app_name = :a", a=APP) == long_ago
        assert (await sweep(db, MEMORIES_180D)).memories == 1
    finally:
        await memory.close()
