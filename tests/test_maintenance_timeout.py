"""Maintenance runs under ``Config.maintenance_timeout_s``, not the request timeout ``query_timeout_s`` (issue #32).

``memory rebuild-index`` took 85-122 s at 1M rows while every pooled
connection carried the 60 s statement timeout.  Checked on both engines with
the server's own timeout: a statement longer than ``query_timeout_s`` fails
on a pooled connection and finishes on a maintenance connection, whose
settings never reach the pool.
"""

from __future__ import annotations

import pytest
from sqlalchemy import text

from adk_oceanbase import gateway, maintenance
from adk_oceanbase.cli import build_parser
from adk_oceanbase.commands.services import database
from adk_oceanbase.config import Config
from adk_oceanbase.engine import Database
from adk_oceanbase.errors import ConfigurationError, QueryTimeoutError
from adk_oceanbase.memory import MemorySettings, OceanBaseMemoryService

# The server's statement timeout variable and its unit per engine: seconds in the variable = value / scale.
TIMEOUT_VARIABLE = {"seekdb": ("@@ob_query_timeout", 1_000_000), "mariadb": ("@@max_statement_time", 1)}


def test_config_field_url_and_environment():
    assert Config.from_url("oceanbase://root@h:1/db").maintenance_timeout_s == 3600.0
    assert Config.from_url("oceanbase://root@h:1/db?maintenance_timeout_s=7200").maintenance_timeout_s == 7200.0
    env = {"ADK_OCEANBASE_MAINTENANCE_TIMEOUT_S": "900"}
    assert Config.from_url("oceanbase://root@h:1/db", environ=env).maintenance_timeout_s == 900.0
    with pytest.raises(ConfigurationError, match="maintenance_timeout_s"):
        Config.from_url("oceanbase://root@h:1/db?maintenance_timeout_s=0")


@pytest.mark.parametrize("words,field", [
    (["memory", "rebuild-index"], "maintenance_timeout_s"),
    (["memory", "reembed"], "maintenance_timeout_s"),
    (["db", "upgrade"], "setup_timeout_s"),
    (["db", "downgrade", "base"], "setup_timeout_s"),
])
def test_timeout_flag_reaches_the_config(words, field):
    args = build_parser().parse_args([*words, "--url", "oceanbase://root@h:1/db", "--timeout", "5400"])
    assert getattr(database(args).config, field) == 5400.0
    plain = build_parser().parse_args([*words, "--url", "oceanbase://root@h:1/db"])
    assert getattr(database(plain).config, field) == getattr(Config(), field)


async def _timeout_s(conn, engine: str) -> float:
    variable, scale = TIMEOUT_VARIABLE[engine]
    return float((await conn.execute(text(f"SELECT {variable}"))).scalar_one()) / scale


async def test_maintenance_connection_outlives_the_request_timeout(engine_migrated_url, engine):
    db = Database(Config.from_url(engine_migrated_url, query_timeout_s=1, maintenance_timeout_s=30, pool_size=1))
    try:
        with pytest.raises(QueryTimeoutError):  # the gateway types the error as the block ends
            async with gateway.connection(db) as conn:
                assert await _timeout_s(conn, engine) == 1
                await conn.execute(text("SELECT SLEEP(2)"))
        async with maintenance.connection(db) as conn:
            assert await _timeout_s(conn, engine) == 30
            await conn.execute(text("SELECT SLEEP(2)"))  # past query_timeout_s: finishes here
        async with gateway.connection(db) as conn:  # the pool never holds the long timeout
            assert await _timeout_s(conn, engine) == 1
    finally:
        await db.close()


async def test_rebuild_index_runs_on_a_maintenance_connection(migrated_url, monkeypatch):
    """rebuild_vector_index() on seekdb: its statement runs with maintenance_timeout_s as the server's timeout."""
    from contextlib import asynccontextmanager

    seen: list[float] = []
    real = maintenance.connection

    @asynccontextmanager
    async def observed(db_):  # observes the real connection; the real statement runs on it
        async with real(db_) as conn:
            seen.append(await _timeout_s(conn, "seekdb"))
            yield conn

    monkeypatch.setattr(maintenance, "connection", observed)
    db = Database(Config.from_url(migrated_url, query_timeout_s=5, maintenance_timeout_s=600))
    mem = OceanBaseMemoryService(database=db, settings=MemorySettings(background_start=False))
    try:
        assert await mem.rebuild_vector_index() is True
    finally:
        await mem.close()
        await db.close()
    assert seen == [600]
