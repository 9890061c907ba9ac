"""DeadlockError, DuplicateKeyError and ConnectionLostError from real server errors, on both engines.

Each error is provoked on the server (never raised by hand): two transactions
locking two rows in opposite orders, a primary key written twice, a connection
KILLed from another one while its statement runs.  The errors pass through
``typed_errors()``, the one translation every service transaction uses
(``_tx``, ``raw_transaction``, the governance gateway), so a test here failing
means a user would see a raw driver error for that case.
"""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from adk_oceanbase import (
    Config,
    ConnectionLostError,
    DeadlockError,
    DuplicateKeyError,
    LockTimeoutError,
    OceanBaseSessionService,
)
from adk_oceanbase.engine import Database
from adk_oceanbase.errors import typed_errors

from ..engines import seekdb_only

APP, USER = "srverr", "u"
BUMP = text("UPDATE agent_sessions SET event_count = event_count + 1 WHERE app_name = :a AND user_id = :u AND session_id = :s")
COUNT = text("SELECT event_count FROM agent_sessions WHERE app_name = :a AND user_id = :u AND session_id = :s")


@pytest.fixture
async def db(engine_migrated_url: str):
    """A ``Database`` of its own (pool of 3): the tests hold two transactions open at once."""
    database = Database(Config.from_url(engine_migrated_url, pool_size=3, query_timeout_s=60))
    await database.start()
    try:
        yield database
    finally:
        await database.close()


async def two_sessions(db: Database) -> tuple[str, str]:
    svc = OceanBaseSessionService(database=db)
    first = await svc.create_session(app_name=APP, user_id=USER)
    second = await svc.create_session(app_name=APP, user_id=USER)
    return first.id, second.id


def keys(sid: str) -> dict[str, str]:
    return {"a": APP, "u": USER, "s": sid}


async def cross_lock(db: Database, s1: str, s2: str) -> list:
    """Two transactions bumping s1 then s2 and s2 then s1; both hold their first row before either
    asks for the other's, so a cycle forms whatever the scheduling.  Returns each one's result."""
    both_hold_first = asyncio.Barrier(2)

    async def cross(first: str, second: str) -> str:
        with typed_errors():
            async with db.engine.begin() as conn:
                await conn.execute(BUMP, keys(first))
                await both_hold_first.wait()
                await conn.execute(BUMP, keys(second))
        return first

    return await asyncio.gather(cross(s1, s2), cross(s2, s1), return_exceptions=True)


@pytest.fixture
def deadlock_detection(engine: str, engine_server):
    """MariaDB detects deadlocks as it is.  seekdb 1.4 does not by default (measured: both
    transactions wait out the statement timeout, 1205); its detector runs once ``_lcl_op_interval``
    is set, as OceanBase's default does, so the test sets it and puts seekdb's default back."""
    if engine == "mariadb":
        yield
        return
    with engine_server.connect() as admin:
        admin.cursor().execute("ALTER SYSTEM SET _lcl_op_interval = '30ms'")
        try:
            yield
        finally:
            admin.cursor().execute("ALTER SYSTEM SET _lcl_op_interval = '0ms'")


async def test_opposite_lock_orders_deadlock_one_transaction_as_a_deadlock_error(db: Database, deadlock_detection):
    """The server picks one victim (1213), a ``DeadlockError``; the other transaction commits."""
    s1, s2 = await two_sessions(db)
    results = await cross_lock(db, s1, s2)
    errors = [r for r in results if isinstance(r, BaseException)]
    assert len(errors) == 1 and isinstance(errors[0], DeadlockError), results
    assert "1213" in str(errors[0]) and errors[0].__cause__ is not None
    async with db.engine.connect() as conn:
        counts = {sid: (await conn.execute(COUNT, keys(sid))).scalar_one() for sid in (s1, s2)}
    assert counts == {s1: 1, s2: 1}  # the winner bumped both rows; the victim's first bump was rolled back


@seekdb_only("seekdb's default: no deadlock detector (MariaDB always detects, see the test above)")
async def test_without_the_detector_seekdb_ends_a_deadlock_as_two_lock_timeouts(engine_migrated_url: str):
    """What a seekdb user gets by default: both transactions wait out ``query_timeout_s`` and fail as
    ``LockTimeoutError`` (1205), both rolled back; nothing is half-written."""
    db = Database(Config.from_url(engine_migrated_url, pool_size=3, query_timeout_s=2))
    await db.start()
    try:
        s1, s2 = await two_sessions(db)
        results = await cross_lock(db, s1, s2)
        assert [type(r) for r in results] == [LockTimeoutError, LockTimeoutError], results
        async with db.engine.connect() as conn:
            assert [(await conn.execute(COUNT, keys(sid))).scalar_one() for sid in (s1, s2)] == [0, 0]
    finally:
        await db.close()


async def test_a_primary_key_written_twice_is_a_duplicate_key_error_and_rolls_back(db: Database):
    s1, s2 = await two_sessions(db)
    with pytest.raises(DuplicateKeyError, match="1062") as info:
        with typed_errors():
            async with db.engine.begin() as conn:
                await conn.execute(BUMP, keys(s1))
                await conn.execute(  # renaming s2 to s1: (app, user, session) is the primary key
                    text("UPDATE agent_sessions SET session_id = :s1 WHERE app_name = :a AND user_id = :u AND session_id = :s2"),
                    {"a": APP, "u": USER, "s1": s1, "s2": s2})
    assert info.value.__cause__ is not None
    async with db.engine.connect() as conn:
        assert (await conn.execute(COUNT, keys(s1))).scalar_one() == 0  # the bump went with the transaction
        assert (await conn.execute(COUNT, keys(s2))).scalar_one() == 0


async def running_sleep(admin, connection_id: int) -> bool:
    with admin.cursor() as cur:
        cur.execute("SELECT INFO FROM information_schema.PROCESSLIST WHERE ID = %s", (connection_id,))
        row = cur.fetchone()
    return row is not None and row[0] is not None and "SLEEP" in row[0].upper()


async def test_a_connection_killed_mid_statement_is_a_connection_lost_error(db: Database, engine_server):
    """KILL from another connection while the statement is seen running: the caller gets
    ``ConnectionLostError`` (MariaDB 1927, seekdb 2013), and the pool serves the next call."""
    admin = engine_server.connect()
    try:
        connection_id: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        async def sleeper() -> None:
            # as the services do: the whole connection inside typed_errors(), its close (a
            # rollback on the dead socket) included
            with typed_errors():
                async with db.engine.connect() as conn:
                    connection_id.set_result((await conn.execute(text("SELECT CONNECTION_ID()"))).scalar_one())
                    await conn.execute(text("SELECT SLEEP(60)"))

        task = asyncio.create_task(sleeper())
        victim = await connection_id
        while not await running_sleep(admin, victim):  # the kill must land mid-statement
            assert not task.done(), task
            await asyncio.sleep(0.05)
        with admin.cursor() as cur:
            cur.execute(f"KILL {int(victim)}")
        with pytest.raises(ConnectionLostError) as info:
            await task
        assert info.value.__cause__ is not None
        async with db.engine.connect() as conn:  # the dead connection is not handed out again
            assert (await conn.execute(text("SELECT CONNECTION_ID()"))).scalar_one() != victim
    finally:
        admin.close()
