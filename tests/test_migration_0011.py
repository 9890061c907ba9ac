"""Revision 0011 (governance) finishes after an interrupted run, keeps old memories visible, and downgrades cleanly."""

from __future__ import annotations

from sqlalchemy import text

from adk_oceanbase import Config, migrations
from adk_oceanbase.engine import Database


async def columns(db: Database, table: str) -> set[str]:
    async with db.engine.connect() as conn:
        rows = await conn.execute(text(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = :t"), {"t": table})
        return {r[0].lower() for r in rows}


async def test_0011_resumes_after_a_partial_run_and_downgrades(fresh_url):
    db = Database(Config.from_url(fresh_url))
    try:
        await migrations.upgrade(db, "0009")
        async with db.engine.begin() as conn:
            await conn.execute(text(
                "INSERT INTO agent_memories (memory_id, app_name, user_id, content, content_hash, created_at, updated_at) "
                "VALUES ('m1', 'a', 'u', 'old memory', 'h', '2025-01-01', '2025-01-01')"))
            # what a run killed after its first two steps leaves behind (DDL commits on its own)
            await conn.execute(text("ALTER TABLE agent_memories ADD COLUMN tainted SMALLINT NOT NULL DEFAULT 0"))
            await conn.execute(text("CREATE TABLE memory_opt_out (app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL, "
                                    "user_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL, opted_out_at DATETIME(6) NOT NULL, "
                                    "CONSTRAINT pk_memory_opt_out PRIMARY KEY (app_name, user_id))"))
        assert await migrations.upgrade(db) == migrations.head_revision()
        assert {"tainted", "confidence"} <= await columns(db, "agent_memories")
        assert await columns(db, "debug_archive")
        async with db.engine.connect() as conn:
            assert (await conn.execute(text("SELECT tainted, confidence FROM agent_memories"))).one() == (0, 1.0)
        await migrations.downgrade(db, "0009")
        assert not {"tainted", "confidence"} & await columns(db, "agent_memories")
        assert not await columns(db, "debug_archive") and not await columns(db, "memory_opt_out")
    finally:
        await db.close()
