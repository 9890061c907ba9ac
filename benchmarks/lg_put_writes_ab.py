"""Saver ``aput_writes`` of 1, 3 and 10 writes, an older tree's saver against this one's, in ONE process.

A graph step hands the saver one ``put_writes`` per task, with as many writes as
the task returned (a tool node's messages and state keys: often several).  Made
for helper lgread's change (session 20): a call's writes as one multi-row
statement, sent alone in autocommit mode on the saver's kept connection, where
they were one statement per write plus ``COMMIT`` in one packet.

Both savers on the same seekdb server, each on its own fresh database and its
own engine (as ``langgraph.py`` opens ours), writing to one checkpoint of a
thread each; every step calls each saver once per size, the order of the
savers rotating, a new task id per call (what a graph sends: fresh rows).
Printed: p50 per saver and size, the peer's when asked, and the median over
steps of new / old (the two ran back to back: robust to the load drifting).

Usage::

    git archive <commit> adk_oceanbase alembic sql | tar -x -C /tmp/old && mv /tmp/old/adk_oceanbase /tmp/old/adk_oceanbase_old
    python benchmarks/lg_put_writes_ab.py --old /tmp/old --steps 300            # starts its own seekdb
    python benchmarks/lg_put_writes_ab.py --url oceanbase://root@127.0.0.1:PORT/ --old /tmp/old --peer
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
# benchmarks/langgraph.py would shadow the library (a namespace package): import it with this folder off the
# path (by name: the library, not that entry script), then put the folder back for _common.
sys.path[:] = [p for p in sys.path if p and Path(p).resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))  # this checkout's adk_oceanbase
_TEST_UTILS = importlib.import_module("langgraph.checkpoint.conformance.test_utils")

sys.path.append(str(_HERE))
from _common import ab_parser, ensure_database, paired_median, run_ab  # noqa: E402

SIZES = (1, 3, 10)


def writes_of(size: int, step: int) -> list[tuple[str, Any]]:
    """``size`` writes as a tool-calling task sends them: a message-sized dict, then small state keys."""
    first = ("messages", [{"type": "ai", "content": f"step {step}: " + "a reply of some twenty words " * 4}])
    return [first, *((f"key{i}", {"n": step, "note": f"value {i} of step {step}"}) for i in range(size - 1))]


async def open_saver(cls: Any, host: str, port: int, db: str) -> Any:
    ensure_database(host, port, "root", None, db, fresh=True)
    saver = cls(f"oceanbase://root@{host}:{port}/{db}")
    await saver.setup()
    return saver


async def run(args: argparse.Namespace, host: str, port: int) -> dict[str, Any]:
    from adk_oceanbase.langgraph import OceanBaseSaver

    generate_checkpoint, generate_config = _TEST_UTILS.generate_checkpoint, _TEST_UTILS.generate_config
    generate_metadata = _TEST_UTILS.generate_metadata

    savers: dict[str, Any] = {}
    closers = []
    if args.old:
        sys.path.insert(0, args.old)
        old_cls = importlib.import_module("adk_oceanbase_old.langgraph").OceanBaseSaver
        savers["old"] = await open_saver(old_cls, host, port, "lgw_old")
        closers.append(savers["old"].aclose)
    savers["new"] = await open_saver(OceanBaseSaver, host, port, "lgw_new")
    closers.append(savers["new"].aclose)
    if args.peer:
        ensure_database(host, port, "root", None, "lgw_peer", fresh=True)
        cm = importlib.import_module("langgraph.checkpoint.oceanbase.aio").AIOMySQLSaver.from_conn_string(
            f"mysql://root@{host}:{port}/lgw_peer")
        savers["peer"] = await cm.__aenter__()
        await savers["peer"].setup()
        closers.append(lambda: cm.__aexit__(None, None, None))
    names = list(savers)
    stored = {n: await s.aput(generate_config("w"), generate_checkpoint(), generate_metadata(), {}) for n, s in savers.items()}
    lat: dict[str, dict[int, list[float]]] = {n: {k: [] for k in SIZES} for n in names}
    for i in range(args.warmup):
        for n in names:
            await savers[n].aput_writes(stored[n], writes_of(3, i), f"warm-{i}")
    load = [os.getloadavg()[0]]
    for i in range(args.steps):
        k = i % len(names)
        for size in SIZES:
            writes = writes_of(size, i)
            for n in names[k:] + names[:k]:
                t0 = time.perf_counter()
                await savers[n].aput_writes(stored[n], writes, f"task-{i}-{size}")
                lat[n][size].append(time.perf_counter() - t0)
    load.append(os.getloadavg()[0])
    for close in closers:
        await close()
    out: dict[str, Any] = {"load_1min": load, "steps": args.steps}
    for size in SIZES:
        p50 = {n: statistics.median(lat[n][size]) * 1000 for n in names}
        out[f"writes_{size}"] = p50
        line = ", ".join(f"{n} {v:.3f} ms" for n, v in p50.items())
        if "old" in p50:
            paired = paired_median(lat["old"][size], lat["new"][size])
            out[f"writes_{size}_new_over_old_paired"] = paired
            line += f" | new / old per step, median {paired:.3f}"
        if "peer" in p50:
            line += " | peer / new " + f"{p50['peer'] / p50['new']:.2f}x"
        print(f"{size:2d} writes p50: {line}")
    print(f"load average (1 min) {load[0]:.2f} -> {load[1]:.2f}")
    return out


def main() -> None:
    ap = ab_parser(__doc__.split("\n")[0])
    ap.add_argument("--peer", action="store_true", help="also langgraph-checkpoint-oceanbase's AIOMySQLSaver")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20)
    run_ab(ap.parse_args(), run)


if __name__ == "__main__":
    main()
