"""Migrations run in place from code and from the CLI; outdated schemas raise a typed, actionable error."""

from __future__ import annotations

from datetime import datetime

import pytest
from sqlalchemy import inspect, text

from adk_oceanbase import Config, OceanBaseSessionService, SchemaMissingError, SchemaOutdatedError, upgrade
from adk_oceanbase import migrations
from adk_oceanbase.cli import main as cli_main
from adk_oceanbase.engine import Database
from adk_oceanbase.memory.extraction import search_text


async def tables(db: Database) -> set[str]:
    async with db.engine.connect() as conn:
        return set(await conn.run_sync(lambda c: inspect(c).get_table_names()))


async def test_upgrade_twice_is_a_noop_and_downgrade_works(engine_fresh_url):
    db = Database(Config.from_url(engine_fresh_url))
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
        assert await tables(db) == {"adk_oceanbase_version", "adk_oceanbase_lock"}  # setup's own, kept like Alembic's
    finally:
        await db.close()


async def test_outdated_schema_raises_with_the_command_to_run(engine_fresh_url):
    db = Database(Config.from_url(engine_fresh_url))
    await migrations.upgrade(db, "0001")
    svc = OceanBaseSessionService(database=db)
    with pytest.raises(SchemaOutdatedError) as info:
        await svc.create_session(app_name="a", user_id="u")
    assert "adk-oceanbase db upgrade" in str(info.value)
    await svc.setup()  # the same code path as the CLI
    s = await svc.create_session(app_name="a", user_id="u")
    assert s.id
    await db.close()


async def test_missing_schema_is_created_on_first_use_or_refused(engine_fresh_url):
    db = Database(Config.from_url(engine_fresh_url))
    strict = OceanBaseSessionService(database=db, auto_setup=False)
    with pytest.raises(SchemaMissingError):
        await strict.list_sessions(app_name="a")
    lenient = OceanBaseSessionService(database=db)
    assert (await lenient.list_sessions(app_name="a")).sessions == []
    assert await migrations.current_revision(db) == migrations.head_revision()
    await db.close()


async def test_cli_upgrade_current_downgrade(engine_fresh_url, capsys):
    # the CLI drives its own event loop, so run it in a worker thread
    import asyncio

    assert await asyncio.to_thread(cli_main, ["db", "upgrade", "--url", engine_fresh_url]) == 0
    assert f"at revision {migrations.head_revision()}" in capsys.readouterr().out
    assert await asyncio.to_thread(cli_main, ["db", "current", "--url", engine_fresh_url]) == 0
    assert "head is" in capsys.readouterr().out
    assert await asyncio.to_thread(cli_main, ["db", "downgrade", "base", "--yes", "--url", engine_fresh_url]) == 0
    assert "at revision base" in capsys.readouterr().out
    assert await upgrade(engine_fresh_url) == migrations.head_revision()


