"""The version gate (issue #32): real version strings of both engines read, and an old server refused before any write.

The refusal runs on the real servers: the documented test seam
``ADK_OCEANBASE_TEST_SERVER_VERSION`` replaces what the server reports, and
the test then checks that ``upgrade()`` / ``db upgrade`` wrote nothing.
"""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text

from adk_oceanbase import migrations, server_version
from adk_oceanbase.cli import main
from adk_oceanbase.config import Config
from adk_oceanbase.engine import Database
from adk_oceanbase.errors import UnsupportedServerError
from adk_oceanbase.server_version import TEST_VERSION_ENV, check, parse

# (VERSION(), OB_VERSION() or None, engine, release, supported). Strings as the servers report them:
# seekdb 1.4 from the test server; OceanBase CE from live probes recorded in public projects
# (4.2.1.2, 4.3.5.5/6, 4.4.2.1), the enterprise / MySQL-8-mode form from go-sql-driver style tests.
REAL = [
    ("5.7.25-OceanBase seekdb-v1.4.0.0", "4.3.5.3", "seekdb", (1, 4, 0, 0), True),
    ("5.7.25-OceanBase seekdb-v1.0.0.0", "4.3.5.1", "seekdb", (1, 0, 0, 0), True),
    ("5.7.25-OceanBase seekdb-v0.9.0.0", "4.3.5.0", "seekdb", (0, 9, 0, 0), False),
    ("5.7.25-OceanBase_CE-v4.3.5.1", None, "oceanbase", (4, 3, 5, 1), True),
    ("5.7.25-OceanBase_CE-v4.3.5.6", None, "oceanbase", (4, 3, 5, 6), True),
    ("5.7.25-OceanBase_CE-v4.4.2.1", None, "oceanbase", (4, 4, 2, 1), True),
    ("5.7.25-OceanBase_CE-v4.3.5.0", None, "oceanbase", (4, 3, 5, 0), False),  # 4.3.5 GA: no ik parser yet
    ("5.7.25-OceanBase_CE-v4.3.3.0", None, "oceanbase", (4, 3, 3, 0), False),
    ("5.7.25-OceanBase_CE-v4.2.1.2", None, "oceanbase", (4, 2, 1, 2), False),
    ("8.0.25-OceanBase-v4.2.0", None, "oceanbase", (4, 2, 0), False),
    ("10.11.19-MariaDB-0+deb12u1", None, "mariadb", (10, 11, 19), True),
    ("10.6.18-MariaDB", None, "mariadb", (10, 6, 18), True),
    ("10.5.23-MariaDB-0+deb11u1", None, "mariadb", (10, 5, 23), False),  # no JSON_TABLE
    ("5.5.5-10.11.6-MariaDB", None, "mariadb", (10, 11, 6), True),  # the old handshake prefix
    ("8.0.36", None, "mysql", (8, 0, 36), True),
    ("8.0.36-28", None, "mysql", (8, 0, 36), True),  # Percona
    ("8.0.3-rc", None, "mysql", (8, 0, 3), False),
    ("5.7.44-log", None, "mysql", (5, 7, 44), False),
]


@pytest.mark.parametrize("version,ob_version,engine,release,supported", REAL, ids=[r[0] for r in REAL])
def test_parse_real_version_strings(version, ob_version, engine, release, supported):
    server = parse(version, ob_version)
    assert (server.engine, server.release) == (engine, release)
    if supported:
        assert check(server) is server
        return
    with pytest.raises(UnsupportedServerError) as refused:
        check(server, "oceanbase://root@h:2881/adk")
    message = str(refused.value)
    assert "\n" not in message and "oceanbase://root@h:2881/adk" in message
    assert "OceanBase 4.3.5.1 (4.3.5 BP1, for the ik full-text parser)" in message
    assert "developed on seekdb 1.4.0.0" in message and "MariaDB 10.6+" in message and "MySQL 8.0.4+" in message


def test_seekdb_kernel_is_what_is_checked():
    """seekdb's own release number says nothing about the kernel: OB_VERSION() decides, and its absence refuses."""
    assert parse("5.7.25-OceanBase seekdb-v1.4.0.0", "4.3.5.3").kernel == (4, 3, 5, 3)
    with pytest.raises(UnsupportedServerError, match="reports no OB_VERSION"):
        check(parse("5.7.25-OceanBase seekdb-v1.4.0.0", None))


def test_unreadable_version_is_refused():
    with pytest.raises(UnsupportedServerError, match="cannot read a version"):
        parse("unknown-server")


async def test_reads_the_real_servers(engine_db, engine):
    server = await server_version.require_supported(engine_db)
    if engine == "seekdb":
        assert server.engine == "seekdb" and server.kernel is not None and server.kernel >= (4, 3, 5, 1)
    else:
        assert server.engine == "mariadb" and server.release >= (10, 6) and server.kernel is None


async def _tables(url: str) -> list[str]:
    db = Database(Config.from_url(url), create=True)
    try:
        await db.start()
        async with db.engine.connect() as conn:
            return list((await conn.execute(text("SHOW TABLES"))).scalars())
    finally:
        await db.close()


OLD = {"seekdb": "5.7.25-OceanBase seekdb-v0.9.0.0;4.3.4.0", "mariadb": "10.5.23-MariaDB"}


async def test_upgrade_refuses_an_old_server_before_writing(engine_fresh_url, engine, monkeypatch):
    monkeypatch.setenv(TEST_VERSION_ENV, OLD[engine])
    db = Database(Config.from_url(engine_fresh_url), create=True)
    try:
        with pytest.raises(UnsupportedServerError, match="4.3.5.1"):
            await migrations.upgrade(db)
    finally:
        await db.close()
    monkeypatch.delenv(TEST_VERSION_ENV)
    assert await _tables(engine_fresh_url) == []  # not even the setup lock table


async def test_db_upgrade_prints_one_line_and_exits_2(engine_fresh_url, engine, monkeypatch, capsys):
    monkeypatch.setenv(TEST_VERSION_ENV, OLD[engine])
    code = await asyncio.to_thread(main, ["db", "upgrade", "--url", engine_fresh_url])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith("adk-oceanbase: error: ") and "needs OceanBase 4.3.5.1" in err
    monkeypatch.delenv(TEST_VERSION_ENV)
    assert await _tables(engine_fresh_url) == []


async def test_first_use_refuses_an_old_server_too(engine_fresh_url, engine, monkeypatch):
    """The lazy setup of a service's first call (create_if_new) goes through the same gate."""
    from adk_oceanbase import OceanBaseSessionService

    monkeypatch.setenv(TEST_VERSION_ENV, OLD[engine])
    svc = OceanBaseSessionService(engine_fresh_url)
    try:
        with pytest.raises(UnsupportedServerError):
            await svc.create_session(app_name="a", user_id="u")
    finally:
        await svc.close()
    monkeypatch.delenv(TEST_VERSION_ENV)
    assert await _tables(engine_fresh_url) == []
