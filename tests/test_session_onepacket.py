"""A plain append is one round trip: compare-and-set, event, audit, state and COMMIT in one packet (issue #11).

That is safe only because every write after the compare-and-set is
conditional on the rows the CAS wrote (``sessions.queries.RAW_INSERT_EVENT_IF_BUMPED``, ``APPENDED``): a missed CAS
writes nothing even though the COMMIT runs.  These tests pin both halves, on
seekdb and on MariaDB, plus the transaction bookkeeping it relies on.
"""

from __future__ import annotations

import pytest
from google.adk.errors import StaleSessionError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from sqlalchemy import text

from adk_oceanbase import AuditSettings, OceanBaseSessionService
from adk_oceanbase.engine import Database
from .fakes import user_event


@pytest.fixture(params=["seekdb", "mariadb"])
def db(request) -> Database:
    return request.getfixturevalue("database" if request.param == "seekdb" else "mariadb_database")


ev = user_event


async def _rows(db: Database, sql: str, **params) -> list:
    async with db.engine.connect() as conn:
        return (await conn.execute(text(sql), params)).all()


async def _snapshot(db: Database, sid: str) -> tuple:
    """Everything an append can touch, read straight from the tables."""
    return (
        await _rows(db, "SELECT seq, event_id FROM session_events WHERE session_id = :s ORDER BY seq", s=sid),
        await _rows(db, "SELECT last_seq, event_count, total_tokens FROM agent_sessions WHERE session_id = :s", s=sid),
        await _rows(db, "SELECT scope, user_id, session_id, state_key, value_json FROM session_state ORDER BY scope, state_key"),
        await _rows(db, "SELECT operation, status FROM audit_log WHERE operation = 'append' AND status = 'ok'"),
    )


