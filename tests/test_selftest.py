"""``adk-oceanbase selftest`` (issue #32): the cluster kit run here against seekdb and MariaDB, a failure reported, nothing left behind.

The same kit against a real cluster is ``tests/test_cluster_kit.py`` (marker ``cluster``).
"""

from __future__ import annotations

import asyncio
import json

from sqlalchemy import text

from adk_oceanbase.cli import main
from adk_oceanbase.config import Config
from adk_oceanbase.engine import Database
from adk_oceanbase.selftest import CHECKS


async def cli(*argv: str) -> int:
    return await asyncio.to_thread(main, list(argv))


async def rows_left(url: str) -> dict[str, int]:
    """Rows under any selftest app name, per table that holds sessions, events, state or memories."""
    db = Database(Config.from_url(url))
    try:
        await db.start()
        async with db.engine.connect() as conn:
            return {t: int((await conn.execute(text(f"SELECT COUNT(*) FROM {t} WHERE app_name LIKE 'adk_selftest_%'"))).scalar_one())
                    for t in ("agent_sessions", "session_events", "session_state", "agent_memories", "memory_terms")}
    finally:
        await db.close()


async def test_every_check_passes_and_cleans_up(engine_fresh_url, capsys):
    code = await cli("selftest", "--url", engine_fresh_url, "--embedder", "hash", "--json")
    out = capsys.readouterr()
    results = [json.loads(line) for line in out.out.splitlines()]
    assert [r["check"] for r in results] == list(CHECKS)
    assert all(r["ok"] for r in results), results
    assert code == 0 and "7 passed, 0 failed" in out.err
    assert "recall@5 1.00" in results[-1]["detail"] and "ADK's InMemorySessionService" in results[2]["detail"]
    assert set((await rows_left(engine_fresh_url)).values()) == {0}


async def test_a_failed_check_is_reported_and_exits_1(engine_fresh_url, capsys):
    """A recall bar no search can reach: that check fails, the others still run and pass."""
    code = await cli("selftest", "--url", engine_fresh_url, "--embedder", "hash",
                     "--check", "server", "--check", "recall", "--check", "contract", "--min-recall", "1.01")
    out = capsys.readouterr()
    rows = out.out.splitlines()
    assert code == 1 and len(rows) == 3
    assert rows[0].startswith("PASS  server") and rows[2].startswith("PASS  contract")
    assert rows[1].startswith("FAIL  recall") and "below 1.01" in rows[1]
    assert "2 passed, 1 failed: recall" in out.err


async def test_unsupported_server_blocks_the_rest(engine_fresh_url, monkeypatch, capsys):
    from adk_oceanbase.server_version import TEST_VERSION_ENV

    monkeypatch.setenv(TEST_VERSION_ENV, "5.7.25-OceanBase_CE-v4.2.1.2")
    code = await cli("selftest", "--url", engine_fresh_url, "--embedder", "hash")
    rows = capsys.readouterr().out.splitlines()
    assert code == 1 and rows[0].startswith("FAIL  server") and "UnsupportedServerError" in rows[0]
    assert all(r.startswith("FAIL") and "not run: server failed" in r for r in rows[1:]) and len(rows) == len(CHECKS)


async def test_an_older_schema_is_reported_not_migrated(engine_fresh_url, capsys):
    """selftest never migrates a database behind the operator's back: `db upgrade` does that."""
    from adk_oceanbase import migrations

    db = Database(Config.from_url(engine_fresh_url), create=True)
    try:
        await migrations.upgrade(db, "0014")
    finally:
        await db.close()
    code = await cli("selftest", "--url", engine_fresh_url, "--embedder", "hash", "--check", "schema", "--check", "contract")
    rows = capsys.readouterr().out.splitlines()
    assert code == 1 and rows[0].startswith("FAIL  schema") and "SchemaOutdatedError" in rows[0] and "db upgrade" in rows[0]
    assert "not run: schema failed" in rows[1]
    db = Database(Config.from_url(engine_fresh_url))
    try:
        assert await migrations.current_revision(db) == "0014"
    finally:
        await db.close()
