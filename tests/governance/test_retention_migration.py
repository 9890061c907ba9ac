"""Revision 0015 adds retention's server-clock columns, backfills them from the best evidence, resumes, downgrades."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from sqlalchemy import text

from adk_oceanbase import Config, migrations
from adk_oceanbase.engine import Database

from ..conftest import unique_db_name

OLD, FUTURE, SEEN = datetime(2024, 3, 1, 12, 0, 0, 250000), datetime(2999, 1, 1), datetime(2024, 6, 1)


@pytest.fixture(params=["seekdb", "mariadb"])
def any_fresh_url(request):
    if request.param == "seekdb":
        return request.getfixturevalue("fresh_url")
    return request.getfixturevalue("mariadb_server").url_for(unique_db_name("m15"))


async def columns(db: Database, table: str) -> set[str]:
    async with db.engine.connect() as conn:
        return {r[0].lower() for r in (await conn.execute(text(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = :t"),
            {"t": table})).all()}


async def test_0015_backfills_resumes_and_downgrades(any_fresh_url):
    db = Database(Config.from_url(any_fresh_url))
    try:
        await migrations.upgrade(db, "0014")
        async with db.engine.begin() as conn:
            for sid, updated in (("old", OLD), ("future", FUTURE)):
                await conn.execute(text(
                    "INSERT INTO agent_sessions (app_name, user_id, session_id, last_update_time, created_at, updated_at) "
                    "VALUES ('a', 'u', :s, 0, :t, :t)"), {"s": sid, "t": updated})
            for mid, updated, seen in (("never-read", OLD, None), ("read", OLD, SEEN), ("read-ahead", OLD, FUTURE)):
                await conn.execute(text(
                    "INSERT INTO agent_memories (memory_id, app_name, user_id, content, content_hash, created_at, "
                    "updated_at, last_accessed_at) VALUES (:m, 'a', 'u', 'x', :m, '2001-01-01', :t, :seen)"),
                    {"m": mid, "t": updated, "seen": seen})
            # what a run killed after its first step leaves: the sessions' column made, nothing backfilled
            await conn.execute(text(
                "ALTER TABLE agent_sessions ADD COLUMN touched_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)"))
        assert await migrations.upgrade(db) == migrations.head_revision()
        async with db.engine.connect() as conn:
            now = (await conn.execute(text("SELECT UTC_TIMESTAMP(6)"))).scalar()
            touched = dict((await conn.execute(text("SELECT session_id, touched_at FROM agent_sessions"))).all())
            memories = {r[0]: (r[1], r[2]) for r in (await conn.execute(text(
                "SELECT memory_id, stored_at, last_served_at FROM agent_memories"))).all()}
        assert touched["old"] == OLD  # the best record of its last write
        assert now - timedelta(hours=1) < touched["future"] <= now  # a future date is capped at the migration
        assert memories["never-read"] == (OLD, None)
        assert memories["read"] == (OLD, SEEN)
        assert memories["read-ahead"][0] == OLD and memories["read-ahead"][1] <= now

        await migrations.downgrade(db, "0014")
        assert "touched_at" not in await columns(db, "agent_sessions")
        assert not {"stored_at", "last_served_at"} & await columns(db, "agent_memories")
    finally:
        await db.close()
