"""OceanBaseSaver beyond the conformance suite: storage per channel version, typed errors, sync calls,
redaction, audit and erasure; on seekdb and MariaDB."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("langgraph.checkpoint.base")

from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_config, generate_metadata  # noqa: E402
from sqlalchemy import text  # noqa: E402

from adk_oceanbase import AuditSettings, RedactionPolicy, RuleRedactor  # noqa: E402
from adk_oceanbase.errors import (  # noqa: E402
    CheckpointTooLargeError,
    ConfigurationError,
    InvalidIdentifierError,
    InvalidValueError,
)
from adk_oceanbase.governance import delete_user_data  # noqa: E402
from adk_oceanbase.langgraph import OceanBaseSaver  # noqa: E402

from .stored import VALUES  # noqa: E402


async def count(db, sql: str, **params) -> int:
    async with db.engine.connect() as conn:
        return int((await conn.execute(text(sql), params)).scalar())


async def put_chain(saver, config, steps: list[dict], versions: list[dict]):
    stored = None
    for i, (values, new) in enumerate(zip(steps, versions)):
        cfg = dict(config["configurable"])
        if stored is not None:
            cfg["checkpoint_id"] = stored["configurable"]["checkpoint_id"]
        seen = {} if stored is None else dict((await saver.aget_tuple(stored)).checkpoint["channel_versions"])
        cp = generate_checkpoint(channel_values=values, channel_versions={**seen, **new})
        stored = await saver.aput({"configurable": cfg}, cp, generate_metadata(step=i), new)
    return stored


async def test_blobs_are_written_once_per_channel_version(engine_db) -> None:
    saver = OceanBaseSaver(database=engine_db)
    config = generate_config("t-blobs")
    big = {"messages": ["m"] * 50}
    last = await put_chain(  # "a" is a list: scalars ride in the checkpoint row (test_saver_inline.py)
        saver, config,
        [{"a": [1], "big": big}, {"a": [2], "big": big}, {"a": [3], "big": big}],
        [{"a": "1", "big": "1"}, {"a": "2"}, {"a": "3"}],
    )
    rows = await count(engine_db, f"SELECT COUNT(*) FROM {VALUES} WHERE thread_id = 't-blobs'")
    assert rows == 4  # a at 3 versions, big once
    got = await saver.aget_tuple(last)
    assert got.checkpoint["channel_values"] == {"a": [3], "big": big}
    first = [t async for t in saver.alist(config)][-1]
    assert first.checkpoint["channel_values"] == {"a": [1], "big": big}


async def test_list_filters_metadata_in_sql(engine_db) -> None:
    saver = OceanBaseSaver(database=engine_db)
    for i, source in enumerate(["input", "loop", "loop", "update"]):
        cp = generate_checkpoint()
        await saver.aput(generate_config("t-filter"), cp, generate_metadata(source=source, step=i, tags={"k": [i]}), {})
    loops = [t async for t in saver.alist(generate_config("t-filter"), filter={"source": "loop"})]
    assert [t.metadata["step"] for t in loops] == [2, 1]
    assert [t.metadata["step"] async for t in saver.alist(None, filter={"source": "loop"}, limit=1)] == [2]
    assert [t.metadata["step"] async for t in saver.alist(None, filter={"tags": {"k": [3]}})] == [3]
    assert [t async for t in saver.alist(None, filter={"source": "loop", "step": 7})] == []


@pytest.mark.parametrize(
    "config, error",
    [
        ({"configurable": {"thread_id": ""}}, InvalidIdentifierError),
        ({"configurable": {"thread_id": "t "}}, InvalidIdentifierError),
        ({"configurable": {"thread_id": "x" * 129}}, InvalidIdentifierError),
        ({"configurable": {"thread_id": "t", "checkpoint_ns": "n" * 256}}, InvalidIdentifierError),
        ({"configurable": {}}, InvalidIdentifierError),
    ],
)
async def test_bad_ids_are_typed_errors_before_any_write(engine_db, config, error) -> None:
    saver = OceanBaseSaver(database=engine_db)
    with pytest.raises(error):
        await saver.aput(config, generate_checkpoint(), generate_metadata(), {})
    assert await count(engine_db, "SELECT COUNT(*) FROM lg_checkpoints") == 0


async def test_oversized_values_write_nothing(engine_db) -> None:
    saver = OceanBaseSaver(database=engine_db, max_value_bytes=1000)
    cp = generate_checkpoint(channel_values={"a": "x" * 2000}, channel_versions={"a": "1"})
    with pytest.raises(CheckpointTooLargeError, match="channel 'a'"):
        await saver.aput(generate_config("t-big"), cp, generate_metadata(), {"a": "1"})
    stored = await saver.aput(generate_config("t-big"), generate_checkpoint(), generate_metadata(), {})
    with pytest.raises(CheckpointTooLargeError):
        await saver.aput_writes(stored, [("a", "ok"), ("b", "y" * 2000)], "task-1")
    assert await count(engine_db, "SELECT COUNT(*) FROM lg_checkpoint_blobs") == 0
    assert await count(engine_db, "SELECT COUNT(*) FROM lg_checkpoint_writes") == 0
    with pytest.raises(InvalidValueError):
        await saver.aput(generate_config("t-big"), generate_checkpoint(), generate_metadata(obj=object()), {})


async def test_sync_methods_run_from_a_thread_and_refuse_the_home_loop(engine_db) -> None:
    saver = OceanBaseSaver(database=engine_db)
    stored = await saver.aput(generate_config("t-sync"), generate_checkpoint(), generate_metadata(), {})

    def sync_side():
        saver.put_writes(stored, [("c", {"v": 1})], "task-s")
        return saver.get_tuple(generate_config("t-sync")), list(saver.list(generate_config("t-sync")))

    got, listed = await asyncio.to_thread(sync_side)
    assert got.pending_writes == [("task-s", "c", {"v": 1})]
    assert len(listed) == 1
    with pytest.raises(ConfigurationError, match="aget_tuple"):
        saver.get_tuple(generate_config("t-sync"))


def test_sync_saver_without_a_loop(migrated_url) -> None:
    """graph.invoke's case: no event loop at all; the saver runs its own and closes it."""
    with OceanBaseSaver(migrated_url) as saver:
        stored = saver.put(generate_config("t-noloop"), generate_checkpoint(), generate_metadata(), {})
        assert saver.get_tuple(stored).config == stored
        saver.delete_thread("t-noloop")
        assert saver.get_tuple(stored) is None


