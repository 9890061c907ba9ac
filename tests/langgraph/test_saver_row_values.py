"""A put's changed value riding in its checkpoint row (``lg_checkpoints.delta_*``, revision 0023): chains whose
versions live in checkpoint rows read back exactly after deleted runs, prune, copy and a restart; rows of the
layout before still read; a put on a shared ``Database`` leaves its pooled connection in autocommit 0."""

from __future__ import annotations

import pytest

pytest.importorskip("langgraph.checkpoint.base")

from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_config, generate_metadata  # noqa: E402
from sqlalchemy import text  # noqa: E402

from adk_oceanbase.langgraph import OceanBaseSaver  # noqa: E402

from .stored import VALUES  # noqa: E402


def history(n: int) -> list:
    return [(HumanMessage if i % 2 else AIMessage)(content=f"message {i} " + "word " * (i % 5), id=f"m{i}")
            for i in range(n)]


async def grow(saver, config, start: int, stop: int, run: str = "r1") -> list:
    """Checkpoints ``start..stop-1`` on ``config`` (its checkpoint, if any, the parent), ``i`` holding ``history(i + 1)``."""
    out = []
    prev = await saver.aget_tuple(config) if "checkpoint_id" in config["configurable"] else None
    versions = dict(prev.checkpoint["channel_versions"]) if prev else {}
    for i in range(start, stop):
        new = {"messages": saver.get_next_version(versions.get("messages"), None)}
        versions.update(new)
        cp = generate_checkpoint(channel_values={"messages": history(i + 1), "step": i}, channel_versions=dict(versions))
        config = await saver.aput({"configurable": {**config["configurable"], "run_id": run}}, cp,
                                  generate_metadata(step=i, run_id=run), new)
        out.append(config)
    return out


async def scalar(db, sql: str, **params) -> int:
    async with db.engine.connect() as conn:
        return int((await conn.execute(text(sql), params)).scalar())


async def in_rows(db, thread: str) -> int:
    return await scalar(db, "SELECT COUNT(*) FROM lg_checkpoints WHERE thread_id = :t AND delta_payload IS NOT NULL", t=thread)


async def in_blobs(db, thread: str) -> int:
    return await scalar(db, "SELECT COUNT(*) FROM lg_checkpoint_blobs WHERE thread_id = :t", t=thread)


async def read_all(saver, configs, first: int) -> list:
    return [(await saver.aget_tuple(c)).checkpoint["channel_values"]["messages"] for c in configs], [
        history(i + 1) for i in range(first, first + len(configs))]


async def test_a_put_is_one_row_and_its_chain_reads_back_in_any_saver(engine_db) -> None:
    async with OceanBaseSaver(database=engine_db, delta_every=4) as saver:
        configs = await grow(saver, generate_config("t-rows"), 0, 10)
        assert await in_rows(engine_db, "t-rows") == 10 and await in_blobs(engine_db, "t-rows") == 0
        got, want = await read_all(saver, configs, 0)
        assert got == want
    async with OceanBaseSaver(database=engine_db, delta_every=4) as fresh:  # a restarted process
        got, want = await read_all(fresh, configs, 0)
        assert got == want
        listed = [t.checkpoint["channel_values"]["messages"] async for t in fresh.alist(generate_config("t-rows"))]
        assert listed == [history(n) for n in range(10, 0, -1)]
        more = await grow(fresh, configs[-1], 10, 13)  # builds on what it read
        assert (await fresh.aget_tuple(more[-1])).checkpoint["channel_values"]["messages"] == history(13)
    async with OceanBaseSaver(database=engine_db, delta_every=4) as other:
        assert (await other.aget_tuple(generate_config("t-rows"))).checkpoint["channel_values"]["messages"] == history(13)


async def test_deleted_runs_move_the_values_later_checkpoints_rest_on(engine_db) -> None:
    async with OceanBaseSaver(database=engine_db) as saver:
        first = await grow(saver, generate_config("t-runs"), 0, 5, run="r-old")
        later = await grow(saver, first[-1], 5, 8, run="r-new")  # deltas on r-old's versions
        await saver.adelete_for_runs(["r-old"])
        assert await in_blobs(engine_db, "t-runs") == 5 and await in_rows(engine_db, "t-runs") == 3
        for reader in (saver, OceanBaseSaver(database=engine_db)):
            got, want = await read_all(reader, later, 5)
            assert got == want
            assert await reader.aget_tuple(first[0]) is None
        more = await grow(saver, later[-1], 8, 9, run="r-new")
        assert (await OceanBaseSaver(database=engine_db).aget_tuple(more[-1])).checkpoint["channel_values"][
            "messages"] == history(9)


