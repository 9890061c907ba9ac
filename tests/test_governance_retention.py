"""Retention: per-app TTLs for sessions and memories, bounded batches, dry runs, the CLI and the background worker."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timedelta, timezone

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types
from sqlalchemy import text

from adk_oceanbase import OceanBaseSessionService, ValidationError
from adk_oceanbase.cli import main as cli_main
from adk_oceanbase.governance import (
    DebugArchiveSettings,
    Retention,
    RetentionPolicy,
    RetentionWorker,
    parse_duration,
    sweep,
)
from adk_oceanbase.governance import queries as gq
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService

DAY = 86400.0
NOW = time.time()


@pytest.fixture(params=["seekdb", "mariadb"])
def db(request):
    return request.getfixturevalue("database" if request.param == "seekdb" else "mariadb_database")


def turn(said: str, ts: float, delta: dict | None = None) -> Event:
    return Event(author="user", invocation_id="inv", timestamp=ts, content=types.Content(role="user", parts=[types.Part(text=said)]),
                 actions=EventActions(state_delta=delta or {}))


def utc(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=timezone.utc).replace(tzinfo=None)


async def session_aged(svc: OceanBaseSessionService, app: str, user: str, age_days: float, events: int = 2) -> str:
    """A session the server last wrote ``age_days`` ago: retention counts from ``touched_at`` (set here with SQL),
    not from its events' own timestamps (issue 33), which are dated the same for realism."""
    s = await svc.create_session(app_name=app, user_id=user, state={"topic": "x", "user:lang": "pt"})
    for i in range(events):
        await svc.append_event(s, turn(f"message number {i} of this session", NOW - age_days * DAY + i, {"temp:t": i, f"k{i}": i}))
    async with svc.database.engine.begin() as conn:
        await conn.execute(text("UPDATE agent_sessions SET touched_at = :t WHERE app_name = :a AND user_id = :u "
                                "AND session_id = :s"), {"t": utc(NOW - age_days * DAY), "a": app, "u": user, "s": s.id})
    return s.id


async def count(db, table: str, where: str = "1=1") -> int:
    async with db.engine.connect() as conn:
        return int((await conn.execute(text(f"SELECT COUNT(*) FROM {table} WHERE {where}"))).scalar())


def mem(said: str, age_days: float) -> MemoryEntry:
    ts = datetime.now(timezone.utc) - timedelta(days=age_days)
    return MemoryEntry(id=said.replace(" ", "_")[:60], author="user", timestamp=ts.isoformat(),
                       content=types.Content(parts=[types.Part(text=said)]))


async def test_sweep_deletes_expired_sessions_with_everything_they_own(db):
    svc = OceanBaseSessionService(database=db, debug_archive=DebugArchiveSettings())
    old = [await session_aged(svc, "app", f"u{i}", 40, events=3) for i in range(5)]
    fresh = await session_aged(svc, "app", "u0", 5)
    async with db.engine.begin() as conn:  # rows a compaction archived (a real one would refresh the session)
        await conn.execute(text("UPDATE session_events SET compacted_by = 3 WHERE session_id = :s AND seq < 3"), {"s": old[0]})
    policy = RetentionPolicy(Retention(session_ttl="30d"))

    dry = await sweep(db, policy, dry_run=True, now=NOW)
    assert (dry.sessions, dry.events, dry.state_rows, dry.memories) == (5, 15, None, 0)
    assert await count(db, "agent_sessions") == 6

    done = await sweep(db, policy, session_batch=2, now=NOW)  # three batches
    assert (done.sessions, done.events, done.debug_entries) == (5, 15, 15)
    assert done.state_rows == 5 * 4  # topic, k0..k2 per session; user-scoped state is kept
    assert await count(db, "agent_sessions") == 1 and await count(db, "session_events") == 2
    assert await count(db, "session_state", "scope = 'user'") == 5
    assert await count(db, "debug_archive") == 2
    assert (await svc.get_session(app_name="app", user_id="u0", session_id=fresh)) is not None
    assert (await sweep(db, policy, now=NOW)).sessions == 0  # nothing left to do


async def test_per_app_ttls_and_app_selection(db):
    svc = OceanBaseSessionService(database=db)
    for app in ("support", "sales", "other"):
        await session_aged(svc, app, "u", 10)
    policy = RetentionPolicy(Retention(session_ttl="30d"), apps={"support": Retention(session_ttl="7d")})
    assert (await sweep(db, policy, now=NOW)).sessions == 1
    assert await count(db, "agent_sessions", "app_name = 'support'") == 0
    assert (await sweep(db, RetentionPolicy(Retention(session_ttl="1d")), apps=["sales"], now=NOW)).sessions == 1
    assert await count(db, "agent_sessions", "app_name = 'other'") == 1


