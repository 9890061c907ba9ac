"""The audit log: one row per operation with the right ids and status and no content, written in the
write's own transaction; failed writes recorded; reads sampled; the analyst views and queries answer.
On seekdb and on MariaDB."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from google.adk.events.event import Event
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types
from sqlalchemy import text

from adk_oceanbase import (
    AuditSettings,
    Config,
    ConfigurationError,
    InvalidIdentifierError,
    OceanBaseSessionService,
    SchemaMissingError,
    SessionAlreadyExistsError,
    StaleSessionConflictError,
    upgrade,
)
from adk_oceanbase.compaction import ExtractiveSummarizer, KeepLastN
from adk_oceanbase.engine import Database
from adk_oceanbase.memory import HashEmbedder, OceanBaseMemoryService

SQL = Path(__file__).resolve().parent.parent / "sql"
SECRET = "the launch code is tangerine"  # content that must never reach the audit log
APP = "aud"


@pytest.fixture(params=["seekdb", "mariadb"])
def db(request):
    return request.getfixturevalue("database" if request.param == "seekdb" else "mariadb_database")


def said(txt: str, author: str = "user", inv: str = "inv-1") -> Event:
    return Event(author=author, invocation_id=inv, content=types.Content(role="user", parts=[types.Part(text=txt)]))


async def audit_rows(db: Database) -> list:
    async with db.engine.connect() as conn:
        return (await conn.execute(text(
            "SELECT operation, app_name, user_id, session_id, event_id, invocation_id, duration_ms, status,"
            " error_code, row_count FROM audit_log ORDER BY audit_id"
        ))).all()


def brief(rows) -> list[tuple]:
    return [(r.operation, r.user_id, r.session_id, r.status, r.error_code, r.row_count) for r in rows]


async def test_every_operation_is_recorded_with_its_ids_and_no_content(db):
    audit = AuditSettings(read_sample=1.0)
    svc = OceanBaseSessionService(database=db, audit=audit)
    mem = OceanBaseMemoryService(database=db, embedder=HashEmbedder(), audit=audit)
    s = await svc.create_session(app_name=APP, user_id="u1", session_id="s1", state={"note": SECRET})
    events = [said(f"{SECRET} #{i}", inv=f"inv-{i}") for i in range(4)]
    for e in events:
        await svc.append_event(s, e)
    await svc.get_session(app_name=APP, user_id="u1", session_id="s1")
    await svc.list_sessions(app_name=APP, user_id="u1")
    await svc.list_sessions_page(app_name=APP)
    result = await svc.compact_session(
        app_name=APP, user_id="u1", session_id="s1", policy=KeepLastN(keep_last=1, min_batch=1),
        summarizer=ExtractiveSummarizer(),
    )
    async with db.engine.connect() as conn:
        archived = (await conn.execute(text("SELECT COUNT(*) FROM session_events WHERE compacted_by IS NOT NULL"))).scalar()
    assert result.compacted and archived
    await mem.add_memory(app_name=APP, user_id="u1", memories=[MemoryEntry(content=types.Content(parts=[types.Part(text=SECRET)]))])
    await mem.add_events_to_memory(app_name=APP, user_id="u1", events=events, session_id="s1")
    await mem.search_memory(app_name=APP, user_id="u1", query="launch code")  # one read, not two
    await mem.delete_memory(app_name=APP, user_id="u1", memory_id="no-such-memory")
    await svc.delete_session(app_name=APP, user_id="u1", session_id="s1")
    await mem.close()

    rows = await audit_rows(db)
    ok = [(op, "u1", sid, "ok", None, n) for op, sid, n in [
        ("create_session", "s1", 1),
        *[("append", "s1", 1)] * 4,
        ("get_session", "s1", 4),
        ("list_sessions", None, 1),
    ]]
    assert brief(rows)[: len(ok)] == ok
    assert brief(rows)[len(ok)] == ("list_sessions", None, None, "ok", None, 1)  # app-wide page: no user
    rest = brief(rows)[len(ok) + 1:]
    assert rest == [
        ("get_session", "u1", "s1", "ok", None, 4),  # the compactor's own load
        ("compaction", "u1", "s1", "ok", None, 1 + archived),  # the event and the rows it archived
        ("memory_add", "u1", None, "ok", None, 1),
        ("memory_add", "u1", "s1", "ok", None, 4),
        ("memory_search", "u1", None, "ok", None, 5),
        ("memory_delete", "u1", None, "ok", None, 0),
        ("delete_session", "u1", "s1", "ok", None, 5),
    ]
    appends = [r for r in rows if r.operation == "append"]
    assert [(r.event_id, r.invocation_id) for r in appends] == [(e.id, e.invocation_id) for e in events]
    assert all(r.app_name == APP and r.duration_ms > 0 for r in rows)
    async with db.engine.connect() as conn:
        everything = " ".join(str(v) for r in (await conn.execute(text("SELECT * FROM audit_log"))).all() for v in r)
    assert "tangerine" not in everything


async def test_failed_writes_are_recorded_validation_errors_are_not(db):
    svc = OceanBaseSessionService(database=db, audit=AuditSettings())
    s = await svc.create_session(app_name=APP, user_id="u1", session_id="s1")
    stale = await svc.get_session(app_name=APP, user_id="u1", session_id="s1")
    first = said("first")
    await svc.append_event(s, first)
    late = said("second")
    with pytest.raises(StaleSessionConflictError):
        await svc.append_event(stale, late)
    await svc.append_event(stale, first)  # a redelivery: the stored copy stands, nothing is written
    with pytest.raises(SessionAlreadyExistsError):
        await svc.create_session(app_name=APP, user_id="u1", session_id="s1")
    with pytest.raises(InvalidIdentifierError):
        await svc.create_session(app_name=APP, user_id="x" * 500)
    rows = await audit_rows(db)
    assert brief(rows) == [  # reads are not sampled (read_sample 0)
        ("create_session", "u1", "s1", "ok", None, 1),
        ("append", "u1", "s1", "ok", None, 1),
        ("append", "u1", "s1", "error", "StaleSessionConflictError", None),
        ("append", "u1", "s1", "ok", None, 0),
        ("create_session", "u1", "s1", "error", "SessionAlreadyExistsError", None),
    ]
    assert rows[2].event_id == late.id
    stored = await svc.get_session(app_name=APP, user_id="u1", session_id="s1")
    assert [e.content.parts[0].text for e in stored.events] == ["first"]


async def test_the_audit_row_shares_the_write_transaction(fresh_url):
    """Without its audit row a write does not commit: with audit_log gone, the append rolls back."""
    await upgrade(fresh_url)
    db = Database(Config.from_url(fresh_url))
    try:
        svc = OceanBaseSessionService(database=db, audit=AuditSettings())
        s = await svc.create_session(app_name=APP, user_id="u1", session_id="s1")
        async with db.engine.begin() as conn:
            await conn.execute(text("DROP TABLE audit_log"))
        # the missing table is named as a missing schema (1146), with the command that restores it
        with pytest.raises(SchemaMissingError, match="db upgrade"):
            await svc.append_event(s, said("lost with its audit row"))
        with pytest.raises(SchemaMissingError, match="db upgrade"):
            await svc.create_session(app_name=APP, user_id="u1", session_id="s2")
        async with db.engine.connect() as conn:
            events = (await conn.execute(text("SELECT COUNT(*) FROM session_events"))).scalar()
            sessions = (await conn.execute(text("SELECT session_id FROM agent_sessions"))).scalars().all()
        assert events == 0 and sessions == ["s1"]
    finally:
        await db.close()


async def test_reads_are_sampled(database):
    draws = iter([0.7, 0.2, 0.9])  # against read_sample 0.5: skip, record, skip
    svc = OceanBaseSessionService(database=database, audit=AuditSettings(read_sample=0.5))
    svc._auditor._sample = lambda: next(draws)
    await svc.create_session(app_name=APP, user_id="u1", session_id="s1")
    for _ in range(3):
        await svc.get_session(app_name=APP, user_id="u1", session_id="s1")
    off = OceanBaseSessionService(database=database, audit=AuditSettings(read_sample=0.0))
    await off.get_session(app_name=APP, user_id="u1", session_id="s1")
    await off.list_sessions(app_name=APP)
    assert [r.operation for r in await audit_rows(database)] == ["create_session", "get_session"]
    with pytest.raises(ConfigurationError):
        AuditSettings(read_sample=1.5)


async def test_audit_off_writes_nothing(database):
    svc = OceanBaseSessionService(database=database)
    s = await svc.create_session(app_name=APP, user_id="u1")
    await svc.append_event(s, said("hi"))
    assert await audit_rows(database) == []


async def run_query(conn, path: Path, params: dict):
    for name, value in params.items():
        await conn.execute(text(f"SET @{name} = :v"), {"v": value})
    return (await conn.execute(text(path.read_text()))).all()


async def test_analyst_views_and_queries_answer(db):
    svc = OceanBaseSessionService(database=db, audit=AuditSettings(read_sample=1.0))
    s = await svc.create_session(app_name=APP, user_id="u1", session_id="s1")
    stale = await svc.get_session(app_name=APP, user_id="u1", session_id="s1")
    await svc.append_event(s, said("one"))
    await svc.append_event(s, said("two"))
    with pytest.raises(StaleSessionConflictError):
        await svc.append_event(stale, said("three"))
    await svc.create_session(app_name=APP, user_id="u2", session_id="s2")
    params = {"app_name": APP, "user_id": "u1", "since": "2000-01-01", "min_ms": 0, "limit": 2}
    async with db.engine.connect() as conn:
        access = (await conn.execute(text(
            "SELECT user_id, session_id, operation, calls, errors FROM v_audit_access WHERE app_name = :a"
            " ORDER BY user_id, operation"), {"a": APP})).all()
        rates = (await conn.execute(text(
            "SELECT operation, calls, errors, error_rate FROM v_audit_error_rate WHERE app_name = :a ORDER BY operation"
        ), {"a": APP})).all()
        latency = (await conn.execute(text(
            "SELECT operation, calls, p50_ms, p95_ms, max_ms FROM v_audit_latency WHERE app_name = :a ORDER BY operation"
        ), {"a": APP})).all()
        mine = await run_query(conn, SQL / "queries" / "audit_access.sql", params)
        errors = await run_query(conn, SQL / "queries" / "audit_error_rate.sql", params)
        slow = await run_query(conn, SQL / "queries" / "audit_slow_operations.sql", params)
        durations = (await conn.execute(text("SELECT duration_ms FROM audit_log ORDER BY duration_ms DESC"))).scalars().all()
    assert [(*r[:3], r.calls, int(r.errors)) for r in access] == [
        ("u1", "s1", "append", 3, 1), ("u1", "s1", "create_session", 1, 0), ("u1", "s1", "get_session", 1, 0),
        ("u2", "s2", "create_session", 1, 0),
    ]
    assert [(r.operation, r.calls, int(r.errors), float(r.error_rate)) for r in rates] == [
        ("append", 3, 1, pytest.approx(1 / 3, abs=1e-3)), ("create_session", 2, 0, 0.0), ("get_session", 1, 0, 0.0)
    ]
    by_op = {r.operation: r for r in latency}
    assert by_op["append"].calls == 3 and by_op["append"].p50_ms <= by_op["append"].p95_ms == by_op["append"].max_ms
    assert sorted((r.session_id, r.operation, r.calls, int(r.errors)) for r in mine) == [
        ("s1", "append", 3, 1), ("s1", "create_session", 1, 0), ("s1", "get_session", 1, 0)
    ]
    assert [(r.operation, int(r.errors), r.top_error_code) for r in errors][0] == ("append", 1, "StaleSessionConflictError")
    assert [r.duration_ms for r in slow] == durations[:2]


async def test_erasure_and_retention_sweeps_are_recorded(database):
    """delete_user_data keeps the user's audit history and adds its delete_user row; sweeps record each batch.

    (Until issue 33 erasure deleted the user's older audit rows; the history is now kept, ids only.)
    """
    from adk_oceanbase.governance import Retention, RetentionPolicy, sweep

    svc = OceanBaseSessionService(database=database, audit=AuditSettings())
    try:
        for sid in ("a", "b"):
            s = await svc.create_session(app_name="erase", user_id="gone", session_id=sid)
            await svc.append_event(s, Event(author="user", content=types.Content(role="user", parts=[types.Part(text="hi")])))
        await svc.create_session(app_name="erase", user_id="stays", session_id="c")
        counts = await svc.delete_user_data(app_name="erase", user_id="gone")
        async with database.engine.connect() as conn:
            rows = (await conn.execute(text(
                "SELECT operation, status, row_count FROM audit_log WHERE app_name = 'erase' AND user_id = 'gone' "
                "ORDER BY audit_id"
            ))).all()
        history = [("create_session", "ok", 1), ("append", "ok", 1)] * 2
        assert [tuple(r) for r in rows] == [*history, ("delete_user", "ok", sum(counts.values()))]
        assert "audit_log" not in counts

        old = OceanBaseSessionService(database=database)
        await old.create_session(app_name="sweep", user_id="u", session_id="old")
        await sweep(database, RetentionPolicy(Retention(session_ttl="1d")), apps=["sweep"], now=time.time() + 3 * 86400,
                    audit=True)
        async with database.engine.connect() as conn:
            swept = (await conn.execute(text(
                "SELECT operation, user_id, row_count FROM audit_log WHERE app_name = 'sweep'"
            ))).all()
        assert [tuple(r) for r in swept] == [("retention_sweep", None, 1)]
    finally:
        await svc.close()
