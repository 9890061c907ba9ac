"""``sql/`` stays true: the hand-written DDL equals a migrated database, and every analyst query runs."""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types
from sqlalchemy import text

from adk_oceanbase import AuditSettings, Config, OceanBaseSessionService
from adk_oceanbase import migrations
from adk_oceanbase.engine import Database
from adk_oceanbase.schema import metadata

SQL = Path(__file__).resolve().parent.parent / "sql"


def statements(path: Path) -> list[str]:
    body = "\n".join(line for line in path.read_text().splitlines() if not line.strip().startswith("--"))
    body = re.sub(r"--[^\n']*$", "", body, flags=re.M)  # trailing comments
    return [s.strip() for s in body.split(";") if s.strip()]


async def describe(db: Database) -> dict:
    """Columns, indexes and views of our tables, normalised for comparison."""
    async with db.engine.connect() as conn:
        cols = (
            await conn.execute(
                text(
                    # base tables only: view column metadata is derived (and OceanBase
                    # reports a view's nullability differently after an ALTER of its table)
                    "SELECT c.table_name, c.column_name, c.column_type, c.is_nullable, c.column_default "
                    "FROM information_schema.columns c JOIN information_schema.tables t "
                    "ON t.table_schema = c.table_schema AND t.table_name = c.table_name "
                    "WHERE c.table_schema = DATABASE() AND t.table_type = 'BASE TABLE' "
                    "AND c.table_name NOT IN ('adk_oceanbase_version', 'adk_oceanbase_lock') ORDER BY c.table_name, c.ordinal_position"
                )
            )
        ).all()
        idx = (
            await conn.execute(
                text(
                    "SELECT table_name, index_name, seq_in_index, column_name, non_unique "
                    "FROM information_schema.statistics WHERE table_schema = DATABASE() "
                    "AND table_name NOT IN ('adk_oceanbase_version', 'adk_oceanbase_lock') ORDER BY table_name, index_name, seq_in_index"
                )
            )
        ).all()
        views = (
            await conn.execute(text("SELECT table_name FROM information_schema.views WHERE table_schema = DATABASE()"))
        ).scalars().all()
    return {
        "columns": [tuple(str(v).lower() if v is not None else None for v in r) for r in cols],
        # OceanBase's hidden index columns carry id suffixes (__vid_1795321645700298,
        # __word_segment_39_...) that depend on DDL history, not on meaning
        "indexes": [(t, i, n, re.sub(r"(_\d+)+$", "", str(c)) if str(c).startswith("__") else c, u) for t, i, n, c, u in idx],
        "views": sorted(views),
    }


async def ddl_file_matches_migrations(url: str, ddl: Path) -> None:
    """Applies ``ddl`` to one new database, migrates another, and compares what information_schema says."""
    migrated = Database(Config.from_url(url))
    await migrations.upgrade(migrated)
    by_hand = Database(Config.from_url(url + "_byhand"))
    await by_hand.start()
    try:
        async with by_hand.engine.begin() as conn:
            for stmt in statements(ddl) + statements(SQL / "views.sql"):
                await conn.execute(text(stmt))
        assert await describe(by_hand) == await describe(migrated)
    finally:
        async with by_hand.engine.begin() as conn:
            await conn.execute(text(f"DROP DATABASE {by_hand.config.database}"))
            await conn.execute(text(f"DROP DATABASE {migrated.config.database}"))
        await by_hand.close()
        await migrated.close()


async def test_oceanbase_ddl_file_matches_migrations(seekdb_server, fresh_url):
    await ddl_file_matches_migrations(fresh_url, SQL / "oceanbase" / "schema.sql")


async def test_mysql_ddl_file_matches_migrations_on_mariadb(mariadb_server):
    from .conftest import unique_db_name

    await ddl_file_matches_migrations(mariadb_server.url_for(unique_db_name("ddl")), SQL / "mysql" / "schema.sql")


async def test_migrated_tables_match_sqlalchemy_metadata(database):
    desc = await describe(database)
    live: dict[str, dict[str, str]] = {}
    for table, column, _type, nullable, _default in desc["columns"]:
        live.setdefault(table, {})[column] = nullable
    for table in metadata.sorted_tables:
        assert set(live[table.name]) == {c.name for c in table.columns}, table.name
        for c in table.columns:
            assert (live[table.name][c.name] == "yes") == c.nullable, (table.name, c.name)
    live_indexes = {(t, i) for t, i, *_ in desc["indexes"]}
    for table in metadata.sorted_tables:
        for index in table.indexes:
            assert (table.name, index.name) in live_indexes


