"""The server going away: typed errors while it is down, no failed call once it is back (issue #9, item 5).

Two ways a pooled connection dies under a running service: the server
restarts (every connection of the pool is dead at once) or an operator
``KILL``s connections.  Either way the next calls must work: dead
connections are set aside at checkout, and a read that still meets one runs
again on a fresh connection.  While the server is down, every public method
raises ``ConnectionFailedError`` (typed, with the driver's error as its cause),
never a raw ``sqlalchemy.exc.OperationalError``.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterator

import pymysql
import pytest
import pytest_asyncio
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types
from sqlalchemy import text

from adk_oceanbase import Config, ConnectionFailedError, OceanBaseSessionService, upgrade
from adk_oceanbase.compaction import load_within_budget, replay_state
from adk_oceanbase.errors import LockTimeoutError, QueryTimeoutError
from adk_oceanbase.memory import HashEmbedder, OceanBaseMemoryService

from ..conftest import _free_port, start_mariadb, start_seekdb, unique_db_name

APP, USER = "conn", "u"
Call = Callable[[], Awaitable[Any]]


class OwnServer:
    """A seekdb or MariaDB server this module may stop and start again on the same directory and port."""

    def __init__(self, engine: str) -> None:
        self.engine = engine
        self.base = Path(tempfile.mkdtemp(prefix=f"adk-ob-h2-conn-{engine}-"))
        self.port = _free_port()
        self.proc: subprocess.Popen | None = None

    def url(self, database: str) -> str:
        scheme = "oceanbase" if self.engine == "seekdb" else "mysql+aiomysql"
        return f"{scheme}://root@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        self.proc = (start_seekdb if self.engine == "seekdb" else start_mariadb)(self.base, self.port)

    def stop(self) -> None:
        assert self.proc is not None
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


@pytest.fixture
def own_server(engine: str) -> Iterator[OwnServer]:
    server = OwnServer(engine)
    server.start()
    try:
        yield server
    finally:
        if server.proc is not None:
            server.stop()
        shutil.rmtree(server.base, ignore_errors=True)


def ev(text_: str, **delta: Any) -> Event:
    return Event(
        author="user",
        invocation_id="inv",
        content=types.Content(role="user", parts=[types.Part(text=text_)]),
        actions=EventActions(state_delta=delta),
    )


def entry(text_: str) -> MemoryEntry:
    return MemoryEntry(author="user", content=types.Content(role="user", parts=[types.Part(text=text_)]))


class Services:
    """A session and a memory service on one database, with a session and a memory already stored."""

    def __init__(self, url: str):
        self.sessions = OceanBaseSessionService(config=Config.from_url(url, pool_size=3, query_timeout_s=10))
        self.memory = OceanBaseMemoryService(database=self.sessions.database, embedder=HashEmbedder())
        self.session: Any = None
        self.n = 0

    async def seed(self) -> None:
        self.session = await self.sessions.create_session(app_name=APP, user_id=USER, state={"k": 0})
        await self.sessions.append_event(self.session, ev("my sister works at the aquarium", k=1, **{"user:u": 1}))
        await self.memory.add_memory(app_name=APP, user_id=USER, memories=[entry("the user's sister is a marine biologist")])
        await self.memory.flush()

    def reads(self) -> dict[str, Call]:
        sessions, memory, sid = self.sessions, self.memory, self.session.id
        return {
            "get_session": lambda: sessions.get_session(app_name=APP, user_id=USER, session_id=sid),
            "get_session recent": lambda: sessions.get_session(
                app_name=APP, user_id=USER, session_id=sid, config=GetSessionConfig(num_recent_events=1)
            ),
            "list_sessions": lambda: sessions.list_sessions(app_name=APP, user_id=USER),
            "list_sessions_page": lambda: sessions.list_sessions_page(app_name=APP, user_id=USER),
            "get_user_state": lambda: sessions.get_user_state(app_name=APP, user_id=USER),
            "load_within_budget": lambda: load_within_budget(
                sessions, app_name=APP, user_id=USER, session_id=sid, max_tokens=1000
            ),
            "replay_state": lambda: replay_state(sessions, app_name=APP, user_id=USER, session_id=sid),
            "search": lambda: memory.search(APP, USER, "where does the sister work", bump_access=False),
            "search_memory": lambda: memory.search_memory(app_name=APP, user_id=USER, query="sister"),
        }

    def writes(self) -> dict[str, Call]:
        sessions, memory = self.sessions, self.memory

        def next_text() -> str:
            self.n += 1
            return f"note number {self.n} about the garden"

        async def append() -> None:
            await sessions.append_event(self.session, ev(next_text(), k=self.n))

        async def create_and_delete() -> None:
            s = await sessions.create_session(app_name=APP, user_id=USER, state={"x": 1})
            await sessions.delete_session(app_name=APP, user_id=USER, session_id=s.id)

        return {
            "append_event": append,
            "create_session + delete_session": create_and_delete,
            "add_memory": lambda: memory.add_memory(app_name=APP, user_id=USER, memories=[entry(next_text())]),
            "add_events_to_memory": lambda: memory.add_events_to_memory(
                app_name=APP, user_id=USER, events=[ev(next_text())], session_id=self.session.id
            ),
            "add_session_to_memory": lambda: memory.add_session_to_memory(self.session),
            "delete_memory": lambda: memory.delete_memory(app_name=APP, user_id=USER, memory_id="nope"),
        }

    async def close(self) -> None:
        await self.memory.close()
        await self.sessions.close()


async def test_server_down_raises_typed_errors_and_a_restart_fails_no_read(own_server: OwnServer) -> None:
    url = own_server.url("conn")
    await upgrade(url)
    svc = Services(url)
    try:
        await svc.seed()
        reads, writes = svc.reads(), svc.writes()
        for call in reads.values():  # every pooled connection has been used
            await call()
        own_server.stop()
        raw = {}
        for name, call in {**reads, **writes}.items():
            try:
                await call()
            except ConnectionFailedError as exc:
                assert exc.__cause__ is not None, name
            except Exception as exc:  # noqa: BLE001 - collected and reported below
                raw[name] = repr(exc)[:200]
            else:
                raw[name] = "succeeded with the server down"
        assert raw == {}
        own_server.start()
        for name, call in reads.items():  # each read is the first call on the restarted server's pool
            await call()
        for name, call in writes.items():
            await call()
    finally:
        await svc.close()


def _kill_connections(conn: pymysql.connections.Connection, database: str) -> int:
    with conn.cursor() as cur:
        cur.execute("SELECT CONNECTION_ID()")
        mine = cur.fetchone()[0]
        cur.execute("SELECT ID FROM information_schema.PROCESSLIST WHERE DB = %s AND ID <> %s", (database, mine))
        ids = [r[0] for r in cur.fetchall()]
        for pid in ids:
            try:
                cur.execute(f"KILL {int(pid)}")
            except pymysql.err.MySQLError:
                pass  # it went away by itself
    return len(ids)


@pytest_asyncio.fixture(params=["seekdb", "mariadb"])
async def killable(request: pytest.FixtureRequest) -> Any:
    """A fresh database on the shared seekdb or MariaDB server, and an admin connection to KILL with."""
    if request.param == "seekdb":
        server = request.getfixturevalue("seekdb_server")
        name = unique_db_name("kill")
        url, port = server.url_for(name), server.port
    else:
        server = request.getfixturevalue("mariadb_server")
        name = unique_db_name("kill")
        url, port = server.url_for(name), server.port
    await upgrade(url)
    admin = pymysql.connect(host="127.0.0.1", port=port, user="root", autocommit=True)
    yield url, name, admin
    with admin.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {name}")
    admin.close()


async def test_killed_connections_fail_no_call(killable: Any) -> None:
    url, name, admin = killable
    svc = Services(url)
    try:
        await svc.seed()
        calls = {**svc.reads(), **svc.writes()}
        killed = 0
        for _ in range(2):
            for label, call in calls.items():
                killed += _kill_connections(admin, name)
                await call()  # any error fails the test, naming the call in the traceback
        assert killed > len(calls), "the test must have killed the pool's connections"
    finally:
        await svc.close()


async def test_a_slow_statement_is_a_query_timeout_and_a_held_lock_a_lock_timeout(database: Any, migrated_url: str) -> None:
    """seekdb's 4012 is a statement out of time (it was reported as a lock timeout); a lock wait is 1205."""
    svc = OceanBaseSessionService(config=Config.from_url(migrated_url, query_timeout_s=0.5))
    holder = OceanBaseSessionService(database=database)
    try:
        with pytest.raises(QueryTimeoutError):
            await svc._read(lambda conn: conn.execute(text("SELECT SLEEP(3)")))
        s = await holder.create_session(app_name=APP, user_id=USER)
        async with holder._tx() as conn:  # holds the session row's lock
            await conn.execute(text("UPDATE agent_sessions SET event_count = 0 WHERE session_id = :s"), {"s": s.id})
            with pytest.raises(LockTimeoutError):
                await svc.delete_session(app_name=APP, user_id=USER, session_id=s.id)
    finally:
        await svc.close()


async def test_mariadb_applies_the_statement_timeout(mariadb_migrated_url: str) -> None:
    """``query_timeout_s`` bounds statements on MariaDB too (max_statement_time, 1969), not only on seekdb."""
    svc = OceanBaseSessionService(config=Config.from_url(mariadb_migrated_url, query_timeout_s=0.5))
    try:
        with pytest.raises(QueryTimeoutError):
            await svc._read(lambda conn: conn.execute(text("SELECT SLEEP(3)")))
        # the connection stays usable and the session service still works
        s = await svc.create_session(app_name=APP, user_id=USER)
        assert (await svc.get_session(app_name=APP, user_id=USER, session_id=s.id)) is not None
    finally:
        await svc.close()
