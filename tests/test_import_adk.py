"""Importing ADK's DatabaseSessionService databases: v1 and legacy v0, SQLite and MariaDB, resumable, idempotent."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
from typing import AsyncIterator

import pymysql
import pytest
import pytest_asyncio
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.adk.sessions.database_session_service import DatabaseSessionService
from google.adk.sessions.schemas import v0
from google.genai import types
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from adk_oceanbase import ConfigurationError, EventTooLargeError, OceanBaseSessionService
from adk_oceanbase.importer import ImportReport, SourceDriverMissingError, SourceSchemaError, import_adk

from .conftest import unique_db_name

T0 = 1_732_233_445.123456
APPS = ("shop", "help")


def _event(n: int, author: str, *, invocation: str, **kw) -> Event:
    return Event(id=f"e{n:03d}", invocation_id=invocation, author=author, timestamp=T0 + n * 1.5, **kw)


def _text(n: int, author: str, words: str, *, invocation: str, **kw) -> Event:
    role = "user" if author == "user" else "model"
    return _event(n, author, invocation=invocation, content=types.Content(role=role, parts=[types.Part(text=words)]), **kw)


def conversation(base: int) -> list[Event]:
    """A turn with a tool call, state deltas in every scope (temp: too), and a plain follow-up."""
    inv, inv2 = f"inv-{base}-a", f"inv-{base}-b"
    call = types.FunctionCall(id=f"call-{base}", name="get_weather", args={"city": "杭州"})
    answer = types.FunctionResponse(id=f"call-{base}", name="get_weather", response={"temp": 21.5})
    return [
        _text(base, "user", "weather in Hangzhou?", invocation=inv),
        _event(base + 1, "agent", invocation=inv, content=types.Content(role="model", parts=[types.Part(function_call=call)])),
        _event(base + 2, "agent", invocation=inv, content=types.Content(role="user", parts=[types.Part(function_response=answer)])),
        _text(
            base + 3, "agent", "21.5 °C and sunny", invocation=inv,
            actions=EventActions(state_delta={"count": base, "app:version": base, "user:lang": "zh", "temp:scratch": 1}),
            turn_complete=True,
        ),
        _text(base + 4, "user", "thanks", invocation=inv2),
        _text(base + 5, "agent", "you're welcome", invocation=inv2, actions=EventActions(state_delta={"last": None})),
    ]


def compaction_event(n: int, covered: list[Event]) -> Event:
    summary = types.Content(role="model", parts=[types.Part(text="user asked the weather; it is sunny")])
    return _event(
        n, "user", invocation=f"inv-compact-{n}",
        actions=EventActions(
            compaction=EventCompaction(
                start_timestamp=covered[0].timestamp, end_timestamp=covered[-1].timestamp, compacted_content=summary
            )
        ),
    )


async def populate(adk: DatabaseSessionService, n_sessions: int = 5) -> int:
    """Sessions in two apps and three users; returns the number of events written."""
    count = 0
    for i in range(n_sessions):
        app, user = APPS[i % 2], f"u{i % 3}"
        state = {"topic": f"t{i}", "app:theme": "dark", f"user:seen{i}": True, "temp:boot": 1}
        s = await adk.create_session(app_name=app, user_id=user, session_id=f"s{i}", state=state)
        events = [] if i == 2 else conversation(100 * i + 10)
        if i == 1:
            events.append(compaction_event(100 * i + 30, events[:4]))
        for event in events:
            await adk.append_event(s, event)
        count += len(events)
    return count


@pytest.fixture(params=["v1", "v0"])
def schema(request) -> str:
    return request.param


@pytest_asyncio.fixture
async def sqlite_url(tmp_path, schema) -> str:
    url = f"sqlite+aiosqlite:///{tmp_path / 'adk.db'}"
    if schema == "v0":
        await _create_v0(url)
    return url


@pytest_asyncio.fixture
async def mariadb_url(mariadb_server, schema) -> AsyncIterator[str]:
    name = unique_db_name("adksrc")
    with pymysql.connect(host="127.0.0.1", port=mariadb_server.port, user="root", autocommit=True) as conn:
        conn.cursor().execute(f"CREATE DATABASE {name}")
    url = mariadb_server.url_for(name)
    if schema == "v0":
        await _create_v0(url)
    yield url
    with pymysql.connect(host="127.0.0.1", port=mariadb_server.port, user="root", autocommit=True) as conn:
        conn.cursor().execute(f"DROP DATABASE {name}")


async def _create_v0(url: str) -> None:
    """The legacy layout (pickled actions): ADK 2.13 keeps writing it to a database that has it."""
    engine = create_async_engine(url)
    async with engine.begin() as conn:
        await conn.run_sync(v0.Base.metadata.create_all)
    await engine.dispose()


@pytest_asyncio.fixture
async def ours(database) -> AsyncIterator[OceanBaseSessionService]:
    svc = OceanBaseSessionService(database=database)
    yield svc
    await svc.close()


async def assert_same(adk: DatabaseSessionService, ours: OceanBaseSessionService) -> None:
    """Both services list and load the same sessions, states and events."""
    for app in APPS:
        theirs = (await adk.list_sessions(app_name=app)).sessions
        mine = (await ours.list_sessions(app_name=app)).sessions
        assert [(s.user_id, s.id, s.state, s.last_update_time) for s in mine] == [
            (s.user_id, s.id, s.state, s.last_update_time) for s in theirs
        ]
        for s in theirs:
            a = await adk.get_session(app_name=app, user_id=s.user_id, session_id=s.id)
            b = await ours.get_session(app_name=app, user_id=s.user_id, session_id=s.id, include_compacted=True)
            assert b.events == a.events
            assert b.state == a.state
            assert b.last_update_time == a.last_update_time
        for user in {s.user_id for s in theirs}:
            assert await ours.get_user_state(app_name=app, user_id=user) == await adk.get_user_state(app_name=app, user_id=user)


async def _check_import(url: str, ours: OceanBaseSessionService, schema: str) -> None:
    async with DatabaseSessionService(url) as adk:
        n_events = await populate(adk)
        report = await import_adk(url, ours, batch=2)
        assert report.source_schema == {"v1": "1", "v0": "0"}[schema]
        assert (report.apps, report.sessions_new, report.sessions_skipped, report.events) == (2, 5, 0, n_events)
        # per app: app:theme, app:version; per (app, user): user:seenN of each session, user:lang unless
        # the user's only session there has no events (u2 in shop): shop 2+1+2, help 2+2
        assert (report.app_state_keys, report.user_state_keys) == (4, 9)
        await assert_same(adk, ours)


async def test_sqlite_import_matches_adk(sqlite_url, ours, schema):
    await _check_import(sqlite_url, ours, schema)


async def test_mariadb_import_matches_adk(mariadb_url, ours, schema):
    await _check_import(mariadb_url, ours, schema)


async def test_second_run_writes_nothing(tmp_path, ours, database):
    url = f"sqlite+aiosqlite:///{tmp_path / 'adk.db'}"
    async with DatabaseSessionService(url) as adk:
        n_events = await populate(adk)
    await import_adk(url, ours)
    again = await import_adk(url, ours)
    assert again.written == 0 and again.sessions_skipped == 5
    async with database.engine.connect() as conn:
        assert (await conn.execute(text("SELECT COUNT(*) FROM session_events"))).scalar() == n_events


async def test_interrupted_import_resumes_exactly(tmp_path, ours, database):
    url = f"sqlite+aiosqlite:///{tmp_path / 'adk.db'}"
    async with DatabaseSessionService(url) as adk:
        n_events = await populate(adk, n_sessions=7)

        def stop_after_three(report: ImportReport) -> None:
            if report.sessions_new == 3:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            await import_adk(url, ours, batch=2, progress=stop_after_three)
        async with database.engine.connect() as conn:
            first = (await conn.execute(text("SELECT COUNT(*) FROM session_events"))).scalar()
        resumed = await import_adk(url, ours, batch=2)
        assert (resumed.sessions_skipped, resumed.sessions_new) == (3, 4)
        assert resumed.events == n_events - first
        async with database.engine.connect() as conn:
            assert (await conn.execute(text("SELECT COUNT(*) FROM session_events"))).scalar() == n_events
        await assert_same(adk, ours)


async def test_session_that_grew_in_the_source_is_completed(tmp_path, ours):
    url = f"sqlite+aiosqlite:///{tmp_path / 'adk.db'}"
    async with DatabaseSessionService(url) as adk:
        await populate(adk)
        await import_adk(url, ours)
        s = await adk.get_session(app_name="shop", user_id="u0", session_id="s0")
        await adk.append_event(s, _text(900, "user", "one more thing", invocation="late", actions=EventActions(state_delta={"topic": "late"})))
        report = await import_adk(url, ours)
        assert (report.sessions_completed, report.sessions_skipped, report.events, report.session_state_keys) == (1, 4, 1, 1)
        await assert_same(adk, ours)
        # The completed session keeps working with our own append path.
        mine = await ours.get_session(app_name="shop", user_id="u0", session_id="s0")
        await ours.append_event(mine, _text(901, "agent", "sure", invocation="late"))
        assert (await ours.get_session(app_name="shop", user_id="u0", session_id="s0")).events[-1].id == "e901"


async def test_imported_compaction_archives_like_an_append(tmp_path, database):
    """The default load of an imported session is the one our own append_event would have produced."""
    ours = OceanBaseSessionService(database=database, compaction_overlap=0)
    url = f"sqlite+aiosqlite:///{tmp_path / 'adk.db'}"
    async with DatabaseSessionService(url) as adk:
        await populate(adk)
        await import_adk(url, ours, app_name="help")
        source = await adk.get_session(app_name="help", user_id="u1", session_id="s1")
    native = await ours.create_session(app_name="native", user_id="u1", session_id="s1")
    for event in source.events:
        await ours.append_event(native, event.model_copy(deep=True))
    imported = await ours.get_session(app_name="help", user_id="u1", session_id="s1")
    replayed = await ours.get_session(app_name="native", user_id="u1", session_id="s1")
    assert [e.id for e in imported.events] == [e.id for e in replayed.events]
    assert len(imported.events) < len(source.events)  # the compaction really archived covered events
    assert (await ours.list_sessions(app_name="shop")).sessions == []  # app_name= imported only "help"


async def test_missing_driver_names_the_package(ours):
    if importlib.util.find_spec("asyncpg") is not None:
        pytest.skip("asyncpg is installed here")
    with pytest.raises(SourceDriverMissingError, match="pip install asyncpg"):
        await import_adk("postgresql+asyncpg://adk:secret@127.0.0.1:5432/adk", ours)


async def test_bad_sources_are_typed_errors(tmp_path, ours):
    with pytest.raises(ConfigurationError, match="no SQLite database file"):
        await import_adk(f"sqlite+aiosqlite:///{tmp_path / 'typo.db'}", ours)
    assert not (tmp_path / "typo.db").exists()
    with pytest.raises(ConfigurationError, match="synchronous driver"):
        await import_adk("mysql+pymysql://root@127.0.0.1/x", ours)
    other = tmp_path / "other.db"
    engine = create_async_engine(f"sqlite+aiosqlite:///{other}")
    async with engine.begin() as conn:
        await conn.execute(text("CREATE TABLE notes (id INTEGER PRIMARY KEY)"))
    await engine.dispose()
    with pytest.raises(SourceSchemaError, match="no ADK DatabaseSessionService tables"):
        await import_adk(f"sqlite:///{other}", ours)  # no driver named: ADK's default aiosqlite


async def test_a_rejected_session_writes_nothing(tmp_path, database):
    """A session our service rejects (an event over max_event_bytes) is not half-imported."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'adk.db'}"
    async with DatabaseSessionService(url) as adk:
        await populate(adk, n_sessions=2)
        s = await adk.get_session(app_name="help", user_id="u1", session_id="s1")
        await adk.append_event(s, _text(500, "agent", "x" * 5000, invocation="big"))
    strict = OceanBaseSessionService(config=dataclasses.replace(database.config, max_event_bytes=4000))
    try:
        with pytest.raises(EventTooLargeError):
            await import_adk(url, strict, app_name="help")
        assert await strict.get_session(app_name="help", user_id="u1", session_id="s1") is None
        async with database.engine.connect() as conn:
            assert (await conn.execute(text("SELECT COUNT(*) FROM session_events WHERE app_name = 'help'"))).scalar() == 0
    finally:
        await strict.close()


def test_cli_import_adk_prints_counts(tmp_path, migrated_url, capsys):
    from adk_oceanbase.cli import main

    url = f"sqlite+aiosqlite:///{tmp_path / 'adk.db'}"

    async def make() -> None:
        async with DatabaseSessionService(url) as adk:
            await populate(adk, n_sessions=2)

    asyncio.run(make())
    assert main(["import-adk", "--from", url, "--url", migrated_url, "--app", "shop"]) == 0
    assert "sessions 1 new, 0 completed, 0 already imported; 6 events" in capsys.readouterr().out
    assert main(["import-adk", "--from", url, "--url", migrated_url, "--app", "shop"]) == 0
    assert "sessions 0 new, 0 completed, 1 already imported; 0 events" in capsys.readouterr().out
    assert main(["import-adk", "--from", str(tmp_path / "nope.db"), "--url", migrated_url]) == 2
    assert "source_url is not a SQLAlchemy database URL" in capsys.readouterr().err
