"""Reading an ``update_state`` fork with a saver that has not seen the thread: an older tree's saver against this one's.

Made for helper lgread's change (session 20): a fork used to name no delta chain
for the lists it kept (nor the rows of their bases), so a read of it walked up
the parents once per missing base; it now names them as a graph step's put does.

For each tree, on one seekdb server (each on its own fresh database): a graph of
one node appending a message per step runs ``--turns`` turns on a thread, then
two forks are made with ``aupdate_state`` (a scalar and a list edited two
checkpoints back; a message appended four back).  Then a second saver on the
same database reads each fork, forgetting the thread before every read (what a
restarted process sees), the trees interleaved with the order rotating.
Printed: p50 per tree and fork, and the median over reads of new / old.

Usage::

    git archive <commit> adk_oceanbase alembic sql | tar -x -C /tmp/old && mv /tmp/old/adk_oceanbase /tmp/old/adk_oceanbase_old
    python benchmarks/lg_fork_ab.py --old /tmp/old --reads 300          # starts its own seekdb
"""

from __future__ import annotations

import argparse
import importlib
import operator
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

_HERE = Path(__file__).resolve().parent
# benchmarks/langgraph.py would shadow the library (a namespace package): import it with this folder off the
# path (by name: the library, not that entry script), then put the folder back for _common.
sys.path[:] = [p for p in sys.path if p and Path(p).resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))  # this checkout's adk_oceanbase
_GRAPH = importlib.import_module("langgraph.graph")
_MESSAGES = importlib.import_module("langchain_core.messages")

sys.path.append(str(_HERE))
from _common import ab_parser, ensure_database, paired_median, run_ab  # noqa: E402


class State(TypedDict):
    messages: Annotated[list[Any], operator.add]
    steps: Annotated[list[str], operator.add]
    note: str


def agent(state: State) -> dict:
    n = len(state["messages"])
    return {"messages": [_MESSAGES.AIMessage(content=f"reply {n} " + "word " * 20, id=f"a{n}")],
            "steps": [f"s{n}"], "note": f"n{n}"}


def compiled(saver: Any) -> Any:
    g = _GRAPH.StateGraph(State)
    g.add_node("agent", agent)
    g.add_edge(_GRAPH.START, "agent")
    g.add_edge("agent", _GRAPH.END)
    return g.compile(checkpointer=saver)


async def prepare(cls: Any, host: str, port: int, db: str, turns: int) -> tuple[Any, Any, list[Any], Any]:
    """The writer saver, a reader saver on the same database, the two forks' configs, and how to forget the thread."""
    ensure_database(host, port, "root", None, db, fresh=True)
    saver = cls(f"oceanbase://root@{host}:{port}/{db}")
    await saver.setup()
    graph, cfg = compiled(saver), {"configurable": {"thread_id": "fork"}}
    for i in range(turns):
        await graph.ainvoke({"messages": [_MESSAGES.HumanMessage(content=f"question {i}", id=f"h{i}")]}, cfg)
    history = [s async for s in graph.aget_state_history(cfg)]
    forks = [
        await graph.aupdate_state(history[2].config, {"note": "edited", "steps": ["x"]}),
        await graph.aupdate_state(history[4].config, {"messages": [_MESSAGES.HumanMessage(content="edit", id="e")]}),
    ]
    reader = cls(database=saver.database)
    # what a fresh process knows of the thread: nothing (the old saver's and the new one's own memories)
    memo = getattr(reader, "_recall", None)
    forget = memo.forget if memo is not None else reader._forget
    return saver, reader, forks, lambda: forget(["fork"])


async def run(args: argparse.Namespace, host: str, port: int) -> dict[str, Any]:
    from adk_oceanbase.langgraph import OceanBaseSaver

    classes: dict[str, Any] = {}
    if args.old:
        sys.path.insert(0, args.old)
        classes["old"] = importlib.import_module("adk_oceanbase_old.langgraph").OceanBaseSaver
    classes["new"] = OceanBaseSaver
    ready = {n: await prepare(cls, host, port, f"lgfork_{n}", args.turns) for n, cls in classes.items()}
    names = list(ready)
    lat: dict[str, list[list[float]]] = {n: [[], []] for n in names}
    for i in range(args.warmup + args.reads):
        k = i % len(names)
        for n in names[k:] + names[:k]:
            _saver, reader, forks, forget = ready[n]
            for j, fork in enumerate(forks):
                forget()
                t0 = time.perf_counter()
                await reader.aget_tuple(fork)
                if i >= args.warmup:
                    lat[n][j].append(time.perf_counter() - t0)
    load = os.getloadavg()[0]
    for saver, reader, _forks, _forget in ready.values():
        await reader.aclose()
        await saver.aclose()
    out: dict[str, Any] = {"load_1min_end": load, "reads": args.reads, "turns": args.turns}
    for j, what in enumerate(("fork keeping the list", "fork appending to it")):
        p50 = {n: statistics.median(lat[n][j]) * 1000 for n in names}
        out[f"fork{j}"] = p50
        line = ", ".join(f"{n} {v:.3f} ms" for n, v in p50.items())
        if "old" in p50:
            paired = paired_median(lat["old"][j], lat["new"][j])
            out[f"fork{j}_new_over_old_paired"] = paired
            line += f" | new / old per read, median {paired:.3f}"
        print(f"{what:22s} get_tuple p50: {line}")
    print(f"load average (1 min) at the end {load:.2f}")
    return out


def main() -> None:
    ap = ab_parser(__doc__.split("\n")[0])
    ap.add_argument("--turns", type=int, default=6)
    ap.add_argument("--reads", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=10)
    run_ab(ap.parse_args(), run)


if __name__ == "__main__":
    main()
