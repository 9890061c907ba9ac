"""``rawtx.ConnectionLease``: one pooled connection kept between an owner's transactions, on seekdb and MariaDB."""

from __future__ import annotations

import asyncio

import pytest

from adk_oceanbase.rawtx import ConnectionLease, raw_transaction


async def connection_id(engine, lease) -> int:
    async with raw_transaction(engine, lease=lease) as tx:
        return (await tx.batch([("SELECT CONNECTION_ID()", None)]))[0][1][0][0]


async def test_a_lease_keeps_one_connection_between_transactions_and_gives_it_back(engine_db) -> None:
    engine, lease = engine_db.engine, ConnectionLease()
    before = engine.sync_engine.pool.checkedout()
    ids = {await connection_id(engine, lease) for _ in range(3)}
    assert len(ids) == 1
    assert engine.sync_engine.pool.checkedout() == before + 1  # still one of the pool's
    await lease.release()
    assert engine.sync_engine.pool.checkedout() == before


async def test_a_transaction_finding_the_kept_connection_busy_takes_one_from_the_pool(engine_db) -> None:
    engine, lease = engine_db.engine, ConnectionLease()
    kept = await connection_id(engine, lease)
    before = engine.sync_engine.pool.checkedout()
    async with raw_transaction(engine, lease=lease) as first:
        assert (await first.batch([("SELECT CONNECTION_ID()", None)]))[0][1][0][0] == kept
        other = await connection_id(engine, lease)  # while the kept one is in use
        assert other != kept
    assert engine.sync_engine.pool.checkedout() == before  # the other one went back to the pool
    assert await connection_id(engine, lease) == kept
    await lease.release()


async def test_a_server_error_keeps_the_connection_a_cancelled_statement_drops_it(engine_db) -> None:
    engine, lease = engine_db.engine, ConnectionLease()
    kept = await connection_id(engine, lease)
    with pytest.raises(Exception):
        async with raw_transaction(engine, lease=lease) as tx:
            await tx.batch([("SELECT * FROM no_such_table_here", None)])
    assert await connection_id(engine, lease) == kept  # rolled back: in step with the server, kept

    async def slow() -> None:
        async with raw_transaction(engine, lease=lease) as tx:
            await tx.batch([("SELECT SLEEP(5)", None)])

    task = asyncio.create_task(slow())
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    fresh = await connection_id(engine, lease)  # the reply was never read: that connection is gone
    assert fresh != kept
    assert await connection_id(engine, lease) == fresh
    await lease.release()


async def test_a_lease_past_its_recycle_age_hands_its_connection_back_first(engine_db) -> None:
    engine, lease = engine_db.engine, ConnectionLease(recycle_s=0)
    before = engine.sync_engine.pool.checkedout()
    for _ in range(3):  # each time the kept one is too old: checked in, then one taken from the pool
        await connection_id(engine, lease)
        await asyncio.sleep(0.01)
    assert engine.sync_engine.pool.checkedout() == before + 1
    await lease.release()
    assert engine.sync_engine.pool.checkedout() == before