def test_mysql_ddl_file_differs_only_in_vector_storage():
    """Same tables, keys and views; only the embedding type and the engine-specific indexes differ."""

    def core(path: Path) -> list[str]:
        return [
            s.replace("VECTOR(384)", "<vector>").replace("LONGBLOB", "<vector>")
            for s in statements(path)
            if not s.startswith(("CREATE FULLTEXT INDEX", "CREATE VECTOR INDEX"))
        ]

    assert core(SQL / "oceanbase" / "schema.sql") == core(SQL / "mysql" / "schema.sql")
    my = (SQL / "mysql" / "schema.sql").read_text()
    assert "embedding LONGBLOB" in my and "WITH PARSER" not in my and "VECTOR INDEX" not in my


def newest_views_revision():
    """The newest revision module that defines ``VIEWS`` (each such revision redefines them all)."""
    import importlib.util

    files = sorted((migrations.script_location() / "versions").glob("[0-9]*.py"))
    for path in reversed(files):
        spec = importlib.util.spec_from_file_location(f"rev_{path.stem}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        if hasattr(mod, "VIEWS"):
            return mod
    raise AssertionError("no revision defines VIEWS")


def test_views_file_matches_migration():
    mod = newest_views_revision()
    squash = lambda s: re.sub(r"\s+", " ", s).strip()  # noqa: E731
    from_file = {
        re.match(r"CREATE OR REPLACE VIEW (\w+) AS", s).group(1): squash(s.split(" AS", 1)[1])
        for s in statements(SQL / "views.sql")
    }
    assert from_file == {name: squash(body) for name, body in mod.VIEWS.items()}


# ---------------------------------------------------------------- analyst queries
async def run_query(conn, sql: str, params: dict):
    """Runs an analyst file the way the mysql client would: ``SET @name = ...`` first, then the file as-is."""
    for name, value in params.items():
        await conn.execute(text(f"SET @{name} = :v"), {"v": value})
    return await conn.execute(text(sql))


def header(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        m = re.match(r"-- (Purpose|Parameters|Output): (.*)", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


PARAMS = {
    "app_name": "analytics",
    "user_id": "alice",
    "session_id": "s-alice-1",
    "since": datetime.datetime(2000, 1, 1),
    "limit": 10,
    "min_ms": 0,
}


@pytest.fixture
async def seeded(database):
    svc = OceanBaseSessionService(database=database, audit=AuditSettings(read_sample=1.0))
    s = await svc.create_session(app_name="analytics", user_id="alice", session_id="s-alice-1", state={"user:tier": "gold"})
    await svc.append_event(s, Event(author="user", content=types.Content(role="user", parts=[types.Part(text="weather?")])))
    call = types.Part(function_call=types.FunctionCall(name="get_weather", args={"city": "Paris"}))
    await svc.append_event(s, Event(author="bot", content=types.Content(role="model", parts=[call])))
    resp = types.Part(function_response=types.FunctionResponse(name="get_weather", response={"t": 20}))
    await svc.append_event(s, Event(author="bot", content=types.Content(role="user", parts=[resp])))
    await svc.append_event(
        s, Event(author="bot", content=types.Content(role="model", parts=[types.Part(text="20C")]), actions=EventActions(state_delta={"done": True}))
    )
    b = await svc.create_session(app_name="analytics", user_id="bob")
    await svc.append_event(b, Event(author="bot", content=types.Content(role="model", parts=[call])))
    now = datetime.datetime(2026, 1, 1)
    async with database.engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO agent_memories (memory_id, app_name, user_id, content, content_hash, created_at, updated_at,"
                " embed_status, access_count) VALUES ('m1','analytics','alice','likes tea','h1',:t,:t,'ready',3),"
                " ('m2','analytics','alice','lives in Paris','h2',:t,:t,'pending',0)"
            ),
            {"t": now},
        )
    return database


@pytest.mark.parametrize("path", sorted((SQL / "queries").glob("*.sql")), ids=lambda p: p.name)
async def test_every_analyst_query_runs_and_is_documented(seeded, path):
    head = header(path)
    assert {"Purpose", "Parameters", "Output"} <= set(head), f"{path.name} needs Purpose/Parameters/Output header lines"
    sql = path.read_text()
    assert not re.search(r"(?<![:\w]):\w", sql.split("\n-- Output")[-1]), "bind @variables, not :params"
    params = {k: v for k, v in PARAMS.items() if f"@{k}" in sql}
    assert params, f"{path.name} takes no @parameter"
    async with seeded.engine.connect() as conn:
        result = await run_query(conn, sql, params)
        rows = result.all()
        columns = list(result.keys())
    assert columns == [c.strip() for c in head["Output"].split(",")]
    assert rows, f"{path.name} returned nothing on seeded data"


async def test_analyst_queries_answer_correctly(seeded):
    async with seeded.engine.connect() as conn:
        tools = (await run_query(conn, (SQL / "queries" / "tool_usage.sql").read_text(), {"app_name": "analytics"})).all()
        transcript = (await run_query(conn, (SQL / "queries" / "session_transcript.sql").read_text(), PARAMS)).all()
        memories = (await run_query(conn, (SQL / "queries" / "memory_overview.sql").read_text(), PARAMS)).all()
        top = (await run_query(conn, (SQL / "queries" / "most_active_users.sql").read_text(), {**PARAMS, "limit": 1})).all()
        state = (await conn.execute(text("SELECT state_key, value_json FROM v_state WHERE user_id='alice' ORDER BY state_key"))).all()
    assert [(t.tool_name, t.calls, t.sessions) for t in tools] == [("get_weather", 2, 2)]
    assert [r.seq for r in transcript] == [1, 2, 3, 4]
    assert transcript[0].text == "weather?" and json.loads(transcript[1].text) == ["get_weather"]
    assert transcript[3].text == "20C"
    assert [(u.user_id, u.events) for u in top] == [("alice", 4)]
    assert [(m.user_id, m.memories, m.searchable, m.pending_embedding, m.recalls) for m in memories] == [("alice", 2, 1, 1, 3)]
    assert [(s.state_key, s.value_json) for s in state] == [("done", "true"), ("user:tier", '"gold"')]


async def multi_call_session(db: Database) -> None:
    """One model turn calling four tools after a thought, then the four responses in one event."""
    svc = OceanBaseSessionService(database=db)
    s = await svc.create_session(app_name="tools", user_id="u", session_id="s")
    calls = [("get_weather", "c1"), ("get_time", "c2"), ("get_weather", "c3"), ("book", "c4")]
    parts = [types.Part(text="let me look", thought=True)] + [
        types.Part(function_call=types.FunctionCall(name=n, id=i, args={})) for n, i in calls
    ]
    await svc.append_event(s, Event(author="bot", content=types.Content(role="model", parts=parts)))
    responses = [types.Part(function_response=types.FunctionResponse(name=n, id=i, response={})) for n, i in calls]
    await svc.append_event(s, Event(author="bot", content=types.Content(role="user", parts=responses)))
    await svc.append_event(s, Event(author="bot", content=types.Content(role="model", parts=[types.Part(text="done")])))


async def assert_every_call_counted(db: Database) -> None:
    await multi_call_session(db)
    async with db.engine.connect() as conn:
        tools = (await run_query(conn, (SQL / "queries" / "tool_usage.sql").read_text(), {"app_name": "tools"})).all()
        per_call = (await conn.execute(text(
            "SELECT seq, part_index, tool_name, call_id FROM v_tool_calls WHERE app_name = 'tools' ORDER BY seq, part_index"
        ))).all()
        events = (await conn.execute(text(
            "SELECT seq, first_text, function_calls, function_responses FROM v_session_events"
            " WHERE app_name = 'tools' ORDER BY seq"
        ))).all()
    assert [(t.tool_name, t.calls, t.sessions) for t in tools] == [("get_weather", 2, 1), ("book", 1, 1), ("get_time", 1, 1)]
    assert [tuple(r) for r in per_call] == [
        (1, 2, "get_weather", "c1"), (1, 3, "get_time", "c2"), (1, 4, "get_weather", "c3"), (1, 5, "book", "c4")
    ]
    first, second, third = events
    assert first.first_text == "let me look" and json.loads(first.function_calls) == ["get_weather", "get_time", "get_weather", "book"]
    assert first.function_responses is None
    assert second.function_calls is None and json.loads(second.function_responses) == ["get_weather", "get_time", "get_weather", "book"]
    assert third.first_text == "done" and third.function_calls is None


async def test_every_tool_call_of_a_multi_part_event_is_counted(database):
    await assert_every_call_counted(database)


async def test_every_tool_call_counted_on_mariadb(mariadb_database):
    await assert_every_call_counted(mariadb_database)