async def test_redaction_policy_covers_channel_values_and_writes(engine_db) -> None:
    saver = OceanBaseSaver(database=engine_db, redaction=RedactionPolicy(RuleRedactor()))
    cp = generate_checkpoint(channel_values={"note": "mail me at jane.doe@example.com"}, channel_versions={"note": "1"})
    stored = await saver.aput(generate_config("t-red"), cp, generate_metadata(), {"note": "1"})
    await saver.aput_writes(stored, [("note", "call +1 415 555 0100 or jane.doe@example.com")], "task-r")
    got = await saver.aget_tuple(stored)
    assert "jane.doe@example.com" not in got.checkpoint["channel_values"]["note"]
    assert "jane.doe@example.com" not in got.pending_writes[0][2]
    plain = OceanBaseSaver(database=engine_db, app_name="other")
    kept = await plain.aput(generate_config("t-red"), cp, generate_metadata(), {"note": "1"})
    assert (await plain.aget_tuple(kept)).checkpoint["channel_values"]["note"] == "mail me at jane.doe@example.com"


async def test_writes_are_audited_and_a_users_threads_are_erased(engine_db) -> None:
    saver = OceanBaseSaver(database=engine_db, app_name="lgapp", audit=AuditSettings())
    mine = {"configurable": {"thread_id": "t-user", "checkpoint_ns": "", "user_id": "alice"}}
    cp = generate_checkpoint(channel_values={"a": [1]}, channel_versions={"a": "1"})  # a list: not inline
    stored = await saver.aput(mine, cp, generate_metadata(), {"a": "1"})
    await saver.aput_writes({"configurable": {**mine["configurable"], **stored["configurable"]}}, [("a", 2)], "task-u")
    other = await saver.aput(generate_config("t-nobody"), generate_checkpoint(), generate_metadata(), {})
    assert await count(engine_db, "SELECT COUNT(*) FROM audit_log WHERE app_name = 'lgapp' AND operation = 'lg_put'") == 2
    assert await count(engine_db, "SELECT COUNT(*) FROM audit_log WHERE operation = 'lg_put_writes' AND user_id = 'alice'") == 1
    counts = await delete_user_data(engine_db, "lgapp", "alice")
    # the list's value rode in the checkpoint row (revision 0023): erased with it
    assert counts["lg_checkpoints"] == 1 and counts["lg_checkpoint_blobs"] == 0 and counts["lg_checkpoint_writes"] == 1
    assert await count(engine_db, f"SELECT COUNT(*) FROM {VALUES} WHERE user_id = 'alice'") == 0
    assert await saver.aget_tuple(stored) is None
    assert await saver.aget_tuple(other) is not None


