"""``delete_user_data``: one user of one app leaves no row in any table; everyone else stays; all or nothing."""

from __future__ import annotations

import time

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types
from sqlalchemy import text

from adk_oceanbase import InvalidIdentifierError, OceanBaseSessionService
from adk_oceanbase.compaction import KeepLastN
from adk_oceanbase.errors import SchemaMissingError, SessionMissingError
from adk_oceanbase.governance import DebugArchiveSettings, delete_user_data
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService

from .governance import _helpers

APP = "erase_app"


@pytest.fixture(params=["seekdb", "mariadb"])
def db(request):
    return request.getfixturevalue("database" if request.param == "seekdb" else "mariadb_database")


def turn(author: str, said: str, ts: float, delta: dict | None = None) -> Event:
    return Event(
        author=author,
        invocation_id="inv",
        timestamp=ts,
        content=types.Content(role="user" if author == "user" else "model", parts=[types.Part(text=said)]),
        actions=EventActions(state_delta=delta or {}),
    )


async def rows_of(db, user: str) -> dict[str, int]:
    """Rows whose user_id is exactly ``user``, in any app, in every base table with a user_id column."""
    return await _helpers.rows_of(db, None, user)


async def populate(sessions: OceanBaseSessionService, memory: OceanBaseMemoryService, user: str) -> str:
    """Every kind of row a user can own: sessions, events (one archived by compaction), state, memories, ..."""
    now = time.time()
    s = await sessions.create_session(app_name=APP, user_id=user, state={"user:lang": "pt", "topic": "travel"})
    for i in range(3):
        ev = turn("user", f"My sister Anna lives in Lisbon, message {i}", now + i, {"temp:scratch": i, "user:seen": i})
        await sessions.append_event(s, ev)
    await sessions.compact_session(app_name=APP, user_id=user, session_id=s.id, policy=KeepLastN(keep_last=1, min_batch=1))
    other = await sessions.create_session(app_name=APP, user_id=user)
    await sessions.append_event(other, turn("user", "I am allergic to peanuts and shellfish", now + 10))
    await memory.add_session_to_memory(await sessions.get_session(app_name=APP, user_id=user, session_id=s.id))
    entry = MemoryEntry(author="user", content=types.Content(parts=[types.Part(text=f"{user} prefers window seats")]))
    await memory.add_memory(app_name=APP, user_id=user, memories=[entry])
    await memory.flush()
    hits = await memory.search(APP, user, "Anna Lisbon")
    await memory.delete_memory(app_name=APP, user_id=user, memory_id=hits[-1].memory_id)  # a tombstone too
    await memory.set_memory_opt_out(APP, user)
    return s.id


async def test_delete_user_data_leaves_zero_rows_and_spares_everyone_else(db):
    sessions = OceanBaseSessionService(database=db, debug_archive=DebugArchiveSettings())
    memory = OceanBaseMemoryService(database=db, embedder=HashEmbedder(), settings=MemorySettings(bump_access=False))
    try:
        sid = await populate(sessions, memory, "Alice")
        await populate(sessions, memory, "alice")  # another user: ids are case-sensitive
        before = await rows_of(db, "Alice")
        for table in ("agent_sessions", "session_events", "session_state", "agent_memories", "memory_opt_out", "debug_archive"):
            assert before[table] > 0, table
        async with db.engine.connect() as conn:
            archived = (await conn.execute(text(
                "SELECT COUNT(*) FROM session_events WHERE user_id = 'Alice' AND compacted_by IS NOT NULL"))).scalar()
            tombstones = (await conn.execute(text(
                "SELECT COUNT(*) FROM agent_memories WHERE user_id = 'Alice' AND embed_status = 'deleted'"))).scalar()
        assert archived > 0 and tombstones == 1
        other_before = await rows_of(db, "alice")

        counts = await sessions.delete_user_data(app_name=APP, user_id="Alice")

        assert set((await rows_of(db, "Alice")).values()) == {0}
        # every table but audit_log (kept under the audit retention: ids only, issue 33)
        assert "audit_log" not in counts
        assert {t: counts[t] for t in before if t in counts} == {t: n for t, n in before.items() if t != "audit_log"}
        assert await rows_of(db, "alice") == other_before
        assert await sessions.get_session(app_name=APP, user_id="Alice", session_id=sid) is None
        assert not await memory.is_memory_opted_out(APP, "Alice")
        assert set((await delete_user_data(db, APP, "Alice")).values()) == {0}  # idempotent
    finally:
        await memory.close()
        await sessions.close()


async def test_app_state_and_other_apps_survive(database):
    svc = OceanBaseSessionService(database=database)
    await svc.create_session(app_name=APP, user_id="u", state={"app:motd": "hi", "user:x": 1})
    await svc.create_session(app_name="other_app", user_id="u", state={"user:x": 2})
    counts = await svc.delete_user_data(app_name=APP, user_id="u")
    assert counts["agent_sessions"] == 1 and counts["session_state"] == 1
    fresh = await svc.create_session(app_name=APP, user_id="v")
    assert fresh.state == {"app:motd": "hi"}
    assert (await svc.get_user_state(app_name="other_app", user_id="u")) == {"x": 2}


async def test_erasure_is_all_or_nothing(database):
    """A failure half-way (a statement the server rejects) rolls every earlier delete back."""
    from adk_oceanbase.governance import erasure

    svc = OceanBaseSessionService(database=database)
    s = await svc.create_session(app_name=APP, user_id="u", state={"user:x": 1})
    await svc.append_event(s, turn("user", "hello there, remember me", time.time()))
    real = erasure.user_tables

    def broken():
        from sqlalchemy import Column, MetaData, String, Table

        missing = Table("no_such_table", MetaData(), Column("app_name", String(8)), Column("user_id", String(8)))
        return [*real(), missing]

    erasure.user_tables = broken
    try:
        with pytest.raises(SchemaMissingError):  # 1146, translated
            await svc.delete_user_data(app_name=APP, user_id="u")
    finally:
        erasure.user_tables = real
    assert (await rows_of(database, "u"))["session_events"] == 1
    assert (await svc.get_session(app_name=APP, user_id="u", session_id=s.id)) is not None


async def test_append_after_erasure_finds_no_session(database):
    svc = OceanBaseSessionService(database=database)
    s = await svc.create_session(app_name=APP, user_id="u")
    await svc.delete_user_data(app_name=APP, user_id="u")
    with pytest.raises(SessionMissingError):
        await svc.append_event(s, turn("user", "still there?", time.time()))
    assert set((await rows_of(database, "u")).values()) == {0}


async def test_bad_ids_are_rejected_before_anything_runs(database):
    with pytest.raises(InvalidIdentifierError, match="user_id"):
        await delete_user_data(database, APP, "")
