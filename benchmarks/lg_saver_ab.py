"""Saver put / get_tuple, old tree against new against the OceanBase peer, in ONE process (issue 26).

The ratios of ``langgraph.py --only savers`` move with the machine's load by
more than a change to the saver does (2 vCPU shared with other runs), so a
before/after is measured here: the saver of an older commit (a renamed copy of
the package, made with ``git archive``), this tree's and
``langgraph-checkpoint-oceanbase`` against the same seekdb server, each on its
own fresh database, the same ``put`` then ``get_tuple`` of the hot thread as
``langgraph.py`` (its ``step_checkpoint`` and ``--text`` workloads), the three
interleaved step by step with the order rotating.  p50s and the ratio to the
peer's p50 of the same run.

Usage::

    git archive <commit> adk_oceanbase alembic sql | tar -x -C /tmp/old && mv /tmp/old/adk_oceanbase /tmp/old/adk_oceanbase_old
    python benchmarks/lg_saver_ab.py --url oceanbase://root@127.0.0.1:PORT/ --old /tmp/old --text messages --steps 200
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import os
import statistics
import sys
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent


def _bench() -> Any:
    """``benchmarks/langgraph.py`` as a module (its name shadows the library: loaded by path)."""
    spec = importlib.util.spec_from_file_location("lg_bench", _HERE / "langgraph.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


async def run(args: argparse.Namespace) -> dict[str, Any]:
    lb = _bench()
    lb.TEXT["mode"] = args.text
    from _common import ensure_database, paired_median, server_address

    host, port = server_address(None, args.url)
    savers: dict[str, Any] = {}
    closers = []
    if args.old:
        sys.path.insert(0, args.old)
        old_cls = importlib.import_module("adk_oceanbase_old.langgraph").OceanBaseSaver
        ensure_database(host, port, "root", None, "lgab_old", fresh=True)
        old = old_cls(f"oceanbase://root@{host}:{port}/lgab_old")
        await old.setup()
        savers["old"], _ = old, closers.append(old.aclose)
    savers["new"], close = await lb.open_ours(host, port, "lgab_new")
    closers.append(close)
    if not args.no_peer:
        savers["peer"], close = await lb.open_peer("langgraph.checkpoint.oceanbase.aio", host, port, "lgab_peer")
        closers.append(close)
    names = list(savers)
    lat: dict[str, dict[str, list[float]]] = {n: {"put": [], "get_tuple": []} for n in names}
    prev: dict[str, Any] = {n: None for n in names}
    configs = {n: {"configurable": {"thread_id": "hot", "checkpoint_ns": ""}} for n in names}
    load = [os.getloadavg()[0]]
    for i in range(args.steps):
        k = i % len(names)
        for name in names[k:] + names[:k]:
            configs[name], prev[name] = await lb.hot_step(savers[name], configs[name], prev[name], i, lat[name])
    load.append(os.getloadavg()[0])
    for close in closers:
        await close()
    out: dict[str, Any] = {"load_1min": load, "text": args.text, "steps": args.steps}
    for op in ("put", "get_tuple"):
        p50 = {n: statistics.median(lat[n][op]) * 1000 for n in names}
        out[op] = p50
        line = ", ".join(f"{n} {v:.3f} ms" for n, v in p50.items())
        if "peer" in p50:
            line += " | peer / " + ", ".join(f"{n} {p50['peer'] / p50[n]:.2f}x" for n in names if n != "peer")
        if "old" in p50:  # paired: each step's new / old (the two ran back to back), robust to load drifting
            paired = paired_median(lat["old"][op], lat["new"][op])
            out[op + "_new_over_old_paired"] = paired
            line += f" | new / old per step, median {paired:.3f}"
        print(f"{op:9s} p50: {line}")
    print(f"load average (1 min) {load[0]:.2f} -> {load[1]:.2f}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True, help="a seekdb/OceanBase server: oceanbase://root@host:port/")
    ap.add_argument("--old", help="folder holding adk_oceanbase_old (an older tree's package, renamed)")
    ap.add_argument("--text", choices=["filler", "words", "messages"], default="messages")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--json", help="write the p50s, paired ratios and load here")
    args = ap.parse_args()
    out = asyncio.run(run(args))
    if args.json:
        from _common import write_json

        write_json(args.json, {**out, "old": args.old})


if __name__ == "__main__":
    main()