async def test_delta_channel_history_replays_writes_in_task_path_order(engine_db) -> None:
    """LangGraph's default get_delta_channel_history walks get_tuple, which must give writes in writes_sort_key order."""
    saver = OceanBaseSaver(database=engine_db)
    seed = generate_checkpoint(channel_values={"log": ["seed"]}, channel_versions={"log": "1"})
    first = await saver.aput(generate_config("t-delta"), seed, generate_metadata(step=0), {"log": "1"})
    # task ids sort the other way round from their paths: the key order alone would give b before a
    await saver.aput_writes(first, [("log", "from-b")], "task-a", task_path="~b")
    await saver.aput_writes(first, [("log", "from-a")], "task-z", task_path="~a")
    child = dict(generate_config("t-delta")["configurable"], checkpoint_id=first["configurable"]["checkpoint_id"])
    second = await saver.aput({"configurable": child}, generate_checkpoint(channel_versions={"log": "2"}),
                              generate_metadata(step=1), {})
    history = await saver.aget_delta_channel_history(config=second, channels=["log"])
    assert [w[2] for w in history["log"]["writes"]] == ["from-a", "from-b"]
    assert history["log"]["seed"] == ["seed"]


async def test_a_stale_guess_of_the_latest_checkpoint_still_reads_right(engine_db) -> None:
    """get_tuple prefetches the blobs of the checkpoint this saver saw last; another writer's newer one must win."""
    mine, other = OceanBaseSaver(database=engine_db), OceanBaseSaver(database=engine_db)
    # lists, so the values are blobs (scalars ride in the checkpoint row: nothing to prefetch)
    cp1 = generate_checkpoint(channel_values={"a": ["one"], "b": ["kept"]}, channel_versions={"a": "1", "b": "1"})
    first = await mine.aput(generate_config("t-guess"), cp1, generate_metadata(step=0), {"a": "1", "b": "1"})
    parent = dict(generate_config("t-guess")["configurable"], checkpoint_id=first["configurable"]["checkpoint_id"])
    cp2 = generate_checkpoint(channel_values={"a": ["two"], "b": ["kept"]}, channel_versions={"a": "2", "b": "1"})
    await mine.aput_writes(first, [("a", "on-first")], "task-1")
    second = await other.aput({"configurable": parent}, cp2, generate_metadata(step=1), {"a": "2"})
    await other.aput_writes(second, [("a", "on-second")], "task-2")
    got = await mine.aget_tuple(generate_config("t-guess"))  # the writes are asked for by the guess's key, too
    assert got.checkpoint["id"] == cp2["id"] and got.checkpoint["channel_values"] == {"a": ["two"], "b": ["kept"]}
    assert got.pending_writes == [("task-2", "a", "on-second")]
    assert (await mine.aget_tuple(first)).checkpoint["channel_values"] == {"a": ["one"], "b": ["kept"]}