async def test_cli_reports_unreachable_database_as_an_error(capsys):
    import asyncio

    code = await asyncio.to_thread(cli_main, ["db", "current", "--url", "oceanbase://root:hunter2@127.0.0.1:1/x"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot connect" in err and "hunter2" not in err


async def test_fulltext_parser_follows_the_revisions(fresh_url):
    """0001 created ngram; 0004 moved OceanBase's memory full-text index to ik (and back on downgrade); 0021 drops it."""
    db = Database(Config.from_url(fresh_url))

    async def ddl() -> str:
        async with db.engine.connect() as conn:
            return (await conn.execute(text("SHOW CREATE TABLE agent_memories"))).one()[1]

    try:
        await migrations.upgrade(db, "0020")
        assert "WITH PARSER ik" in await ddl()
        await migrations.upgrade(db)
        assert "FULLTEXT" not in await ddl()  # 0021: search reads memory_terms; nothing read the index
        await migrations.downgrade(db, "0020")
        assert "WITH PARSER ik" in await ddl()
        await migrations.downgrade(db, "0003")
        assert "WITH PARSER ngram" in await ddl()
    finally:
        await db.close()


async def test_0006_backfills_turn_positions_and_stems_search_text(engine_fresh_url):
    """Rows written before 0006 get their turn's seq from the session log and a stemmed search_text."""
    db = Database(Config.from_url(engine_fresh_url))
    try:
        await migrations.upgrade(db, "0005")
        async with db.engine.begin() as conn:
            await conn.execute(text(
                "INSERT INTO session_events (app_name, user_id, session_id, seq, event_id, event_type, ts, event_time, "
                "token_count, is_final, event_json) VALUES ('a', 'u', 's', 7, 'e7', 'message', 0, '2025-05-08', 0, 0, '{}')"))
            for mid, extractor, eids in (("turn", "turn:v1", '["e7"]'), ("fact", "manual", "[]")):
                await conn.execute(text(
                    "INSERT INTO agent_memories (memory_id, app_name, user_id, content, content_hash, author, session_id, "
                    "event_ids, created_at, updated_at, extractor) VALUES (:m, 'a', 'u', 'I painted two lakes', :m, "
                    "'Melanie', 's', :e, '2025-05-08 10:00:00', '2025-05-08 10:00:00', :x)"), {"m": mid, "x": extractor, "e": eids})
        await migrations.upgrade(db)

        async def rows() -> dict[str, tuple]:
            async with db.engine.connect() as conn:
                return {r[0]: tuple(r[1:]) for r in (await conn.execute(text(
                    "SELECT memory_id, search_text" + (", turn_pos" if await has_pos() else "") + " FROM agent_memories"))).all()}

        async def has_pos() -> bool:
            async with db.engine.connect() as conn:
                return bool((await conn.execute(text(
                    "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() "
                    "AND table_name = 'agent_memories' AND column_name = 'turn_pos'"))).scalar())

        after = await rows()
        # the same text a new row gets at insert
        stemmed = search_text("Melanie", datetime(2025, 5, 8, 10), "I painted two lakes")
        assert stemmed == "8 may 2025 melani i paint two lak"
        assert after["turn"] == (stemmed, 7)
        assert after["fact"] == (stemmed, None)
        await migrations.downgrade(db, "0005")
        assert (await rows())["turn"] == ("8 May 2025, Melanie: I painted two lakes",)
    finally:
        await db.close()


async def test_0010_completes_after_an_interrupted_run(engine_fresh_url):
    """MySQL DDL commits statement by statement: a crash inside 0010 leaves part of it; running again finishes it."""
    db = Database(Config.from_url(engine_fresh_url))
    try:
        await migrations.upgrade(db, "0009")
        async with db.engine.begin() as conn:  # what 0010 had done when it was interrupted
            await conn.execute(text("ALTER TABLE session_events ADD COLUMN redacted SMALLINT NOT NULL DEFAULT 0"))
            await conn.execute(text(
                "CREATE TABLE audit_log (audit_id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, at DATETIME(6) NOT NULL,"
                " operation VARCHAR(32) NOT NULL, app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,"
                " user_id VARCHAR(128) COLLATE utf8mb4_bin, session_id VARCHAR(128) COLLATE utf8mb4_bin,"
                " event_id VARCHAR(128) COLLATE utf8mb4_bin, invocation_id VARCHAR(256) COLLATE utf8mb4_bin,"
                " duration_ms DOUBLE NOT NULL, status VARCHAR(8) NOT NULL, error_code VARCHAR(64), row_count BIGINT)"
                " DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"))
            await conn.execute(text("CREATE INDEX ix_audit_user_time ON audit_log (app_name, user_id, at)"))
        assert await migrations.upgrade(db) == migrations.head_revision()
        async with db.engine.connect() as conn:
            indexes = set((await conn.execute(text(
                "SELECT DISTINCT index_name FROM information_schema.statistics"
                " WHERE table_schema = DATABASE() AND table_name = 'audit_log'"))).scalars().all())
            views = set((await conn.execute(text(
                "SELECT table_name FROM information_schema.views WHERE table_schema = DATABASE()"))).scalars().all())
        assert {"ix_audit_user_time", "ix_audit_time"} <= indexes
        assert {"v_audit_access", "v_audit_error_rate", "v_audit_latency"} <= views
    finally:
        await db.close()
