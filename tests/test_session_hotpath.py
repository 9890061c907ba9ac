"""The driver-level append/create path (adk_oceanbase.rawtx): batches, their failure modes, the pool afterwards.

``append_event`` sends the compare-and-set, the event row and the state upsert
in one packet (with the COMMIT, each write conditional on the one before: see
test_session_onepacket.py), so every way the batch can fail must leave nothing
behind and a healthy pooled connection.
"""

from __future__ import annotations

import asyncio
import random
from operator import not_
from typing import Any

import pymysql
import pytest
from google.adk.errors import StaleSessionError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.sessions.base_session_service import GetSessionConfig
from sqlalchemy import make_url, text
from sqlalchemy.ext.asyncio import create_async_engine

from adk_oceanbase import Config, OceanBaseSessionService, SessionAlreadyExistsError
from adk_oceanbase.rawtx import _connection_suspect
from .fakes import user_event


ev = user_event


async def _counts(svc: OceanBaseSessionService, sid: str) -> tuple[int, int, int]:
    """(stored event rows, last_seq, event_count) of one session, read straight from the tables."""
    engine = await svc._engine()
    async with engine.connect() as conn:
        rows = (await conn.execute(text("SELECT COUNT(*) FROM session_events WHERE session_id = :s"), {"s": sid})).scalar()
        head = (
            await conn.execute(text("SELECT last_seq, event_count FROM agent_sessions WHERE session_id = :s"), {"s": sid})
        ).first()
    return rows, *(head or (0, 0))


async def test_append_to_a_session_deleted_after_loading_leaves_no_orphan_rows(engine_db):
    svc = OceanBaseSessionService(database=engine_db)
    s = await svc.create_session(app_name="hp", user_id="u")
    await svc.append_event(s, ev("first"))
    await svc.delete_session(app_name="hp", user_id="u", session_id=s.id)
    # The batch's INSERT goes in before the failed compare-and-set is seen: it must be rolled back.
    with pytest.raises(SessionNotFoundError):
        await svc.append_event(s, ev("after delete", **{"k": 1, "user:x": 2}))
    assert await _counts(svc, s.id) == (0, 0, 0)
    assert await svc.get_user_state(app_name="hp", user_id="u") == {}


async def test_a_failed_batch_leaves_the_pooled_connection_usable(engine_migrated_url):
    """One pooled connection: a stale append, a redelivered event and a duplicate create in a row."""
    svc = OceanBaseSessionService(config=Config.from_url(engine_migrated_url, pool_size=1, max_overflow=0))
    try:
        s = await svc.create_session(app_name="hp1", user_id="u")
        stale = await svc.get_session(app_name="hp1", user_id="u", session_id=s.id)
        e = ev("one", k=1)
        await svc.append_event(s, e)
        with pytest.raises(StaleSessionError):
            await svc.append_event(stale, ev("stale", k=2))
        await svc.append_event(s, e)  # redelivery: duplicate event id inside the batch
        with pytest.raises(SessionAlreadyExistsError, match="already exists"):
            await svc.create_session(app_name="hp1", user_id="u", session_id=s.id, state={"user:y": 1})
        await svc.append_event(s, ev("two", k=3))
        got = await svc.get_session(app_name="hp1", user_id="u", session_id=s.id)
        assert [x.content.parts[0].text for x in got.events] == ["one", "two"]
        assert got.state == {"k": 3}
        assert await svc.get_user_state(app_name="hp1", user_id="u") == {}  # the failed create wrote nothing
        assert await _counts(svc, s.id) == (2, 2, 2)
    finally:
        await svc.close()


