"""Cost of the per-user memory write guard (issue 33): memory write p50 on this tree vs a baseline tree.

The guard adds, per memory write, one primary-key read when the call starts
(generation and opt-out) and one ``SELECT ... FOR UPDATE`` of the user's
``memory_user_gen`` row inside the write's transaction.  Both trees cannot be
imported in one process, so each round runs one worker process per tree
(``--worker``), alternating which goes first, against one seekdb server
(a database per tree: their schema revisions differ).  Timed per tree:

* ``add_memory`` of one new memory (one row, its postings, the guard);
* ``add_session_to_memory`` of a fresh 4-turn session (the event log read, four rows).

The vectorizer uses ``HashEmbedder`` (no model), as in both trees.  On a
shared machine the whole-write p50s move by more than the guard costs, so the
script also times the guard's statements alone, in one process, sample by
sample against what the write did before (``time_async_paired``): ``before``
is a write transaction (one small INSERT, standing in for the memory rows)
that reads the opt-out row first; ``guard`` is the start read plus the same
write transaction locking the guard row and reading the opt-out first.  (Alone,
without the INSERT, a locking read turns a read-only transaction into one
whose COMMIT is logged on seekdb, which no real memory write pays extra for.)

Usage::

    git archive <baseline commit> | tar -x -C /tmp/adk-base   # the tree before the guard
    python benchmarks/governance_guard.py --baseline /tmp/adk-base [--writes 300] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

APP = "guard_bench"


async def work(url: str, writes: int, tag: str) -> dict:
    """One worker: times ``writes`` add_memory and ``writes // 4`` add_session_to_memory calls; returns the samples."""
    from google.adk.events.event import Event
    from google.adk.memory.memory_entry import MemoryEntry
    from google.genai import types

    from adk_oceanbase import OceanBaseSessionService
    from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService

    sessions = OceanBaseSessionService(url)
    await sessions.setup()
    memory = OceanBaseMemoryService(database=sessions.database, embedder=HashEmbedder(),
                                    settings=MemorySettings(bump_access=False))
    user = f"u-{tag}"
    add_s, ingest_s = [], []
    try:
        for i in range(writes + 20):
            entry = MemoryEntry(author="user", content=types.Content(parts=[types.Part(text=f"fact {tag} {i}: likes tea no. {i}")]))
            t0 = time.perf_counter()
            await memory.add_memory(app_name=APP, user_id=user, memories=[entry])
            if i >= 20:
                add_s.append(time.perf_counter() - t0)
        for i in range(writes // 4 + 5):
            s = await sessions.create_session(app_name=APP, user_id=user)
            for j in range(4):
                said = f"turn {j} of session {i} in {tag}: I would like a window seat to Lisbon"
                await sessions.append_event(s, Event(author="user" if j % 2 == 0 else "agent", invocation_id=f"i{j}",
                                                     content=types.Content(role="user", parts=[types.Part(text=said)])))
            t0 = time.perf_counter()
            await memory.add_session_to_memory(s)
            if i >= 5:
                ingest_s.append(time.perf_counter() - t0)
        await memory.flush()
    finally:
        await memory.close()
        await sessions.close()
    return {"add_memory": add_s, "add_session_to_memory": ingest_s}


async def guard_alone(url: str, reps: int) -> dict:
    """The guard's statements vs the opt-out check they replace, interleaved sample by sample (this tree)."""
    from _common import summarize, time_async_paired

    from adk_oceanbase import OceanBaseSessionService
    from adk_oceanbase.audit import AuditEntry
    from adk_oceanbase.governance import guard
    from adk_oceanbase.governance import queries as gq
    from datetime import datetime

    svc = OceanBaseSessionService(url)
    await svc.setup()
    engine = svc.database.engine

    async def before() -> None:
        async with engine.begin() as conn:
            await conn.execute(gq.opt_out_of(APP, "alone"))
            await conn.execute(AuditEntry("memory_add", APP, "alone").insert())

    async def guarded() -> None:
        async with engine.connect() as conn:
            await guard.started(conn, APP, "alone")
        async with engine.begin() as conn:
            await guard.lock(conn, APP, "alone", datetime.utcnow())
            await conn.execute(AuditEntry("memory_add", APP, "alone").insert())

    await guarded()  # the guard row exists from here on, as for any user who wrote before
    try:
        samples = await time_async_paired({"before": before, "guard": guarded}, min_reps=reps, max_reps=reps,
                                          budget_s=0, warmup=20)
    finally:
        await svc.close()
    return {k: summarize(xs) for k, xs in samples.items()}


def _worker(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING)
    print(json.dumps(asyncio.run(work(args.url, args.writes, args.tag))))
    return 0


def _run_worker(tree: Path, url: str, writes: int, tag: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, str(HERE / "governance_guard.py"), "--worker", "--url", url, "--writes", str(writes), "--tag", tag],
        env=env, check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--baseline", type=Path, help="a checkout of the tree to compare with (required unless --worker)")
    p.add_argument("--writes", type=int, default=300, help="timed add_memory calls per worker (a quarter as many sessions)")
    p.add_argument("--rounds", type=int, default=3, help="worker pairs, alternating which tree goes first")
    p.add_argument("--out", help="JSON results path (default: benchmarks/results/governance-guard-<date>.json)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--url", help=argparse.SUPPRESS)
    p.add_argument("--tag", default="w", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return _worker(args)
    if args.baseline is None:
        p.error("--baseline is required")
    from _common import ensure_database, environment, print_environment, seekdb_or_url, summarize, write_json

    trees = {"baseline": args.baseline.resolve(), "guard": HERE.parent}
    samples: dict[str, dict[str, list[float]]] = {t: {"add_memory": [], "add_session_to_memory": []} for t in trees}
    with seekdb_or_url(None) as server:
        env = environment(["sqlalchemy", "aiomysql", "pylibseekdb"], {"baseline_tree": str(trees["baseline"])})
        print_environment(env)
        urls = {}
        for t in trees:
            ensure_database("127.0.0.1", server.port, "root", None, f"adkbench_{t}", fresh=True)
            urls[t] = f"oceanbase://root@127.0.0.1:{server.port}/adkbench_{t}"
        for r in range(args.rounds):
            for t in (trees if r % 2 == 0 else reversed(list(trees))):
                got = _run_worker(trees[t], urls[t], args.writes, f"r{r}")
                for k, xs in got.items():
                    samples[t][k].extend(xs)
        alone = asyncio.run(guard_alone(urls["guard"], 1000))
    results = {t: {k: summarize(xs) for k, xs in ops.items()} for t, ops in samples.items()}
    print(f"\n== memory writes, {args.rounds} rounds, seekdb")
    print(f"  {'operation':<24}{'baseline p50':>14}{'guard p50':>11}{'ratio':>8}{'baseline p95':>14}{'guard p95':>11}")
    for k in ("add_memory", "add_session_to_memory"):
        b, g = results["baseline"][k], results["guard"][k]
        print(f"  {k:<24}{b['p50_ms']:>14.3f}{g['p50_ms']:>11.3f}{g['p50_ms'] / b['p50_ms']:>8.3f}"
              f"{b['p95_ms']:>14.3f}{g['p95_ms']:>11.3f}")
    b, g = alone["before"], alone["guard"]
    print(f"  guard statements alone: before {b['p50_ms']:.3f} ms, guard {g['p50_ms']:.3f} ms p50 "
          f"(+{g['p50_ms'] - b['p50_ms']:.3f} ms per write; p95 {b['p95_ms']:.3f} / {g['p95_ms']:.3f})")
    results["statements_alone"] = alone
    out = args.out or str(HERE / "results" / f"governance-guard-{env['date_utc'][:10]}.json")
    write_json(out, {"benchmark": "governance_guard", "environment": env, "args": {k: str(v) for k, v in vars(args).items()},
                     "results": results})
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
