"""``RawTransaction.single``: one statement committed alone, in autocommit mode only on a lease's own connection;
every connection goes back to the pool in autocommit 0 (SQLAlchemy's assumption), on seekdb and MariaDB."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from adk_oceanbase.rawtx import COMMIT, ConnectionLease, raw_transaction

INSERT = ("INSERT INTO lg_checkpoint_writes (app_name, thread_id, checkpoint_id, task_id, idx, channel, value_type) "
          "VALUES ('rawtx', %(thread)s, 'c', 't', %(idx)s, 'ch', 'x')")


async def rows(engine, thread: str) -> int:
    async with engine.connect() as conn:  # another connection: sees only what was committed
        return int((await conn.execute(text("SELECT COUNT(*) FROM lg_checkpoint_writes WHERE thread_id = :t"),
                                       {"t": thread})).scalar())


async def autocommit_of(engine, lease: ConnectionLease | None = None) -> int:
    async with raw_transaction(engine, lease=lease) as tx:
        return int((await tx.batch([("SELECT @@autocommit", None)]))[0][1][0][0])


async def pooled_autocommit(engine) -> set[int]:
    """``@@autocommit`` of every connection the pool holds (all checked out at once, then given back)."""
    conns = [await engine.connect() for _ in range(max(engine.sync_engine.pool.checkedin(), 1))]
    try:
        return {int((await c.execute(text("SELECT @@autocommit"))).scalar()) for c in conns}
    finally:
        for c in conns:
            await c.close()


async def test_a_lease_connection_stays_in_autocommit_and_transactions_on_it_still_roll_back(engine_db) -> None:
    engine, lease = engine_db.engine, ConnectionLease()
    async with raw_transaction(engine, lease=lease) as tx:
        count, _ = await tx.single(INSERT, {"thread": "t-lease", "idx": 1})
    assert count == 1 and await rows(engine, "t-lease") == 1
    assert await autocommit_of(engine, lease) == 1  # the kept connection, switched once
    async with raw_transaction(engine, lease=lease) as tx:  # a second single: the statement alone
        await tx.single(INSERT, {"thread": "t-lease", "idx": 2})
    assert await rows(engine, "t-lease") == 2
    # a transaction of several statements on it is still one: the failing second undoes the first
    with pytest.raises(Exception):
        async with raw_transaction(engine, lease=lease) as tx:
            await tx.batch([(INSERT, {"thread": "t-lease", "idx": 3}), ("INSERT INTO no_such_table_here VALUES (1)", None)])
    assert await rows(engine, "t-lease") == 2
    with pytest.raises(RuntimeError):  # and one that fails between its round trips
        async with raw_transaction(engine, lease=lease) as tx:
            await tx.batch([(INSERT, {"thread": "t-lease", "idx": 4})])
            raise RuntimeError("the caller's own check failed")
    assert await rows(engine, "t-lease") == 2
    async with raw_transaction(engine, lease=lease) as tx:  # committed at the end, as on any connection
        await tx.batch([(INSERT, {"thread": "t-lease", "idx": 5})])
        await tx.batch([(INSERT, {"thread": "t-lease", "idx": 6})])
    assert await rows(engine, "t-lease") == 4
    assert await autocommit_of(engine, lease) == 1
    async with raw_transaction(engine, lease=lease) as tx:  # a read batch: its answers as on any connection
        got = await tx.batch([("SELECT 1", None), ("SELECT COUNT(*) FROM lg_checkpoint_writes WHERE thread_id = 't-lease'",
                                                    None), (COMMIT, None)], read_only=True)
        assert [r[1] for r in got[:2]] == [[(1,)], [(4,)]] and len(got) == 3
        await tx.single(INSERT, {"thread": "t-lease", "idx": 7})  # nothing left open before it
    assert await rows(engine, "t-lease") == 5
    await lease.release()
    assert await pooled_autocommit(engine) == {0}  # back in autocommit 0 before the pool saw it


async def test_without_a_lease_single_is_the_statement_and_commit_and_autocommit_stays_off(engine_db) -> None:
    engine = engine_db.engine
    with pytest.raises(Exception):
        async with raw_transaction(engine) as tx:
            await tx.single("INSERT INTO no_such_table_here VALUES (1)", None)
    async with raw_transaction(engine) as tx:
        count, _ = await tx.single(INSERT, {"thread": "t-pool", "idx": 1})
    assert count == 1 and await rows(engine, "t-pool") == 1
    assert await pooled_autocommit(engine) == {0}


async def test_a_connection_the_lease_does_not_keep_goes_back_in_autocommit_0(engine_db) -> None:
    engine, lease = engine_db.engine, ConnectionLease()
    await autocommit_of(engine, lease)  # the lease keeps this one
    async with raw_transaction(engine, lease=lease) as busy:
        await busy.batch([("SELECT 1", None)])
        async with raw_transaction(engine, lease=lease) as tx:  # the kept one is busy: one from the pool
            await tx.single(INSERT, {"thread": "t-other", "idx": 1})  # switched to autocommit 1 (may_autocommit)
    assert await rows(engine, "t-other") == 1
    await lease.release()
    assert await pooled_autocommit(engine) == {0}
