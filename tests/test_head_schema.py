"""A new database is created at head in one step and stamped; it equals what the revision chain builds, on both engines."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import event, text

from adk_oceanbase import Config, OceanBaseSessionService
from adk_oceanbase import migrations
from adk_oceanbase.engine import Database

from .conftest import unique_db_name
from .test_sql_files import describe


async def everything(db: Database) -> dict:
    """``describe`` plus what it leaves out: each table's DDL as the server prints it, and the views' columns."""
    desc = await describe(db)
    async with db.engine.connect() as conn:
        tables = (
            await conn.execute(
                text(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() "
                    "AND table_type = 'BASE TABLE' AND table_name <> 'adk_oceanbase_lock' ORDER BY table_name"
                )
            )
        ).scalars().all()
        ddl = {}
        for table in tables:
            if table == "adk_oceanbase_version":
                continue
            created = (await conn.execute(text(f"SHOW CREATE TABLE {table}"))).one()[1]
            ddl[table] = _ddl_lines(created)
        view_columns = (
            await conn.execute(
                text(
                    "SELECT c.table_name, c.column_name, c.ordinal_position, c.data_type FROM information_schema.columns c "
                    "JOIN information_schema.views v ON v.table_schema = c.table_schema AND v.table_name = c.table_name "
                    "WHERE c.table_schema = DATABASE() ORDER BY c.table_name, c.ordinal_position"
                )
            )
        ).all()
    return {**desc, "ddl": ddl, "view_columns": [tuple(r) for r in view_columns]}


def _ddl_lines(created: str) -> list[str]:
    """``SHOW CREATE TABLE`` as a sorted set of lines: clause order follows DDL history, not meaning.

    OceanBase numbers its tables and hidden index columns by creation
    (``table_id``, ``__vid_...``); those ids are dropped.
    """
    lines = []
    for line in created.splitlines():
        line = line.strip().rstrip(",")
        line = re.sub(r"\b(table_id|tablet_id)\s*=\s*\d+", "", line, flags=re.I)
        line = re.sub(r"AUTO_INCREMENT\s*=\s*\d+", "", line)
        lines.append(line)
    return sorted(lines)


async def assert_one_step_equals_chain(url_for) -> None:
    one_step = Database(Config.from_url(url_for(unique_db_name("onestep"))))
    chain = Database(Config.from_url(url_for(unique_db_name("chain"))))
    try:
        await migrations.upgrade(chain, "0001")  # then revision by revision
        assert await migrations.upgrade(chain) == migrations.head_revision()
        assert await migrations.upgrade(one_step) == migrations.head_revision()
        made, migrated = await everything(one_step), await everything(chain)
        for key in ("columns", "indexes", "views", "view_columns"):
            assert made[key] == migrated[key], key
        assert made["ddl"] == migrated["ddl"]
    finally:
        for db in (one_step, chain):
            async with db.engine.begin() as conn:
                await conn.execute(text(f"DROP DATABASE IF EXISTS {db.config.database}"))
            await db.close()


async def test_one_step_schema_equals_the_revision_chain_on_seekdb(seekdb_server):
    await assert_one_step_equals_chain(seekdb_server.url_for)


async def test_one_step_schema_equals_the_revision_chain_on_mariadb(mariadb_server):
    await assert_one_step_equals_chain(mariadb_server.url_for)


@pytest.mark.parametrize("engine", ["seekdb", "mariadb"])
async def test_a_new_database_is_created_in_one_step_and_stamped(engine, request):
    """First use of a new database runs no revision: one CREATE per table, then the stamp."""
    server = request.getfixturevalue("seekdb_server" if engine == "seekdb" else "mariadb_server")
    db = Database(Config.from_url(server.url_for(unique_db_name("first"))))
    statements: list[str] = []
    try:
        await db.start()
        event.listen(db.engine.sync_engine, "before_cursor_execute",
                     lambda _c, _cur, stmt, *_a: statements.append(" ".join(stmt.split())))
        svc = OceanBaseSessionService(database=db)
        session = await svc.create_session(app_name="a", user_id="u")
        assert await svc.get_session(app_name="a", user_id="u", session_id=session.id)
        assert await migrations.current_revision(db) == migrations.head_revision()
        ddl = [s for s in statements if s.upper().startswith(("CREATE ", "ALTER ", "DROP "))]
        assert not [s for s in ddl if s.upper().startswith(("ALTER ", "DROP ", "CREATE INDEX", "CREATE FULLTEXT"))]
        created = {m.group(1) for s in ddl if (m := re.match(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)", s))}
        assert {"agent_sessions", "agent_memories", "memory_terms", "adk_oceanbase_version"} <= created
    finally:
        async with db.engine.begin() as conn:
            await conn.execute(text(f"DROP DATABASE IF EXISTS {db.config.database}"))
        await db.close()


@pytest.mark.parametrize("engine", ["seekdb", "mariadb"])
async def test_a_one_step_creation_that_died_half_way_is_finished_by_the_next_setup(engine, request):
    """Some head tables and no recorded revision (DDL commits one statement at a time): the chain completes it."""
    from adk_oceanbase import head_schema

    server = request.getfixturevalue("seekdb_server" if engine == "seekdb" else "mariadb_server")
    half = Database(Config.from_url(server.url_for(unique_db_name("half"))))
    whole = Database(Config.from_url(server.url_for(unique_db_name("whole"))))
    try:
        await half.start()
        async with half.engine.connect() as conn:
            statements = head_schema.create_table_statements(half.dialect, conn.dialect, half.config.embedding_dim)
            for stmt in statements[: len(statements) // 2]:
                await conn.execute(text(stmt))
        assert await migrations.current_revision(half) is None
        assert await migrations.upgrade(half) == migrations.head_revision()
        await migrations.upgrade(whole)
        made, finished = await everything(whole), await everything(half)
        for key in ("columns", "indexes", "views", "view_columns"):
            assert finished[key] == made[key], key
    finally:
        for db in (half, whole):
            async with db.engine.begin() as conn:
                await conn.execute(text(f"DROP DATABASE IF EXISTS {db.config.database}"))
            await db.close()
