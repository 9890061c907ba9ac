"""No setup waits without a bound (issue #24): past ``Config.setup_timeout_s`` it fails with one line naming the wait.

Each test makes the wait certain before setup starts (a lock held by a
second connection), so nothing depends on timing; the ``wait_for`` guard only
turns the old behaviour (waiting 900 s or forever) into a failure.
"""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text

from adk_oceanbase import Config, SetupTimeoutError
from adk_oceanbase import migrations
from adk_oceanbase.engine import Database

from .conftest import unique_db_name

GUARD_S = 120  # far beyond the 1 s deadline: reaching it means setup did not stop


@pytest.fixture(params=["seekdb", "mariadb"])
def url(request):
    server = request.getfixturevalue("seekdb_server" if request.param == "seekdb" else "mariadb_server")
    return server.url_for(unique_db_name("deadline"))


async def _drop(db: Database) -> None:
    async with db.engine.begin() as conn:
        await conn.execute(text(f"DROP DATABASE IF EXISTS {db.config.database}"))


async def test_a_held_schema_lock_ends_in_a_typed_error_naming_it(url):
    first = Database(Config.from_url(url))
    await migrations.upgrade(first)
    waiter = Database(Config.from_url(url, setup_timeout_s=1))
    try:
        async with first.engine.connect() as holder:
            await holder.execute(text("SELECT name FROM adk_oceanbase_lock WHERE name = 'migrate' FOR UPDATE"))
            with pytest.raises(SetupTimeoutError) as info:
                await asyncio.wait_for(migrations.upgrade(waiter), GUARD_S)
            await holder.rollback()
        message = str(info.value)
        assert "schema lock" in message and "setup_timeout_s" in message and "\n" not in message
        assert await migrations.upgrade(waiter) == migrations.head_revision()  # released: setup goes on
    finally:
        await _drop(first)
        await waiter.close()
        await first.close()


async def test_ddl_blocked_by_an_open_transaction_ends_in_a_typed_error_naming_the_statement(url):
    """Revision 0007 rewrites agent_memories' key: it waits for a transaction that wrote the table, until the deadline."""
    before = Database(Config.from_url(url))
    await migrations.upgrade(before, "0006")
    await before.close()
    # 5 s, not 1: the deadline covers the whole upgrade, so the statements before the blocked ALTER
    # (schema lock, version check, 0007's key lookup) must fit in it; this test failed once in a full
    # run at load average 27 (output lost), and a slow step before the ALTER is the likely cause
    setup = Database(Config.from_url(url, setup_timeout_s=5))
    await setup.start()
    try:
        async with setup.engine.connect() as writer:
            await writer.execute(
                text(
                    "INSERT INTO agent_memories (memory_id, app_name, user_id, content, content_hash, created_at, "
                    "updated_at) VALUES ('m', 'a', 'u', 'hello', 'h', NOW(6), NOW(6))"
                )
            )
            with pytest.raises(SetupTimeoutError) as info:
                await asyncio.wait_for(migrations.upgrade(setup), GUARD_S)
            await writer.rollback()
        message = str(info.value)
        assert "ALTER TABLE agent_memories" in message and "\n" not in message
        assert await migrations.current_revision(setup) != migrations.head_revision()
        # the lock gone, setup completes (the deadline was short to stop soon; the rest takes longer)
        after = Database(Config.from_url(url))
        assert await migrations.upgrade(after) == migrations.head_revision()
        await after.close()
    finally:
        await _drop(setup)
        await setup.close()


async def test_an_embedded_directory_names_what_to_do(tmp_path):
    """The advice for a stuck embedded directory names the directory (no server to look into)."""
    from adk_oceanbase.setup_lock import SetupDeadline

    db = Database(Config.from_url(f"seekdb://{tmp_path / 'db'}", setup_timeout_s=5))
    message = str(SetupDeadline(db, "upgrade").error("`CREATE TABLE x`"))
    assert str(tmp_path / "db") in message and "setup_timeout_s" in message and "`CREATE TABLE x`" in message
