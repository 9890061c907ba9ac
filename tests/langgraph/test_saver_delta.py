"""Append-only lists stored as deltas (``adk_oceanbase.langgraph.delta``): byte-exact rebuilds, chains every
``delta_every`` versions, non-appends stored whole, and every read path (get, time travel, list, another saver,
copy, prune, rows of the layout before) on seekdb and MariaDB."""

from __future__ import annotations

import pytest

pytest.importorskip("langgraph.checkpoint.base")

from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_config, generate_metadata  # noqa: E402
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer  # noqa: E402
from sqlalchemy import text  # noqa: E402

from adk_oceanbase.errors import CheckpointCorruptError, ConfigurationError  # noqa: E402
from adk_oceanbase.langgraph import OceanBaseSaver  # noqa: E402
from adk_oceanbase.langgraph import delta  # noqa: E402

from .stored import VALUES  # noqa: E402

SERDE = JsonPlusSerializer()


def message(i: int):
    return (HumanMessage if i % 2 else AIMessage)(content=f"message {i} " + "word " * (i % 7), id=f"m{i}")


def history(n: int) -> list:
    return [message(i) for i in range(n)]


# ---------------------------------------------------------------- pure
def chain_of(lists: list[list], every: int) -> list[delta.Plan]:
    plans, known = [], None
    for i, value in enumerate(lists):
        vtype, payload = SERDE.dumps_typed(value)
        plans.append(delta.plan(known, f"v{i}", vtype, payload, "u", every))
        known = plans[-1].known
    return plans


@pytest.mark.parametrize("sizes", [[1, 2, 3], [14, 15, 16, 17, 20], [65530, 65535, 65536, 65540]])
def test_a_rebuilt_list_is_the_serializers_own_bytes(sizes) -> None:
    """Across msgpack's header widths (fixarray, array16, array32) the rebuilt bytes equal a whole dump's."""
    lists = [list(range(n)) for n in sizes]
    plans = chain_of(lists, every=8)
    assert [p.vtype for p in plans] == ["msgpack"] + ["append+msgpack"] * (len(sizes) - 1)
    rows = {f"v{i}": (p.vtype, bytes(p.payload)) for i, p in enumerate(plans)}
    for i, value in enumerate(lists):
        vtype, data = rows[f"v{i}"]
        if vtype.startswith(delta.APPEND):
            vtype, data, chain = delta.assemble(f"v{i}", vtype, data, rows.get)
            assert chain == tuple(f"v{j}" for j in range(i))
        assert (vtype, data) == SERDE.dumps_typed(value)


def test_a_snapshot_every_n_versions_and_non_appends_are_whole() -> None:
    plans = chain_of([history(n) for n in range(1, 8)], every=3)
    assert [len(p.chain) for p in plans] == [0, 1, 2, 0, 1, 2, 0]
    edited = history(4)
    edited[1] = message(99)
    for value in (history(3)[1:], edited, history(2), list(reversed(history(5)))):  # removal, edit, shorter, reorder
        known = chain_of([history(4)], every=8)[0].known
        assert delta.plan(known, "v9", *SERDE.dumps_typed(value), "u", 8).vtype == "msgpack"
    other_user = chain_of([history(4)], every=8)[0].known
    assert delta.plan(other_user, "v9", *SERDE.dumps_typed(history(5)), "someone else", 8).chain == ()
    assert delta.plan(None, "v", *SERDE.dumps_typed({"not": "a list"}), "u", 8).known.count is None
    assert chain_of([history(2), history(3)], every=1)[1].vtype == "msgpack"


def test_a_chain_that_does_not_add_up_is_a_typed_error() -> None:
    plans = chain_of([history(2), history(3), history(5)], every=8)
    rows = {f"v{i}": (p.vtype, bytes(p.payload)) for i, p in enumerate(plans)}
    rows["v1"] = ("append+msgpack", rows["v1"][1].replace(b"\n1\n", b"\n2\n", 1))  # v1 claims 2 appended
    with pytest.raises(CheckpointCorruptError):
        delta.assemble("v2", *rows["v2"], rows.get)
    with pytest.raises(delta.MissingBase):
        delta.assemble("v2", *rows["v2"], {"v2": rows["v2"]}.get)