class _Spy:
    """Counts what the driver connections send: ``query`` calls (round trips) and ``commit`` calls."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        import aiomysql

        self.queries: list[str] = []
        self.commits = 0
        query, commit = aiomysql.Connection.query, aiomysql.Connection.commit

        async def spy_query(conn, sql, unbuffered=False):
            self.queries.append(sql if isinstance(sql, str) else sql.decode())
            return await query(conn, sql, unbuffered)

        async def spy_commit(conn):
            self.commits += 1
            return await commit(conn)

        monkeypatch.setattr(aiomysql.Connection, "query", spy_query)
        monkeypatch.setattr(aiomysql.Connection, "commit", spy_commit)

    def reset(self) -> None:
        self.queries.clear()
        self.commits = 0


async def test_a_plain_append_is_one_round_trip_that_commits(db, monkeypatch):
    svc = OceanBaseSessionService(database=db, audit=AuditSettings())
    s = await svc.create_session(app_name="op", user_id="u", state={"k": 0})
    spy = _Spy(monkeypatch)
    await svc.append_event(s, ev("hello", k=1, **{"user:lang": "en", "app:v": 2, "temp:x": 3}))
    assert len(spy.queries) == 1 and spy.commits == 0
    assert spy.queries[0].rstrip().endswith("COMMIT")
    spy.reset()
    await svc.append_event(s, ev("no delta"))
    assert len(spy.queries) == 1 and spy.commits == 0
    got = await svc.get_session(app_name="op", user_id="u", session_id=s.id)
    assert got.state == {"k": 1, "user:lang": "en", "app:v": 2} and len(got.events) == 2
    assert len((await _snapshot(db, s.id))[3]) == 2  # one audit row per append, in the same packet


async def test_a_stale_copy_writes_nothing_even_when_its_seq_slot_is_free(db):
    """The CAS misses but ``seq = last_seq + 1`` of the stale copy is free: only the conditions stop the writes.

    Here storage moved on without an event row at the copy's next seq (as
    after another writer's event was erased); an unconditional
    ``UPDATE; INSERT; ...; COMMIT`` packet would commit the event, its state
    and its audit row.
    """
    svc = OceanBaseSessionService(database=db, audit=AuditSettings())
    s = await svc.create_session(app_name="op", user_id="u", state={"k": 0, "user:n": 0})
    await svc.append_event(s, ev("first", k=1))
    async with db.engine.begin() as conn:
        await conn.execute(text("UPDATE agent_sessions SET last_seq = last_seq + 5 WHERE session_id = :s"), {"s": s.id})
    before = await _snapshot(db, s.id)
    with pytest.raises(StaleSessionError):
        await svc.append_event(s, ev("stale", k=2, **{"user:n": 2, "app:z": 1}))
    assert await _snapshot(db, s.id) == before
    assert len(s.events) == 1 and s.state["k"] == 1  # the caller's copy is untouched too


async def test_an_append_to_a_deleted_session_writes_nothing(db):
    svc = OceanBaseSessionService(database=db, audit=AuditSettings())
    s = await svc.create_session(app_name="op", user_id="u", state={"user:n": 0})
    await svc.append_event(s, ev("first"))
    await svc.delete_session(app_name="op", user_id="u", session_id=s.id)
    before = await _snapshot(db, s.id)
    with pytest.raises(SessionNotFoundError):
        await svc.append_event(s, ev("after delete", k=1, **{"user:n": 1, "app:z": 1}))
    assert await _snapshot(db, s.id) == before
    assert before[0] == [] and before[1] == []


async def test_state_rows_with_equal_values_and_overwrites_in_one_packet(db):
    """The state rows travel as a derived table: equal literals ('' user and session of app scope) must not clash."""
    svc = OceanBaseSessionService(database=db)
    s = await svc.create_session(app_name="op", user_id="u", state={"a": "", "app:b": "", "user:c": ""})
    await svc.append_event(s, ev("x", a="", **{"app:b": "", "user:c": "", "d": "", "app:e": 1, "user:f": [1, ""]}))
    await svc.append_event(s, ev("y", a=2, **{"app:b": {"n": None}}))
    got = await svc.get_session(app_name="op", user_id="u", session_id=s.id)
    want = {"a": 2, "d": "", "app:b": {"n": None}, "app:e": 1, "user:c": "", "user:f": [1, ""]}
    assert got.state == want == s.state


async def test_statements_after_a_committing_batch_are_committed_by_the_transaction(engine_db):
    """``RawTransaction.finished`` is reset by later work: a stale append's follow-up reads must not stay open."""
    svc = OceanBaseSessionService(database=engine_db)
    s = await svc.create_session(app_name="op", user_id="u")
    async with svc._raw_tx() as tx:
        await tx.batch([("UPDATE agent_sessions SET event_count = 7 WHERE session_id = %(s)s", {"s": s.id}), ("COMMIT", None)])
        assert tx.finished
        await tx.batch([("UPDATE agent_sessions SET event_count = 8 WHERE session_id = %(s)s", {"s": s.id})])
        assert not tx.finished
    assert (await _rows(engine_db, "SELECT event_count FROM agent_sessions WHERE session_id = :s", s=s.id))[0][0] == 8
    with pytest.raises(RuntimeError):
        async with svc._raw_tx() as tx:
            await tx.batch([("UPDATE agent_sessions SET event_count = 9 WHERE session_id = %(s)s", {"s": s.id}), ("COMMIT", None)])
            await tx.batch([("UPDATE agent_sessions SET event_count = 10 WHERE session_id = %(s)s", {"s": s.id})])
            raise RuntimeError("after the commit")
    assert (await _rows(engine_db, "SELECT event_count FROM agent_sessions WHERE session_id = :s", s=s.id))[0][0] == 9


async def test_a_default_load_is_one_round_trip_and_windows_match(db, monkeypatch):
    """get_session without after_timestamp: head, events and state in one packet, the window as a subquery."""
    from google.adk.sessions.base_session_service import GetSessionConfig

    svc = OceanBaseSessionService(database=db)
    s = await svc.create_session(app_name="op", user_id="u", state={"user:a": 1})
    sent = [ev(f"e{i}", k=i) for i in range(6)]
    for e in sent:
        await svc.append_event(s, e)
    spy = _Spy(monkeypatch)
    full = await svc.get_session(app_name="op", user_id="u", session_id=s.id)
    assert len(spy.queries) == 1 and spy.commits == 0
    assert full.events == sent and full.state == {"user:a": 1, "k": 5}
    for n in (1, 3, 6, 10):
        spy.reset()
        got = await svc.get_session(app_name="op", user_id="u", session_id=s.id, config=GetSessionConfig(num_recent_events=n))
        assert len(spy.queries) == 1
        assert got.events == sent[-n:] and got.state == full.state
        assert got.last_update_time == full.last_update_time
    assert await svc.get_session(app_name="op", user_id="u", session_id="missing") is None