async def test_a_callers_plain_engine_runs_the_hot_paths(engine_server, engine_migrated_url):
    name = engine_migrated_url.rsplit("/", 1)[1]
    engine = create_async_engine(f"mysql+aiomysql://root@127.0.0.1:{engine_server.port}/{name}")
    svc = OceanBaseSessionService(engine=engine)
    try:
        s = await svc.create_session(app_name="hp2", user_id="u", state={"user:lang": "en", "a": 1})
        assert s.state == {"user:lang": "en", "a": 1}
        stale = await svc.get_session(app_name="hp2", user_id="u", session_id=s.id)
        e = ev("x", **{"user:lang": "zh"})
        await svc.append_event(s, e)
        await svc.append_event(s, e)
        with pytest.raises(StaleSessionError):
            await svc.append_event(stale, ev("stale"))
        got = await svc.get_session(app_name="hp2", user_id="u", session_id=s.id)
        assert len(got.events) == 1 and got.state["user:lang"] == "zh"
    finally:
        await svc.close()
        await svc.database.close()
        await engine.dispose()


async def test_cancelled_appends_never_half_write_and_never_poison_the_pool(engine_migrated_url):
    """Appends cancelled at random points: each lands whole or not at all, and the pool stays healthy."""
    svc = OceanBaseSessionService(config=Config.from_url(engine_migrated_url, pool_size=2, max_overflow=0))
    rng = random.Random(7)
    try:
        s = await svc.create_session(app_name="hp3", user_id="u")
        for i in range(60):
            session = await svc.get_session(app_name="hp3", user_id="u", session_id=s.id)
            task = asyncio.create_task(svc.append_event(session, ev(f"e{i}", n=i)))
            await asyncio.sleep(rng.uniform(0, 0.003))
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
        rows, last_seq, event_count = await _counts(svc, s.id)
        assert rows == last_seq == event_count
        got = await svc.get_session(app_name="hp3", user_id="u", session_id=s.id)
        assert [x.content.parts[0].text for x in got.events] == sorted(
            (x.content.parts[0].text for x in got.events), key=lambda t: int(t[1:])
        )
        if got.events:  # the state is the last landed event's
            assert got.state["n"] == int(got.events[-1].content.parts[0].text[1:])
        await svc.append_event(got, ev("after", n=-1))  # connections in the pool still work
        assert (await _counts(svc, s.id))[0] == rows + 1
    finally:
        await svc.close()


def _connect(url: str, **kw) -> pymysql.connections.Connection:
    u = make_url(url)
    return pymysql.connect(host=u.host, port=u.port, user=u.username, password=u.password or "", database=u.database, **kw)


async def _poll(monitor: pymysql.connections.Connection, sql: str, args: tuple, until) -> Any:
    """Re-runs ``sql`` until ``until(rows)`` is true; returns the rows (an event to wait for, not a timing)."""
    with monitor.cursor() as cur:
        for _ in range(3000):
            cur.execute(sql, args)
            rows = cur.fetchall()
            if until(rows):
                return rows
            await asyncio.sleep(0.01)
    raise AssertionError(f"never happened: {sql} {args}")


async def test_an_append_whose_caller_is_gone_lands_whole(engine_migrated_url):
    """The server runs a cancelled append's packet to the end, with nobody left to read its replies.

    Deterministic version of the test above: the append's compare-and-set
    waits on a row lock held here, the caller cancels (its connection is
    closed), then the lock is released.  MariaDB could not send the next
    reply, set ``ROW_COUNT()`` to -1 and ran the rest of the packet, COMMIT
    included: gated on ``ROW_COUNT() = 1``, the statements after that point
    wrote nothing, and the event row committed without its state (or the
    session's counter without its event).
    """
    svc = OceanBaseSessionService(config=Config.from_url(engine_migrated_url, pool_size=2, max_overflow=0))
    locker, monitor = _connect(engine_migrated_url), _connect(engine_migrated_url, autocommit=True)
    try:
        s = await svc.create_session(app_name="hp5", user_id="u")
        await svc.append_event(s, ev("e0", n=0))
        with locker.cursor() as cur:
            cur.execute("SELECT last_seq FROM agent_sessions WHERE session_id = %s FOR UPDATE", (s.id,))
        task = asyncio.create_task(svc.append_event(s, ev("e1", n=1)))
        waiting = await _poll(
            monitor,
            "SELECT ID FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND COMMAND = 'Query'"
            " AND INFO LIKE %s",
            (f"%UPDATE agent_sessions%{s.id}%",),
            bool,
        )
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        locker.rollback()  # the server goes on with the append's packet
        await _poll(monitor, "SELECT ID FROM information_schema.PROCESSLIST WHERE ID = %s", (waiting[0][0],), not_)
        got = await svc.get_session(app_name="hp5", user_id="u", session_id=s.id)
        texts = [x.content.parts[0].text for x in got.events]
        assert texts in (["e0"], ["e0", "e1"])
        assert got.state["n"] == len(texts) - 1
        assert await _counts(svc, s.id) == (len(texts),) * 3
    finally:
        locker.close()
        monitor.close()
        await svc.close()


