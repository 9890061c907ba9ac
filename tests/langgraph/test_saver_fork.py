"""Checkpoints made by ``update_state`` on an older checkpoint (a fork) name the rows and delta chains of the values
they read, as a graph step's put does, so a read of the fork needs none of its parents; on seekdb and MariaDB.

``update_state`` reads its fork point, then the thread's newest checkpoint, then puts on the fork point: the saver
builds that put on the fork point as it read it (``reader.Recall`` keeps recent checkpoints by id), not on the newest.
"""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

import pytest

pytest.importorskip("langgraph.graph")

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from sqlalchemy import text  # noqa: E402

from adk_oceanbase.langgraph import OceanBaseSaver  # noqa: E402
from adk_oceanbase.langgraph import codec, reader  # noqa: E402
from adk_oceanbase.rawtx import RawTransaction  # noqa: E402


class State(TypedDict):
    messages: Annotated[list[AnyMessage], operator.add]
    steps: Annotated[list[str], operator.add]
    note: str


def agent(state: State) -> dict:
    n = len(state["messages"])
    return {"messages": [AIMessage(content=f"reply {n} " + "word " * n, id=f"a{n}")], "steps": [f"s{n}"], "note": f"n{n}"}


def app(saver: OceanBaseSaver):
    g = StateGraph(State)
    g.add_node("agent", agent)
    g.add_edge(START, "agent")
    g.add_edge("agent", END)
    return g.compile(checkpointer=saver)


async def stored(saver: OceanBaseSaver, db, thread: str) -> dict[str, dict]:
    """Each checkpoint of ``thread`` as stored: its versions, the chains and rows it names, the value its row holds."""
    async with db.engine.connect() as conn:
        rows = (await conn.execute(text(
            "SELECT checkpoint_id, value_type, checkpoint, delta_channel, delta_version FROM lg_checkpoints "
            "WHERE thread_id = :t"), {"t": thread})).all()
    out = {}
    for cid, vtype, payload, channel, version in rows:
        cp = saver.serde.loads_typed(codec.unpack(vtype, payload))
        versions = {ch: str(v) for ch, v in cp["channel_versions"].items()}
        out[cid] = {"versions": versions, "chains": reader.chains_of(cp, versions), "rows": reader.rows_of(cp),
                    "inline": set(cp.get("channel_values") or {}), "holds": (channel, version)}
    return out


@pytest.fixture
def round_trips(monkeypatch) -> list[int]:
    """Statements per read round trip the savers send (``RawTransaction.batch``, wrapped: they still run)."""
    calls: list[int] = []
    batch = RawTransaction.batch

    async def spy(self, statements, **kw):
        calls.append(len(statements))
        return await batch(self, statements, **kw)

    monkeypatch.setattr(RawTransaction, "batch", spy)
    return calls


async def test_a_fork_names_its_parents_chains_and_rows_and_reads_in_two_round_trips(engine_db, round_trips) -> None:
    thread = "t-fork"
    cfg = {"configurable": {"thread_id": thread}}
    async with OceanBaseSaver(database=engine_db) as saver:
        graph = app(saver)
        for i in range(4):
            await graph.ainvoke({"messages": [HumanMessage(content=f"question {i}", id=f"h{i}")]}, cfg)
        history = [s async for s in graph.aget_state_history(cfg)]
        points = [history[4].config, history[2].config]
        forks = [
            await graph.aupdate_state(points[0], {"note": "edited", "steps": ["x"]}),  # the message list unchanged
            await graph.aupdate_state(points[1], {"messages": [HumanMessage(content="edit", id="e1")]}),
        ]
        expected = [(await saver.aget_tuple(f)).checkpoint["channel_values"] for f in forks]
        del round_trips[:]
        again = await saver.aget_tuple(points[0])  # a fork point it read: its values come with it
        assert len(round_trips) == 1
        assert {k: again.checkpoint["channel_values"].get(k) for k in history[4].values} == history[4].values
        rows = await stored(saver, engine_db, thread)
    held_in = {r["holds"]: cid for cid, r in rows.items() if r["holds"][0] is not None}
    for point, fork in zip(points, forks):
        mine, parent = rows[fork["configurable"]["checkpoint_id"]], rows[point["configurable"]["checkpoint_id"]]
        unchanged = {ch for ch, v in mine["versions"].items() if parent["versions"].get(ch) == v}
        # a channel the fork left alone keeps the chain its blob is built on, as the fork point named it
        assert {ch: c for ch, c in mine["chains"].items() if ch in unchanged} == {
            ch: c for ch, c in parent["chains"].items() if ch in unchanged}
        # every value it reads that a checkpoint row holds, the fork names that row
        reads = [(ch, v) for ch, version in mine["versions"].items() if ch not in mine["inline"]
                 for v in (version, *mine["chains"].get(ch, ()))]
        assert {k: held_in[k] for k in reads if k in held_in} == {k: h for k, h in mine["rows"].items() if k in held_in}
        assert any(k in held_in for k in reads)  # the test sees values in rows (not only in the blob table)
    assert rows[forks[0]["configurable"]["checkpoint_id"]]["chains"]["messages"]  # the list it kept is a delta

    async with OceanBaseSaver(database=engine_db) as fresh:  # knows nothing of the thread
        for fork, values in zip(forks, expected):
            del round_trips[:]
            got = await fresh.aget_tuple(fork)
            assert got.checkpoint["channel_values"] == values
            assert len(round_trips) == 2  # the checkpoint with its writes, then its values: no walk up the parents


@pytest.mark.parametrize("riders", [True, False], ids=["rows", "blobs"])
async def test_a_checkpoint_that_does_not_name_its_chain_finds_each_base_without_walking_to_the_root(
        engine_db, round_trips, monkeypatch, riders) -> None:
    """A put by a saver that had not read the thread (or a fork written before this change) names no chain for the
    list it kept: each base is then fetched where it is (the blob table first), not after a walk up every parent."""
    from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_config, generate_metadata

    thread = f"t-unnamed-{riders}"
    if not riders:  # values in the blob table, as before revision 0023 or for the second changed value of a put
        monkeypatch.setattr(OceanBaseSaver, "_rider", staticmethod(lambda blobs, riders: None))
    async with OceanBaseSaver(database=engine_db) as saver:
        cfg = generate_config(thread)
        versions: dict[str, str] = {}
        for i in range(20):  # 20 checkpoints; the message list's chain: a snapshot every 8 versions, deltas between
            new = {"messages": saver.get_next_version(versions.get("messages"), None)}
            versions.update(new)
            msgs = [HumanMessage(content=f"message {n}", id=f"m{n}") for n in range(i + 1)]
            cp = generate_checkpoint(channel_values={"messages": msgs}, channel_versions=dict(versions))
            cfg = await saver.aput(cfg, cp, generate_metadata(step=i), new)
    async with OceanBaseSaver(database=engine_db) as stranger:  # has not read the thread: cannot name the chain
        cp = generate_checkpoint(channel_values={"messages": msgs, "note": "x"}, channel_versions={**versions, "note": "1"})
        child = await stranger.aput(cfg, cp, generate_metadata(step=20), {"note": "1"})
    async with OceanBaseSaver(database=engine_db) as fresh:
        del round_trips[:]
        got = await fresh.aget_tuple(child)
        assert got.checkpoint["channel_values"]["messages"] == msgs
        # the checkpoint with its writes, its values, then at most one per base of the chain (8 versions at most):
        # walking up every parent for each base kept in the blob table took 65
        assert len(round_trips) <= 2 + 8
