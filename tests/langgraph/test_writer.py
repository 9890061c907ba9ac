"""The saver's group commit: writes arriving while one runs share one transaction, each caller keeps its own outcome."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("langgraph.checkpoint.base")

from sqlalchemy import event, text  # noqa: E402

from adk_oceanbase.langgraph import OceanBaseSaver  # noqa: E402
from adk_oceanbase.langgraph.writer import GroupWriter  # noqa: E402


async def test_concurrent_put_writes_share_transactions(engine_db) -> None:
    saver = OceanBaseSaver(database=engine_db)
    await saver.setup()
    checkouts = []
    listener = lambda *_: checkouts.append(1)  # noqa: E731
    event.listen(engine_db.engine.sync_engine, "checkout", listener)
    try:
        config = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "c1"}}
        await asyncio.gather(*(saver.aput_writes(config, [("ch", i)], f"task{i}") for i in range(10)))
    finally:
        event.remove(engine_db.engine.sync_engine, "checkout", listener)
    async with engine_db.engine.connect() as conn:
        count = (await conn.execute(text("SELECT COUNT(*) FROM lg_checkpoint_writes WHERE thread_id = 't'"))).scalar()
    assert count == 10
    assert len(checkouts) <= 2  # the first alone, the nine that queued behind it together (was: 10)
    await saver.aclose()


async def test_a_failing_member_fails_alone_and_a_cancelled_waiter_is_dropped() -> None:
    groups: list[list[str]] = []
    gate = asyncio.Event()

    async def commit(statements):
        if not groups:
            await gate.wait()  # the first write holds the line while the others queue
        groups.append([s for s, _ in statements])
        if any(s == "bad" for s, _ in statements):
            raise ValueError("bad statement")

    writer = GroupWriter(commit)
    first = asyncio.ensure_future(writer.write([("first", None)]))
    await asyncio.sleep(0)
    good = asyncio.ensure_future(writer.write([("good", None)]))
    bad = asyncio.ensure_future(writer.write([("bad", None)]))
    gone = asyncio.ensure_future(writer.write([("gone", None)]))
    await asyncio.sleep(0)
    gone.cancel()
    gate.set()
    await first
    await good
    with pytest.raises(ValueError):
        await bad
    await writer.idle()
    assert groups == [["first"], ["good", "bad"], ["good"], ["bad"]]
    assert writer.transactions == 2