async def test_a_rollback_cancelled_after_an_error_never_returns_the_connection_to_the_pool(
    engine_migrated_url, monkeypatch
):
    """An error, then a cancel while the rollback runs: the writes so far must not ride into the next COMMIT.

    A stale append raises inside the transaction and the context manager rolls
    back; a cancel landing in that rollback used to check the connection back
    in with the transaction open (or, cancelled mid-reply, closed by the
    driver: "Cancelled during execution" at the next checkout).
    """
    import aiomysql

    from adk_oceanbase.rawtx import raw_transaction

    svc = OceanBaseSessionService(config=Config.from_url(engine_migrated_url, pool_size=1, max_overflow=0))
    try:
        s = await svc.create_session(app_name="hp6", user_id="u")
        engine = await svc._engine()
        rolling_back, never = asyncio.Event(), asyncio.Event()
        rollback = aiomysql.Connection.rollback

        async def held_rollback(conn):
            rolling_back.set()
            await never.wait()  # the cancel lands here, before ROLLBACK is sent
            await rollback(conn)

        async def failing_write():
            async with raw_transaction(engine) as tx:
                await tx.batch([("UPDATE agent_sessions SET total_tokens = 99 WHERE session_id = %(s)s", {"s": s.id})])
                raise StaleSessionError("stale")

        monkeypatch.setattr(aiomysql.Connection, "rollback", held_rollback)
        task = asyncio.create_task(failing_write())
        await rolling_back.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        monkeypatch.setattr(aiomysql.Connection, "rollback", rollback)
        async with raw_transaction(engine) as tx:  # the pool's one connection, committed at the end
            assert (await tx.batch([("SELECT 1", None)]))[0][1] == [(1,)]
        got = await svc.get_session(app_name="hp6", user_id="u", session_id=s.id)
        assert got is not None
        async with engine.connect() as conn:
            tokens = (await conn.execute(text("SELECT total_tokens FROM agent_sessions WHERE session_id = :s"), {"s": s.id}))
            assert tokens.scalar() == 0
    finally:
        await svc.close()


@pytest.mark.parametrize("config", [None, GetSessionConfig(after_timestamp=0.0)], ids=["one-packet", "core"])
async def test_a_load_reads_one_snapshot_while_an_append_commits(
    engine, engine_server, engine_migrated_url, monkeypatch, config
):
    """``get_session``'s head, events and state come from one snapshot, at the server's isolation or not.

    seekdb's default is READ COMMITTED (and a MariaDB may be set to it): there
    each statement saw the commits before it, so an append landing between
    the events and the state gave a state holding a delta of an event the
    load did not return.  One statement per round trip (``batch_statements=false``)
    leaves room to commit the append exactly there.
    """
    import aiomysql

    if engine == "mariadb":
        with engine_server.connect() as conn:
            conn.cursor().execute("SET GLOBAL TRANSACTION ISOLATION LEVEL READ COMMITTED")
    reader = OceanBaseSessionService(f"{engine_migrated_url}?batch_statements=false")
    writer = OceanBaseSessionService(engine_migrated_url)
    try:
        s = await writer.create_session(app_name="hp7", user_id="u")
        await writer.append_event(s, ev("e0", n=0))
        query, appended = aiomysql.Connection.query, []

        async def query_then_append(conn, sql, unbuffered=False):
            result = await query(conn, sql, unbuffered)
            if not appended and "FROM session_events" in (sql if isinstance(sql, str) else sql.decode()):
                appended.append(True)  # after the load's events, before its state
                await writer.append_event(s, ev("e1", n=1))
            return result

        monkeypatch.setattr(aiomysql.Connection, "query", query_then_append)
        got = await reader.get_session(app_name="hp7", user_id="u", session_id=s.id, config=config)
        assert appended
        assert [x.content.parts[0].text for x in got.events] == ["e0"] and got.state["n"] == 0
    finally:
        await reader.close()
        await writer.close()
        if engine == "mariadb":
            with engine_server.connect() as conn:
                conn.cursor().execute("SET GLOBAL TRANSACTION ISOLATION LEVEL REPEATABLE READ")