async def test_reads_are_audited_when_sampled(engine_db) -> None:
    saver = OceanBaseSaver(database=engine_db, app_name="lgread", audit=AuditSettings(read_sample=1.0))
    mine = {"configurable": {"thread_id": "t-read", "checkpoint_ns": "", "user_id": "erin"}}
    await saver.aput(mine, generate_checkpoint(), generate_metadata(), {})
    assert await saver.aget_tuple(mine) is not None
    assert len([t async for t in saver.alist(None)]) == 1
    got = await count(engine_db, "SELECT COUNT(*) FROM audit_log WHERE app_name = 'lgread' AND operation = 'lg_get' "
                                 "AND user_id = 'erin' AND session_id = 't-read' AND row_count = 1")
    assert got == 1
    assert await count(engine_db, "SELECT COUNT(*) FROM audit_log WHERE operation = 'lg_list' AND row_count = 1") == 1



async def test_the_saver_keeps_one_connection_and_survives_losing_it(engine_db, engine_migrated_url) -> None:
    """On its own engine its calls reuse the last call's connection (``rawtx.ConnectionLease``); a killed one is replaced.

    On a shared ``Database`` it keeps none (it may never be closed).
    """
    shared = OceanBaseSaver(database=engine_db)
    await shared.aput(generate_config("t-lease-shared"), generate_checkpoint(), generate_metadata(), {})
    assert shared._lease is None
    saver = OceanBaseSaver(engine_migrated_url)
    config = generate_config("t-lease")
    stored = await saver.aput(config, generate_checkpoint(channel_values={"a": [1]}, channel_versions={"a": "1"}),
                              generate_metadata(step=0), {"a": "1"})
    pool = saver.database.engine.sync_engine.pool
    assert pool.checkedout() == 1
    kept = saver._lease._pooled.driver_connection.thread_id()
    async with engine_db.engine.connect() as conn:  # kill the kept connection from another one
        await conn.exec_driver_sql(f"KILL {kept}")
    again = await saver.aput(stored, generate_checkpoint(channel_values={"a": [2]}, channel_versions={"a": "2"}),
                             generate_metadata(step=1), {"a": "2"})
    assert (await saver.aget_tuple(again)).checkpoint["channel_values"] == {"a": [2]}
    assert (await saver.aget_tuple(stored)).checkpoint["channel_values"] == {"a": [1]}
    assert saver._lease._pooled.driver_connection.thread_id() != kept
    assert pool.checkedout() == 1
    await saver.aclose()
    assert pool.checkedout() == 0


async def test_a_clone_with_another_serde_reads_and_writes_with_it(engine_db) -> None:
    """``with_allowlist`` (strict msgpack mode) gives the graph a shallow copy with its own ``serde``: used for reads too."""
    import copy

    saver = OceanBaseSaver(database=engine_db)
    stored = await saver.aput(generate_config("t-clone"), generate_checkpoint(), generate_metadata(), {})
    used: list[str] = []

    class Counting:
        def __init__(self, inner):
            self.inner = inner

        def dumps_typed(self, value):
            used.append("dumps")
            return self.inner.dumps_typed(value)

        def loads_typed(self, typed):
            used.append("loads")
            return self.inner.loads_typed(typed)

    clone = copy.copy(saver)  # what BaseCheckpointSaver.with_allowlist does
    clone.serde = Counting(saver.serde)
    await clone.aput_writes(stored, [("a", [1, 2])], "task-c")
    assert used == ["dumps"]
    got = await clone.aget_tuple(stored)
    assert got.pending_writes == [("task-c", "a", [1, 2])] and "loads" in used
    used.clear()
    assert [t.pending_writes async for t in clone.alist(generate_config("t-clone"))] == [got.pending_writes]
    assert "loads" in used
