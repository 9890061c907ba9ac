"""Times ``OceanBaseStore.asearch`` on a store database that ``langgraph.py --only store`` left, and prints JSON.

For before/after comparisons of the search path without reloading: run it
alternately with ``PYTHONPATH`` on two source trees (e.g. a ``git archive``
of the old commit and this one), same database, same queries, and compare
the summaries (``--summary A.json ... vs B.json ...`` over the JSON files each run wrote)::

    git archive OLD adk_oceanbase alembic | tar -x -C /tmp/old
    for r in 1 2 3; do
      PYTHONPATH=/tmp/old python benchmarks/lg_store_search.py --port P --db lgs_tune27 --seed 27 > old-$r.json
      PYTHONPATH=$PWD     python benchmarks/lg_store_search.py --port P --db lgs_tune27 --seed 27 > new-$r.json
    done
    python benchmarks/lg_store_search.py --summary old-*.json vs new-*.json

The queries are drawn as ``langgraph.py`` draws them (``--seed``); each run
searches 10 untimed queries first (plan cache, pages), then ``--queries`` timed.
Reported per search: wall time and this process's CPU time (``time.process_time``,
the embedder's thread included).  ``adk_oceanbase`` is imported from ``PYTHONPATH`` (the
tree under test), never from this checkout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from pathlib import Path

# this folder's langgraph.py would shadow the langgraph package (a namespace package)
sys.path[:] = [p for p in sys.path if p and Path(p).resolve() != Path(__file__).resolve().parent]


async def run(port: int, db: str, seed: int, queries: int) -> dict:
    from adk_oceanbase.langgraph import OceanBaseStore
    from adk_oceanbase.memory import HashEmbedder

    hasher = HashEmbedder()
    store = OceanBaseStore(f"oceanbase://root@127.0.0.1:{port}/{db}",
                           index={"dims": 384, "embed": lambda t: hasher.embed(t).tolist(), "fields": ["text"]})
    words = [f"w{i}" for i in range(3000)]
    rng = random.Random(seed * 1000 + 1)
    texts = [" ".join(rng.choices(words, k=4)) for _ in range(queries + 10)]
    for q in texts[:10]:
        await store.asearch(("docs",), query=q, limit=10)
    lat, cpu, keys = [], [], []
    for q in texts[10:]:
        c0, t0 = time.process_time(), time.perf_counter()
        hits = await store.asearch(("docs",), query=q, limit=10)
        lat.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        keys.append([h.key for h in hits])
    await store.aclose()
    return {"db": db, "seed": seed, "lat": lat, "cpu": cpu, "keys": keys, "load": os.getloadavg()}


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def summary(groups: list[list[str]]) -> None:
    """p50 / p95 of wall and CPU time per group of JSON files, and how many result lists the groups share."""
    runs = []
    for files in groups:
        got = [json.load(open(f)) for f in files]
        lat = [x for g in got for x in g["lat"]]
        cpu = [x for g in got for x in g["cpu"]]
        runs.append([g["keys"] for g in got])
        print(f"{len(lat)} searches: p50 {_pct(lat, 50) * 1e3:.1f} ms, p95 {_pct(lat, 95) * 1e3:.1f} ms, "
              f"CPU p50 {_pct(cpu, 50) * 1e3:.2f} ms; load {[round(g['load'][0], 1) for g in got]}")
    if len(runs) == 2:
        pairs = [(a, b) for ra, rb in zip(*runs) for a, b in zip(ra, rb)]
        print(f"identical top-10 keys: {sum(a == b for a, b in pairs)}/{len(pairs)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=2881)
    ap.add_argument("--db", default="lgb_store")
    ap.add_argument("--seed", type=int, default=26, help="the --store-seed the database was loaded with")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--summary", nargs=argparse.REMAINDER, help="JSON files; 'vs' separates two groups")
    args = ap.parse_args()
    if args.summary is not None:
        files, groups = args.summary, [[]]
        for f in files:
            if f == "vs":
                groups.append([])
            else:
                groups[-1].append(f)
        summary([g for g in groups if g])
        return
    json.dump(asyncio.run(run(args.port, args.db, args.seed, args.queries)), sys.stdout)


if __name__ == "__main__":
    main()
