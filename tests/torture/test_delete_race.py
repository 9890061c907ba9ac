"""``delete_session`` racing ``append_event`` and ``create_session`` on one session id (issue #9, item 3).

Every writer locks the session row first, so a delete either waits for an
append in flight (and then deletes its event and state too) or makes it fail
with ``SessionMissingError``.  Three ways the old order (events, state, then
the session row) failed: event and state rows outliving their session (a
re-created session with the same id showed them), or delete and append
waiting on each other until the lock timed out (seekdb has no deadlock
detection: both sides wait out the timeout), or a deadlock victim (MariaDB).
The services run with a short statement timeout so a lock cycle surfaces as
an error here, not as a hang.

The race is shown to have happened: the test counts the sessions whose
appender had committed events when the delete cut it off (a delete landing
between appends), and fails if there were none.  Every loop is bounded.
"""

from __future__ import annotations

import asyncio
import random

import pymysql
import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types
from sqlalchemy import text

from adk_oceanbase import Config, OceanBaseSessionService, SessionAlreadyExistsError, SessionMissingError
from adk_oceanbase.engine import Database

ROUNDS = 12
SESSIONS = 4
MAX_APPENDS = 5_000  # per session and round: the delete lands after a few dozen; more means it never did
MAX_RECREATES = 50
APP, USER = "race", "u"

ORPHANS = """
SELECT (SELECT COUNT(*) FROM session_events e WHERE NOT EXISTS (
            SELECT 1 FROM agent_sessions s
             WHERE s.app_name = e.app_name AND s.user_id = e.user_id AND s.session_id = e.session_id)),
       (SELECT COUNT(*) FROM session_state t WHERE t.scope = 'session' AND NOT EXISTS (
            SELECT 1 FROM agent_sessions s
             WHERE s.app_name = t.app_name AND s.user_id = t.user_id AND s.session_id = t.session_id))
"""


def ev(i: int) -> Event:
    return Event(
        author="user",
        invocation_id=f"inv{i}",
        content=types.Content(role="user", parts=[types.Part(text=f"turn {i}")]),
        actions=EventActions(state_delta={"n": i, f"k{i}": i}),
    )


async def _append_until_gone(svc: OceanBaseSessionService, sid: str) -> int:
    """Appends to one session until it is deleted; returns how many appends committed."""
    session = await svc.get_session(app_name=APP, user_id=USER, session_id=sid)
    if session is None:  # deleted before we loaded it
        return 0
    for done in range(MAX_APPENDS):
        try:
            await svc.append_event(session, ev(done))
        except SessionMissingError:
            return done
    pytest.fail(f"{sid}: {MAX_APPENDS} appends and the delete never landed")


async def _delete_soon(svc: OceanBaseSessionService, sid: str, rng: random.Random) -> None:
    for _ in range(rng.randrange(1, 12)):
        await asyncio.sleep(0)
    if rng.random() < 0.5:
        await asyncio.sleep(rng.random() * 0.01)
    await svc.delete_session(app_name=APP, user_id=USER, session_id=sid)


async def _recreate(svc: OceanBaseSessionService, sid: str, r: int) -> None:
    """Creates ``sid`` afresh; a create racing the delete of the same id may find it still there."""
    for _ in range(MAX_RECREATES):
        try:
            await svc.create_session(app_name=APP, user_id=USER, session_id=sid, state={"round": r})
            return
        except SessionAlreadyExistsError:
            await svc.delete_session(app_name=APP, user_id=USER, session_id=sid)
    pytest.fail(f"{sid}: still there after {MAX_RECREATES} deletes")


async def _race(url: str) -> None:
    rng = random.Random(9)
    appender = OceanBaseSessionService(config=Config.from_url(url, query_timeout_s=5))
    deleter = OceanBaseSessionService(config=Config.from_url(url, query_timeout_s=5))
    sids = [f"s{i}" for i in range(SESSIONS)]
    cut_off = 0  # (round, session) pairs whose appender had committed events when the delete landed
    try:
        for r in range(ROUNDS):
            await asyncio.gather(*(_recreate(deleter, sid, r) for sid in sids))
            for sid in sids:
                fresh = await appender.get_session(app_name=APP, user_id=USER, session_id=sid)
                assert fresh.events == [] and fresh.state == {"round": r}, f"round {r}: {sid} not empty"
            work = [_append_until_gone(appender, sid) for sid in sids]
            work += [_delete_soon(deleter, sid, rng) for sid in sids]
            appended = (await asyncio.gather(*work))[:SESSIONS]
            cut_off += sum(n > 0 for n in appended)
        engine = await deleter._engine()
        async with engine.connect() as conn:
            orphans = tuple((await conn.execute(text(ORPHANS))).one())
            sessions = (await conn.execute(text("SELECT COUNT(*) FROM agent_sessions"))).scalar()
    finally:
        await appender.close()
        await deleter.close()
    assert cut_off > 0, "no delete landed between two appends: the race never happened"
    assert sessions == 0
    assert orphans == (0, 0), "event / session-state rows outlived their session"


async def test_delete_racing_append_and_recreate_on_seekdb(database: Database, migrated_url: str) -> None:
    await _race(migrated_url)


@pytest.fixture
def short_mariadb_lock_wait(mariadb_server):
    """InnoDB's 50 s lock wait would hide a lock cycle's cost; 5 s makes it a fast failure instead."""
    conn = pymysql.connect(host="127.0.0.1", port=mariadb_server.port, user="root", autocommit=True)
    with conn.cursor() as cur:
        cur.execute("SELECT @@GLOBAL.innodb_lock_wait_timeout")
        before = cur.fetchone()[0]
        cur.execute("SET GLOBAL innodb_lock_wait_timeout = 5")
    yield
    with conn.cursor() as cur:
        cur.execute(f"SET GLOBAL innodb_lock_wait_timeout = {int(before)}")
    conn.close()


async def test_delete_racing_append_and_recreate_on_mariadb(
    mariadb_database: Database, mariadb_migrated_url: str, short_mariadb_lock_wait: None
) -> None:
    await _race(mariadb_migrated_url)