async def test_a_session_refreshed_before_the_lock_survives(db):
    """The batch lock re-checks expiry: a session appended to after the batch was read is not deleted."""
    svc = OceanBaseSessionService(database=db)
    stale = await session_aged(svc, "app", "u", 40)
    refreshed = await session_aged(svc, "app", "u", 40)
    cutoff = utc(NOW - 30 * DAY)
    async with db.engine.connect() as conn:
        batch = [tuple(r) for r in (await conn.execute(gq.expired_sessions("app", cutoff, 100))).all()]
    assert len(batch) == 2
    s = await svc.get_session(app_name="app", user_id="u", session_id=refreshed)
    await svc.append_event(s, turn("I am back after a long break", NOW))
    async with db.engine.begin() as conn:
        locked = [tuple(r) for r in (await conn.execute(gq.lock_expired_sessions("app", batch, cutoff))).all()]
    assert locked == [("u", stale)]


async def test_memories_expire_by_last_store_or_serve(db):
    mem_svc = OceanBaseMemoryService(database=db, embedder=HashEmbedder(), settings=MemorySettings(bump_access=False))
    try:
        await mem_svc.add_memory(app_name="app", user_id="u", memories=[
            mem("the user kept a parrot named Kiwi", 400), mem("the user speaks Portuguese at home", 400),
            mem("the user bought a red bicycle", 10)])
        await mem_svc.add_memory(app_name="app", user_id="v", memories=[mem("the user collects old maps", 400)])
        await mem_svc.flush()
        async with db.engine.begin() as conn:  # stored 400 days ago: retention counts from stored_at (issue 33)
            await conn.execute(text("UPDATE agent_memories SET stored_at = :t WHERE content NOT LIKE '%bicycle%'"),
                               {"t": utc(NOW - 400 * DAY)})
        hit = await mem_svc.search("app", "u", "parrot Kiwi", top_k=1, bump_access=True)  # read now: stays
        assert "Kiwi" in hit[0].entry.content.parts[0].text
        policy = RetentionPolicy(Retention(memory_ttl="180d"))
        assert (await sweep(db, policy, dry_run=True, now=NOW)).memories == 2
        assert (await sweep(db, policy, memory_batch=1, now=NOW)).memories == 2
        async with db.engine.connect() as conn:
            left = set((await conn.execute(text("SELECT content FROM agent_memories"))).scalars())
        assert left == {"the user kept a parrot named Kiwi", "the user bought a red bicycle"}
    finally:
        await mem_svc.close()


async def test_cli_gc(database, migrated_url, capsys):
    svc = OceanBaseSessionService(database=database)
    await session_aged(svc, "cli_app", "u", 40)
    await session_aged(svc, "cli_app", "u", 1)
    args = ["gc", "--url", migrated_url, "--app", "cli_app", "--session-ttl", "30d"]
    assert await asyncio.to_thread(cli_main, args + ["--dry-run"]) == 0
    assert "would delete 1 session(s), 2 event(s), 0 memory(ies)" in capsys.readouterr().out
    assert await count(database, "agent_sessions") == 2
    assert await asyncio.to_thread(cli_main, args) == 0
    assert "deleted 1 session(s), 2 event(s), 3 state row(s), 0 debug entr(ies), 0 memory(ies)" in capsys.readouterr().out
    assert await count(database, "agent_sessions") == 1
    assert await asyncio.to_thread(cli_main, ["gc", "--url", migrated_url, "--session-ttl", "30 parsecs"]) == 2
    assert "a duration is" in capsys.readouterr().err
    assert await asyncio.to_thread(cli_main, ["gc", "--url", migrated_url]) == 2
    assert "--session-ttl and/or --memory-ttl" in capsys.readouterr().err


async def test_worker_sweeps_in_the_background_and_closes(database):
    svc = OceanBaseSessionService(database=database)
    await session_aged(svc, "app", "u", 40)
    worker = RetentionWorker(database, RetentionPolicy(Retention(session_ttl="30d")), interval_s=3600)
    worker.start()
    for _ in range(200):  # until the first sweep finished (its count is what is checked, not its speed)
        if worker.sweeps:
            break
        await asyncio.sleep(0.05)
    await worker.close(timeout_s=5)
    assert worker.sweeps == 1 and worker.last.sessions == 1
    assert await count(database, "agent_sessions") == 0


@pytest.mark.parametrize(("value", "seconds"), [("30d", 30 * DAY), ("12h", 43200), ("90m", 5400), ("45", 45), ("2w", 14 * DAY),
                                                (60, 60), (timedelta(hours=1), 3600), ("1.5d", 1.5 * DAY)])
def test_parse_duration(value, seconds):
    assert parse_duration(value) == seconds


@pytest.mark.parametrize("bad", ["", "30x", "-1d", "0", 0, None, True])
def test_bad_durations_are_rejected(bad):
    with pytest.raises(ValidationError, match="duration|TTL"):
        parse_duration(bad)
