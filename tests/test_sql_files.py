"""``sql/`` stays true: the hand-written DDL equals a migrated database, and every analyst query runs."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types
from sqlalchemy import text

from adk_oceanbase import Config, OceanBaseSessionService
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


def test_views_file_matches_migration():
    import importlib.util

    spec = importlib.util.spec_from_file_location("rev0002", migrations.script_location() / "versions" / "0002_analyst_views.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    squash = lambda s: re.sub(r"\s+", " ", s).strip()  # noqa: E731
    from_file = {
        re.match(r"CREATE OR REPLACE VIEW (\w+) AS", s).group(1): squash(s.split(" AS", 1)[1])
        for s in statements(SQL / "views.sql")
    }
    assert from_file == {name: squash(body) for name, body in mod.VIEWS.items()}


# ---------------------------------------------------------------- analyst queries
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
}


@pytest.fixture
async def seeded(database):
    svc = OceanBaseSessionService(database=database)
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
    params = {k: v for k, v in PARAMS.items() if f":{k}" in sql}
    async with seeded.engine.connect() as conn:
        result = await conn.execute(text(sql), params)
        rows = result.all()
        columns = list(result.keys())
    assert columns == [c.strip() for c in head["Output"].split(",")]
    assert rows, f"{path.name} returned nothing on seeded data"


async def test_analyst_queries_answer_correctly(seeded):
    async with seeded.engine.connect() as conn:
        tools = (await conn.execute(text((SQL / "queries" / "tool_usage.sql").read_text()), {"app_name": "analytics"})).all()
        transcript = (await conn.execute(text((SQL / "queries" / "session_transcript.sql").read_text()), PARAMS)).all()
        memories = (await conn.execute(text((SQL / "queries" / "memory_overview.sql").read_text()), PARAMS)).all()
        state = (await conn.execute(text("SELECT state_key, value_json FROM v_state WHERE user_id='alice' ORDER BY state_key"))).all()
    assert [(t.tool_name, t.calls, t.sessions) for t in tools] == [("get_weather", 2, 2)]
    assert [r.seq for r in transcript] == [1, 2, 3, 4]
    assert transcript[0].text == "weather?" and transcript[1].text == "get_weather" and transcript[3].text == "20C"
    assert [(m.user_id, m.memories, m.searchable, m.pending_embedding, m.recalls) for m in memories] == [("alice", 2, 1, 1, 3)]
    assert [(s.state_key, s.value_json) for s in state] == [("done", "true"), ("user:tier", '"gold"')]