async def test_prune_keeps_the_latest_and_moves_the_bases_it_names(engine_db) -> None:
    async with OceanBaseSaver(database=engine_db) as saver:
        configs = await grow(saver, generate_config("t-prune"), 0, 6)
        await saver.aprune(["t-prune"], strategy="keep_latest")
        assert await in_rows(engine_db, "t-prune") == 1 and await in_blobs(engine_db, "t-prune") == 5
        assert await scalar(engine_db, f"SELECT COUNT(*) FROM {VALUES} WHERE thread_id = 't-prune'") == 6
        for reader in (saver, OceanBaseSaver(database=engine_db)):
            assert (await reader.aget_tuple(configs[-1])).checkpoint["channel_values"]["messages"] == history(6)
        more = await grow(saver, configs[-1], 6, 8)
        assert (await OceanBaseSaver(database=engine_db).aget_tuple(more[-1])).checkpoint["channel_values"][
            "messages"] == history(8)
        await saver.aprune(["t-prune"], strategy="keep_latest")  # again: what moved before stays as needed
        assert (await OceanBaseSaver(database=engine_db).aget_tuple(more[-1])).checkpoint["channel_values"][
            "messages"] == history(8)


async def test_a_copied_thread_reads_from_its_own_rows(engine_db) -> None:
    async with OceanBaseSaver(database=engine_db) as saver:
        configs = await grow(saver, generate_config("t-from"), 0, 5)
        await saver.acopy_thread("t-from", "t-to")
        await saver.adelete_thread("t-from")
        assert await in_rows(engine_db, "t-to") == 5
        to = [{"configurable": {**c["configurable"], "thread_id": "t-to"}} for c in configs]
        for reader in (saver, OceanBaseSaver(database=engine_db)):
            got, want = await read_all(reader, to, 0)
            assert got == want


async def test_rows_of_the_layout_before_read_and_are_built_on(engine_db, monkeypatch) -> None:
    """Checkpoints written before revision 0023 (every value a blob row, no rows named) read, and a chain continues on them."""
    with monkeypatch.context() as m:
        m.setattr(OceanBaseSaver, "_rider", staticmethod(lambda blobs, riders: None))
        async with OceanBaseSaver(database=engine_db) as old:
            before = await grow(old, generate_config("t-layout"), 0, 4)
    assert await in_rows(engine_db, "t-layout") == 0 and await in_blobs(engine_db, "t-layout") == 4
    async with OceanBaseSaver(database=engine_db) as saver:
        after = await grow(saver, before[-1], 4, 7)
        assert await in_rows(engine_db, "t-layout") == 3
        for reader in (saver, OceanBaseSaver(database=engine_db)):
            got, want = await read_all(reader, before + after, 0)
            assert got == want
        await saver.aprune(["t-layout"], strategy="keep_latest")
        assert (await OceanBaseSaver(database=engine_db).aget_tuple(after[-1])).checkpoint["channel_values"][
            "messages"] == history(7)


async def test_a_put_on_a_shared_database_leaves_its_connection_in_autocommit_0(engine_db) -> None:
    saver = OceanBaseSaver(database=engine_db)  # no lease on a shared Database: pooled connections only
    await grow(saver, generate_config("t-shared"), 0, 3)
    assert await in_rows(engine_db, "t-shared") == 3
    conns = [await engine_db.engine.connect() for _ in range(max(engine_db.engine.sync_engine.pool.checkedin(), 1))]
    try:
        assert {int((await c.execute(text("SELECT @@autocommit"))).scalar()) for c in conns} == {0}
    finally:
        for c in conns:
            await c.close()
    # what an ADK service does next on the pool: a transaction it rolls back leaves nothing
    async with engine_db.engine.connect() as conn:
        await conn.execute(text("INSERT INTO lg_checkpoint_writes (app_name, thread_id, checkpoint_id, task_id, idx, "
                                "channel, value_type) VALUES ('x', 't-shared', 'c', 't', 0, 'ch', 'x')"))
        await conn.rollback()
    assert await scalar(engine_db, "SELECT COUNT(*) FROM lg_checkpoint_writes WHERE thread_id = 't-shared'") == 0
