"""A new embedded directory keeps its engine log small (issue #24: 160-550 MB per directory, up to 512 MB of it logs)."""

from __future__ import annotations

from sqlalchemy import text

from adk_oceanbase import Config
from adk_oceanbase.engine import Database


async def _syslog_level(db: Database) -> str:
    async with db.engine.connect() as conn:
        return (await conn.execute(text("SHOW PARAMETERS LIKE 'syslog_level'"))).one()[3]


async def test_embedded_seekdb_logs_at_warn_and_sets_a_big_log_aside(tmp_path):
    where = tmp_path / "db"
    db = Database(Config.from_url(f"seekdb://{where}", seekdb_log_mb=2))
    await db.start()
    try:
        assert await _syslog_level(db) == "WARN"
    finally:
        await db.close()
    log = where / "log" / "seekdb.log"
    assert log.stat().st_size > 2**20  # the engine's start alone logs more than half of 2 MB
    first_inode = log.stat().st_ino
    again = Database(Config.from_url(f"seekdb://{where}", seekdb_log_mb=2))
    await again.start()
    await again.close()
    aside = where / "log" / "seekdb.log.previous"
    assert aside.stat().st_ino == first_inode  # the old log was set aside...
    # ...and a new one begun where the engine has written one yet (it logs asynchronously at WARN: on a
    # busy machine the second start can close before its first line reaches the file)
    assert not log.exists() or log.stat().st_ino != first_inode


async def test_seekdb_log_mb_0_leaves_the_engine_logging_alone(tmp_path):
    db = Database(Config.from_url(f"seekdb://{tmp_path / 'db'}", seekdb_log_mb=0))
    await db.start()
    try:
        assert await _syslog_level(db) != "WARN"
    finally:
        await db.close()
