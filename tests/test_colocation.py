"""Co-location (issue #32): ``db upgrade --colocate`` on seekdb, where the partitioning syntax is accepted and the table group is not.

Recorded on seekdb 1.4.0.0 (kernel 4.3.5.3): ``ALTER TABLE ... PARTITION BY KEY(app_name, user_id) PARTITIONS N``
is accepted on every per-user table (the ik full-text and HNSW indexes become local); ``CREATE TABLEGROUP``,
``ALTER TABLEGROUP ... ADD TABLE`` and ``ALTER TABLE ... TABLEGROUP = ...`` answer 1064 (syntax), as does
``ALTER DATABASE ... PRIMARY_ZONE``; ``audit_log`` cannot be key-partitioned by user (1503: its primary
key is ``audit_id``).  Every selftest check then passes on the partitioned tables.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from sqlalchemy import text

from adk_oceanbase.cli import main
from adk_oceanbase.colocation import PER_USER_TABLES, Colocation, statements
from adk_oceanbase.config import Config
from adk_oceanbase.engine import Database
from adk_oceanbase.errors import ConfigurationError

SQL_FILE = Path(__file__).resolve().parents[1] / "sql" / "oceanbase" / "colocation.sql"


async def cli(*argv: str) -> int:
    return await asyncio.to_thread(main, list(argv))


async def partitions(url: str) -> dict[str, int]:
    db = Database(Config.from_url(url))
    try:
        await db.start()
        async with db.engine.connect() as conn:
            rows = (await conn.execute(text(
                "SELECT table_name, COUNT(*) FROM information_schema.partitions "
                "WHERE table_schema = DATABASE() AND partition_name IS NOT NULL GROUP BY table_name"))).all()
        return {t: int(n) for t, n in rows}
    finally:
        await db.close()


def test_sql_file_is_what_the_command_runs():
    lines = [line.strip() for line in SQL_FILE.read_text().splitlines()]
    active = [line.rstrip(";") for line in lines if line and not line.startswith("--")]
    commented = [line[3:].rstrip(";") for line in lines if re.match(r"-- (CREATE|ALTER) TABLEGROUP", line)]
    assert active == statements(Colocation("by-user"))
    assert commented == statements(Colocation("one-node"))


@pytest.mark.parametrize("kwargs", [{"mode": "everywhere"}, {"mode": "by-user", "partitions": 0},
                                    {"mode": "one-node", "tablegroup": "tg; DROP TABLE x"}])
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(ConfigurationError):
        Colocation(**kwargs)


async def test_by_user_partitions_on_seekdb_and_everything_still_works(fresh_url, capsys):
    assert await cli("db", "upgrade", "--url", fresh_url, "--colocate", "by-user", "--partitions", "4") == 0
    err = capsys.readouterr().err
    assert await partitions(fresh_url) == {t: 4 for t in PER_USER_TABLES}
    assert err.count(": done") == len(PER_USER_TABLES) and err.count("skipped: seekdb has no table groups") == 2
    # again: nothing to do
    assert await cli("db", "upgrade", "--url", fresh_url, "--colocate", "by-user", "--partitions", "4") == 0
    assert capsys.readouterr().err.count("already partitioned (4 partitions)") == len(PER_USER_TABLES)
    # the whole kit on the partitioned tables
    assert await cli("selftest", "--url", fresh_url, "--embedder", "hash") == 0
    assert "7 passed, 0 failed" in capsys.readouterr().err


async def test_one_node_on_seekdb_changes_nothing(fresh_url, capsys):
    assert await cli("db", "upgrade", "--url", fresh_url, "--colocate", "one-node") == 0
    assert "skipped: seekdb has no table groups" in capsys.readouterr().err
    assert await partitions(fresh_url) == {}


async def test_mariadb_is_refused_and_nothing_partitioned(mariadb_fresh_url, capsys):
    assert await cli("db", "upgrade", "--url", mariadb_fresh_url, "--colocate", "by-user") == 2
    err = capsys.readouterr().err
    assert "co-location is for OceanBase clusters" in err and len(err.strip().splitlines()) == 1
    assert await partitions(mariadb_fresh_url) == {}
