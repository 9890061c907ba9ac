"""Migrations run in place from code and from the CLI; outdated schemas raise a typed, actionable error."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect, text

from adk_oceanbase import Config, OceanBaseSessionService, SchemaMissingError, SchemaOutdatedError, upgrade
from adk_oceanbase import migrations
from adk_oceanbase.cli import main as cli_main
from adk_oceanbase.engine import Database


async def tables(db: Database) -> set[str]:
    async with db.engine.connect() as conn:
        return set(await conn.run_sync(lambda c: inspect(c).get_table_names()))


async def test_upgrade_twice_is_a_noop_and_downgrade_works(fresh_url):
    db = Database(Config.from_url(fresh_url))
    try:
        assert await migrations.upgrade(db) == migrations.head_revision()
        first = await tables(db)
        assert {"agent_sessions", "session_events", "session_state", "agent_memories", "adk_oceanbase_version"} <= first
        assert await migrations.upgrade(db) == migrations.head_revision()
        assert await tables(db) == first
        assert await migrations.downgrade(db, "0001") == "0001"
        async with db.engine.connect() as conn:
            views = (await conn.execute(text("SELECT COUNT(*) FROM information_schema.views WHERE table_schema = DATABASE()"))).scalar()
        assert views == 0
        assert await migrations.downgrade(db, "base") is None
        assert await tables(db) == {"adk_oceanbase_version"}
    finally:
        await db.close()


async def test_outdated_schema_raises_with_the_command_to_run(fresh_url):
    db = Database(Config.from_url(fresh_url))
    await migrations.upgrade(db, "0001")
    svc = OceanBaseSessionService(database=db)
    with pytest.raises(SchemaOutdatedError) as info:
        await svc.create_session(app_name="a", user_id="u")
    assert "adk-oceanbase db upgrade" in str(info.value)
    await svc.setup()  # the same code path as the CLI
    s = await svc.create_session(app_name="a", user_id="u")
    assert s.id
    await db.close()


async def test_missing_schema_is_created_on_first_use_or_refused(fresh_url):
    db = Database(Config.from_url(fresh_url))
    strict = OceanBaseSessionService(database=db, auto_setup=False)
    with pytest.raises(SchemaMissingError):
        await strict.list_sessions(app_name="a")
    lenient = OceanBaseSessionService(database=db)
    assert (await lenient.list_sessions(app_name="a")).sessions == []
    assert await migrations.current_revision(db) == migrations.head_revision()
    await db.close()


async def test_cli_upgrade_current_downgrade(fresh_url, capsys):
    # the CLI drives its own event loop, so run it in a worker thread
    import asyncio

    assert await asyncio.to_thread(cli_main, ["db", "upgrade", "--url", fresh_url]) == 0
    assert f"at revision {migrations.head_revision()}" in capsys.readouterr().out
    assert await asyncio.to_thread(cli_main, ["db", "current", "--url", fresh_url]) == 0
    assert "head is" in capsys.readouterr().out
    assert await asyncio.to_thread(cli_main, ["db", "downgrade", "base", "--url", fresh_url]) == 0
    assert "at revision base" in capsys.readouterr().out
    assert await upgrade(fresh_url) == migrations.head_revision()


async def test_cli_reports_unreachable_database_as_an_error(capsys):
    import asyncio

    code = await asyncio.to_thread(cli_main, ["db", "current", "--url", "oceanbase://root:hunter2@127.0.0.1:1/x"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot connect" in err and "hunter2" not in err


async def test_fulltext_parser_follows_the_revisions(fresh_url):
    """0001 created ngram; 0004 moved OceanBase's memory full-text index to ik (and back on downgrade)."""
    db = Database(Config.from_url(fresh_url))

    async def ddl() -> str:
        async with db.engine.connect() as conn:
            return (await conn.execute(text("SHOW CREATE TABLE agent_memories"))).one()[1]

    try:
        await migrations.upgrade(db)
        assert "WITH PARSER ik" in await ddl()
        await migrations.downgrade(db, "0003")
        assert "WITH PARSER ngram" in await ddl()
    finally:
        await db.close()
