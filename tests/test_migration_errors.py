"""Migration error paths (issue #11): one clear line and exit code 2, never a traceback, nothing left behind."""

from __future__ import annotations

import asyncio

import pymysql
import pytest
from sqlalchemy import inspect, text
from sqlalchemy.exc import OperationalError

from adk_oceanbase import Config, OceanBaseSessionService, SchemaConflictError, SchemaOutdatedError, ValidationError
from adk_oceanbase import migrations
from adk_oceanbase.cli import main as cli_main
from adk_oceanbase.engine import Database


async def cli(capsys, *argv: str) -> tuple[int, str]:
    """Runs the CLI (it drives its own event loop: in a worker thread); returns (exit code, stderr)."""
    code = await asyncio.to_thread(cli_main, list(argv))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("adk-oceanbase: error: "), err
    return lines[0]


async def tables(db: Database) -> set[str]:
    async with db.engine.connect() as conn:
        return set(await conn.run_sync(lambda c: inspect(c).get_table_names()))


async def run_sql(db: Database, *statements: str) -> None:
    async with db.engine.begin() as conn:
        for sql in statements:
            await conn.execute(text(sql))


@pytest.fixture
async def db(engine_fresh_url):
    database = Database(Config.from_url(engine_fresh_url))
    await database.start()
    yield database
    await database.close()


async def test_a_foreign_agent_sessions_table_is_refused_and_nothing_is_created(db, engine_fresh_url, capsys):
    await run_sql(db, "CREATE TABLE agent_sessions (id VARCHAR(64) PRIMARY KEY, payload TEXT)")
    with pytest.raises(SchemaConflictError, match="agent_sessions"):
        await migrations.upgrade(db)
    code, err = await cli(capsys, "db", "upgrade", "--url", engine_fresh_url)
    assert code == 2 and "did not create" in one_line(err)
    svc = OceanBaseSessionService(database=db)
    with pytest.raises(SchemaConflictError):
        await svc.create_session(app_name="a", user_id="u")
    assert await tables(db) == {"agent_sessions"}  # no version table, no lock table, none of ours


async def test_a_revision_from_a_newer_release_is_named_not_migrated(db, engine_fresh_url, capsys):
    await migrations.upgrade(db)
    await run_sql(db, "UPDATE adk_oceanbase_version SET version_num = '0099'")
    with pytest.raises(SchemaOutdatedError, match="'0099', which this adk-oceanbase does not know"):
        await migrations.upgrade(db)
    for argv in (["upgrade"], ["downgrade", "0001", "--yes"]):
        code, err = await cli(capsys, "db", *argv, "--url", engine_fresh_url)
        assert code == 2 and "newer release?" in one_line(err)
    with pytest.raises(SchemaOutdatedError, match="does not know"):
        await OceanBaseSessionService(database=db).create_session(app_name="a", user_id="u")
    assert await migrations.current_revision(db) == "0099"


async def test_an_unknown_target_revision_is_a_one_line_error(db, engine_fresh_url, capsys):
    with pytest.raises(ValidationError, match="'nope'"):
        await migrations.upgrade(db, "nope")
    for argv in (["upgrade", "--revision", "nope"], ["downgrade", "nope", "--yes"]):
        code, err = await cli(capsys, "db", *argv, "--url", engine_fresh_url)
        assert code == 2 and "'nope'" in one_line(err)


async def test_a_failing_step_says_where_it_stopped(db, engine_fresh_url, capsys):
    """A table squatting on a view's name makes 0002 fail: typed error, one line, resumable once removed."""
    await migrations.upgrade(db, "0001")
    await run_sql(db, "CREATE TABLE v_sessions (x INT)")
    with pytest.raises(SchemaOutdatedError, match="upgrade stopped at revision 0001: database error"):
        await migrations.upgrade(db)
    code, err = await cli(capsys, "db", "upgrade", "--url", engine_fresh_url)
    assert code == 2 and "run it again" in one_line(err)
    await run_sql(db, "DROP TABLE v_sessions")
    code, _ = await cli(capsys, "db", "upgrade", "--url", engine_fresh_url)
    assert code == 0
    assert await migrations.current_revision(db) == migrations.head_revision()


async def test_a_half_applied_schema_is_completed_by_the_cli(db, engine_fresh_url, capsys):
    await migrations.upgrade(db, "0003")
    await run_sql(db, "UPDATE adk_oceanbase_version SET version_num = '0002'")  # 0003's column, unrecorded
    with pytest.raises(SchemaOutdatedError, match="0002"):
        await OceanBaseSessionService(database=db).create_session(app_name="a", user_id="u")
    code, _ = await cli(capsys, "db", "upgrade", "--url", engine_fresh_url)
    assert code == 0 and await migrations.current_revision(db) == migrations.head_revision()



def _ddl_busy() -> OperationalError:
    """What OceanBase answers a DDL on a table whose previous DDL is still running (error 4179)."""
    return OperationalError("ALTER TABLE agent_memories DROP PRIMARY KEY, ADD PRIMARY KEY (...)", None,
                            pymysql.err.OperationalError(4179, "Operation not allowed now"))


async def test_a_step_refused_while_an_earlier_ddl_runs_is_run_again(db, monkeypatch):
    """A setup killed mid-DDL leaves the server running it; the next setup's steps meet 4179 until it ends."""
    real = migrations.command.upgrade
    calls: list[str] = []

    def busy_twice(cfg, revision):
        calls.append(revision)
        if len(calls) <= 2:
            real(cfg, "0006")  # some steps go through, then the server refuses the next one
            raise _ddl_busy()
        real(cfg, revision)

    await migrations.upgrade(db, "0001")  # a new database is created at head in one step: take the chain
    monkeypatch.setattr(migrations.command, "upgrade", busy_twice)
    assert await migrations.upgrade(db) == migrations.head_revision()
    assert calls == ["head", "head", "head"]


async def test_a_ddl_refused_for_longer_than_the_wait_is_a_typed_error(db, monkeypatch):
    def always_busy(cfg, revision):
        raise _ddl_busy()

    await migrations.upgrade(db, "0001")  # a new database is created at head in one step: take the chain
    monkeypatch.setattr(migrations.command, "upgrade", always_busy)
    monkeypatch.setattr(migrations, "DDL_BUSY_WAIT_S", 1.0)
    with pytest.raises(SchemaOutdatedError, match="upgrade stopped at revision 0001: database error 4179"):
        await migrations.upgrade(db)