def test_delta_every_must_be_positive() -> None:
    with pytest.raises(ConfigurationError):
        OceanBaseSaver("seekdb:///tmp/never-opened", delta_every=0, auto_setup=False)


# ---------------------------------------------------------------- on the database
async def rows_of(db, thread: str) -> list[tuple[str, str]]:
    async with db.engine.connect() as conn:
        rows = (await conn.execute(text(
            f"SELECT version, value_type FROM {VALUES} WHERE thread_id = :t AND channel = 'messages' "
            "ORDER BY version"), {"t": thread})).all()
    return [(r[0], r[1]) for r in rows]


async def grow(saver, config, start: int, stop: int, values=history):
    """Puts checkpoints ``start..stop-1``, checkpoint ``i`` holding ``values(i + 1)``; returns their configs."""
    out = []
    prev = await saver.aget_tuple(config) if "checkpoint_id" in config["configurable"] else None
    versions = dict(prev.checkpoint["channel_versions"]) if prev else {}
    for i in range(start, stop):
        new = {"messages": saver.get_next_version(versions.get("messages"), None)}
        if i % 3 == 0:
            new["n"] = saver.get_next_version(versions.get("n"), None)
        versions.update(new)
        cp = generate_checkpoint(channel_values={"messages": values(i + 1), "n": i - i % 3},
                                 channel_versions=dict(versions))
        config = await saver.aput(config, cp, generate_metadata(step=i), new)
        out.append(config)
    return out


async def test_a_growing_list_is_stored_as_deltas_and_reads_back_at_every_checkpoint(engine_db) -> None:
    async with OceanBaseSaver(database=engine_db, delta_every=4) as saver:
        configs = await grow(saver, generate_config("t-delta"), 0, 10)
        types = [t for _, t in await rows_of(engine_db, "t-delta")]
        assert sorted(t.removeprefix("zstd+") for t in types) == ["append+msgpack"] * 7 + ["msgpack"] * 3
        for i, config in enumerate(configs):  # time travel to each
            got = await saver.aget_tuple(config)
            assert got.checkpoint["channel_values"] == {"messages": history(i + 1), "n": i - i % 3}
            assert delta.CHAIN_KEY not in got.checkpoint
        # the latest version is decoded from the bytes the saver wrote: fresh objects each read
        got = await saver.aget_tuple(configs[-1])
        got.checkpoint["channel_values"]["messages"].append(message(50))
        got.checkpoint["channel_values"]["messages"][0].content = "changed by the caller"
        assert (await saver.aget_tuple(configs[-1])).checkpoint["channel_values"]["messages"] == history(10)
        listed = [t async for t in saver.alist(generate_config("t-delta"))]
        assert [t.checkpoint["channel_values"]["messages"] for t in listed] == [history(n) for n in range(10, 0, -1)]
    # another saver (a restarted process) reads them, then appends on what it read
    async with OceanBaseSaver(database=engine_db, delta_every=4) as other:
        assert (await other.aget_tuple(configs[-1])).checkpoint["channel_values"]["messages"] == history(10)
        more = await grow(other, configs[-1], 10, 12)
        assert (await rows_of(engine_db, "t-delta"))[-1][1] == "append+msgpack"
        assert (await other.aget_tuple(more[-1])).checkpoint["channel_values"]["messages"] == history(12)