async def test_batching_can_be_turned_off_in_the_url(engine_migrated_url):
    """Behind a proxy that refuses multi-statements: the same statements, one round trip each."""
    svc = OceanBaseSessionService(f"{engine_migrated_url}?batch_statements=false")
    assert svc.config.batch_statements is False
    try:
        s = await svc.create_session(app_name="hp4", user_id="u", state={"user:a": 1})
        stale = await svc.get_session(app_name="hp4", user_id="u", session_id=s.id)
        e = ev("x", k=1)
        await svc.append_event(s, e)
        await svc.append_event(s, e)  # redelivery
        with pytest.raises(StaleSessionError):
            await svc.append_event(stale, ev("stale", k=2))
        async with svc._raw_tx() as tx:
            assert tx._multi is False
        got = await svc.get_session(app_name="hp4", user_id="u", session_id=s.id)
        assert got.state == {"user:a": 1, "k": 1} and len(got.events) == 1
    finally:
        await svc.close()


def test_only_errors_that_can_leave_a_reply_unread_discard_the_connection():
    import pymysql

    assert not _connection_suspect(pymysql.err.IntegrityError(1062, "Duplicate entry"))
    assert not _connection_suspect(StaleSessionError("stale"))
    assert _connection_suspect(pymysql.err.OperationalError(2013, "Lost connection"))
    assert _connection_suspect(pymysql.err.InterfaceError("closed"))
    assert _connection_suspect(asyncio.CancelledError())
    assert _connection_suspect(ConnectionResetError())


async def test_compiled_statement_texts_are_reused_with_each_calls_own_values(seekdb_server, engine_migrated_url):
    """``text()`` statements are compiled once per shape (``rawtx._compiled_text``); values never leak between calls."""
    from sqlalchemy import bindparam

    from adk_oceanbase.rawtx import _compiled_text, raw_transaction

    engine = create_async_engine(engine_migrated_url.replace("oceanbase://", "mysql+aiomysql://"))
    shape = "SELECT :a AS a, :b AS b, 'x%' AS pct"
    try:
        before = _compiled_text.cache_info().hits
        async with raw_transaction(engine) as tx:
            first, second = await tx.batch([(text(shape), {"a": 1, "b": "it's"}), (text(shape), {"a": 2, "b": None})])
            # a value bound on the clause itself, overridden by the call's; an expanding list (not cached)
            bound = text("SELECT :a, :c").bindparams(c=7)
            third, fourth = await tx.batch([
                (bound, {"a": 3}),
                (text("SELECT COUNT(*) FROM (SELECT 1 AS v UNION ALL SELECT 2) t WHERE v IN :vs")
                 .bindparams(bindparam("vs", expanding=True)), {"vs": [2]}),
            ])
        assert first[1] == [(1, "it's", "x%")] and second[1] == [(2, None, "x%")]
        assert third[1] == [(3, 7)] and fourth[1] == [(1,)]
        assert _compiled_text.cache_info().hits >= before + 1
    finally:
        await engine.dispose()
