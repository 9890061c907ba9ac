"""``adk-oceanbase gc`` on a database without tables: nothing to do, exit 0, nothing created (issue 33)."""

from __future__ import annotations

import asyncio
import json

import pymysql
import pytest
from sqlalchemy import text

from adk_oceanbase import Config
from adk_oceanbase.cli import main as cli_main
from adk_oceanbase.engine import Database
from adk_oceanbase.governance import Retention, RetentionPolicy, sweep

from ..conftest import unique_db_name


@pytest.fixture(params=["seekdb", "mariadb"])
def urls(request) -> tuple[str, str]:
    """A database that exists but holds none of our tables, and a migrated one, on the same engine.

    (A database that does not exist at all is a mistyped URL: ``DatabaseNotFoundError``, exit 1,
    tested in ``test_cli_errors.py``.)
    """
    if request.param == "seekdb":
        empty, migrated = request.getfixturevalue("fresh_url"), request.getfixturevalue("migrated_url")
        port = request.getfixturevalue("seekdb_server").port
    else:
        server = request.getfixturevalue("mariadb_server")
        empty, migrated, port = server.url_for(unique_db_name("gc_empty")), request.getfixturevalue("mariadb_migrated_url"), server.port
    with pymysql.connect(host="127.0.0.1", port=port, user="root", autocommit=True) as conn:
        conn.cursor().execute(f"CREATE DATABASE IF NOT EXISTS {empty.rsplit('/', 1)[1]}")
    return empty, migrated


async def table_names(url: str) -> list[str]:
    db = Database(Config.from_url(url))
    try:
        await db.start()
        async with db.engine.connect() as conn:
            return list((await conn.execute(text(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()"))).scalars())
    finally:
        await db.close()


async def test_gc_on_a_database_without_tables_has_nothing_to_do(urls, capsys):
    empty_url = urls[0]
    args = ["gc", "--url", empty_url, "--session-ttl", "30d", "--memory-ttl", "180d", "--audit-ttl", "400d"]
    assert await asyncio.to_thread(cli_main, args) == 0
    out = capsys.readouterr()
    assert out.out.strip().endswith(": nothing to do (no tables)") and out.err == ""
    assert await asyncio.to_thread(cli_main, args + ["--json", "--dry-run"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["tables"] is False and report["sessions"] == report["memories"] == report["audit_rows"] == 0
    assert await table_names(empty_url) == []

    db = Database(Config.from_url(empty_url))  # the API says the same
    try:
        counts = await sweep(db, RetentionPolicy(Retention(session_ttl="1d")))
        assert counts.tables is False and counts.sessions == 0
    finally:
        await db.close()
    assert await table_names(empty_url) == []


async def test_gc_json_has_the_same_shape_with_and_without_tables(urls, capsys):
    reports = []
    for url in urls:
        assert await asyncio.to_thread(cli_main, ["gc", "--url", url, "--session-ttl", "30d", "--json"]) == 0
        reports.append(json.loads(capsys.readouterr().out))
    empty, normal = reports
    assert set(empty) == set(normal)
    assert (empty["tables"], normal["tables"]) == (False, True)