async def test_forks_edits_and_a_saver_without_the_chain_read_right(engine_db) -> None:
    async with OceanBaseSaver(database=engine_db) as saver:
        configs = await grow(saver, generate_config("t-fork"), 0, 6)
        # time travel to checkpoint 2, then a different branch: its list is whole, later ones deltas on it
        def branch(n: int) -> list:
            return history(2) + [message(100 + i) for i in range(n - 2)]
        forked = await grow(saver, configs[2], 3, 6, values=branch)
        for i, config in enumerate(configs):
            assert (await saver.aget_tuple(config)).checkpoint["channel_values"]["messages"] == history(i + 1)
        for i, config in zip(range(3, 6), forked):
            assert (await saver.aget_tuple(config)).checkpoint["channel_values"]["messages"] == branch(i + 1)
    # a saver that never read the thread writes a checkpoint changing only "n": it cannot name the
    # list's chain, so the read fetches the missing bases (one more round trip), and gets it right
    async with OceanBaseSaver(database=engine_db) as blind:
        last = configs[-1]
        versions = {"messages": (await OceanBaseSaver(database=engine_db).aget_tuple(last)).checkpoint[
            "channel_versions"]["messages"], "n": "99"}
        cp = generate_checkpoint(channel_values={"messages": history(6), "n": 99}, channel_versions=versions)
        cfg = await blind.aput(last, cp, generate_metadata(step=6), {"n": "99"})
    async with OceanBaseSaver(database=engine_db) as reader:
        assert (await reader.aget_tuple(cfg)).checkpoint["channel_values"] == {"messages": history(6), "n": 99}


async def test_copy_prune_and_deleted_runs_keep_every_base_a_kept_checkpoint_needs(engine_db) -> None:
    async with OceanBaseSaver(database=engine_db) as saver:
        configs = await grow(saver, generate_config("t-src"), 0, 7)
        await saver.acopy_thread("t-src", "t-dst")
        await saver.adelete_thread("t-src")
        dst = generate_config("t-dst")
        assert (await saver.aget_tuple(dst)).checkpoint["channel_values"]["messages"] == history(7)
        await saver.aprune(["t-dst"], strategy="keep_latest")
        assert len(await rows_of(engine_db, "t-dst")) == 7  # the latest's delta and the six it rests on
        async with OceanBaseSaver(database=engine_db) as fresh:
            assert (await fresh.aget_tuple(dst)).checkpoint["channel_values"]["messages"] == history(7)
        more = await grow(saver, {"configurable": {**dst["configurable"],
                                                   "checkpoint_id": configs[-1]["configurable"]["checkpoint_id"]}}, 7, 9)
        assert (await saver.aget_tuple(more[-1])).checkpoint["channel_values"]["messages"] == history(9)


async def test_rows_of_the_whole_layout_are_read_and_built_on(engine_db) -> None:
    async with OceanBaseSaver(database=engine_db, delta_every=1) as whole:  # every version whole, as before
        configs = await grow(whole, generate_config("t-old"), 0, 4)
    assert {t.removeprefix("zstd+") for _, t in await rows_of(engine_db, "t-old")} == {"msgpack"}
    async with OceanBaseSaver(database=engine_db) as saver:
        assert (await saver.aget_tuple(configs[-1])).checkpoint["channel_values"]["messages"] == history(4)
        more = await grow(saver, configs[-1], 4, 6)
        assert (await saver.aget_tuple(more[-1])).checkpoint["channel_values"]["messages"] == history(6)
    assert sum(t == "append+msgpack" for _, t in await rows_of(engine_db, "t-old")) == 2


async def test_a_missing_base_is_a_typed_error_not_a_shorter_list(engine_db) -> None:
    async with OceanBaseSaver(database=engine_db) as saver:
        configs = await grow(saver, generate_config("t-gone"), 0, 3)
    first = (await rows_of(engine_db, "t-gone"))[0][0]
    async with engine_db.engine.begin() as conn:
        await conn.execute(text("DELETE FROM lg_checkpoint_blobs WHERE thread_id = 't-gone' AND version = :v"),
                           {"v": first})
        await conn.execute(text("UPDATE lg_checkpoints SET delta_payload = NULL WHERE thread_id = 't-gone' "
                                "AND delta_version = :v"), {"v": first})
    async with OceanBaseSaver(database=engine_db) as saver:
        with pytest.raises(CheckpointCorruptError):
            await saver.aget_tuple(configs[-1])
