"""Governance costs: append_event with the debug archive off / on vs the baseline tree, and a retention sweep.

The issue asks for the debug archive to cost nothing when off.  "Nothing" is
measured against the code without it: ``--baseline`` (default: the merge base
of HEAD and ``main``) is exported with ``git archive`` into a temporary
directory, and each round runs three worker processes on the same seekdb
server, one per mode, in alternating order:

* ``baseline``: the baseline tree, no debug archive (it has none);
* ``off``: this tree, ``debug_archive=None`` (the default);
* ``on``: this tree, ``DebugArchiveSettings()``.

Two trees cannot be imported into one process, hence one process per mode
and round (a fresh session each, ``--warmup`` untimed appends first).  Every
event carries a ``temp:`` key and a session key, so ``on`` archives one entry
per append (its worst case) while the others drop it.  Each mode has its own
database (the baseline's schema is older).

Then, in this process: a retention sweep of ``--sweep-sessions`` expired
sessions of ``--sweep-events`` events each (batches of 100), with its time per
batch (the longest a batch holds its locks, on average).

    python benchmarks/governance_lifecycle.py                 # ~2 min on 2 cores
    python benchmarks/governance_lifecycle.py --rounds 3 --appends 200 --sweep-sessions 200
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # this checkout's adk_oceanbase, as in sessions.py
from _common import REPO_ROOT, ensure_database, environment, print_environment, seekdb_or_url, summarize, write_json  # noqa: E402

MODES = ("baseline", "off", "on")


# --------------------------------------------------------------------------- worker (one process per mode and round)
async def _worker(url: str, mode: str, appends: int, warmup: int, seed: int) -> list[float]:
    from google.adk.events.event import Event
    from google.adk.events.event_actions import EventActions
    from google.genai import types

    from adk_oceanbase import OceanBaseSessionService

    kwargs = {}
    if mode == "on":
        from adk_oceanbase.governance import DebugArchiveSettings

        kwargs["debug_archive"] = DebugArchiveSettings()
    lat: list[float] = []
    async with OceanBaseSessionService(url, **kwargs) as svc:
        s = await svc.create_session(app_name="bench", user_id=f"u{seed}")
        for i in range(warmup + appends):
            ev = Event(
                author="user" if i % 2 == 0 else "agent",
                invocation_id=f"inv{i // 2}",
                content=types.Content(role="user", parts=[types.Part(text=f"turn {i}: " + "lorem ipsum " * 8)]),
                actions=EventActions(state_delta={"temp:scratch": {"step": i, "args": ["a", "b"]}, "turn": i}),
            )
            t0 = time.perf_counter()
            await svc.append_event(s, ev)
            if i >= warmup:
                lat.append(time.perf_counter() - t0)
    return lat


def _run_worker(src: Path, url: str, mode: str, args: argparse.Namespace, seed: int) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", mode, "--url", url,
           "--appends", str(args.appends), "--warmup", str(args.warmup), "--seed", str(seed)]
    out = subprocess.run(cmd, env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _export_baseline(rev: str, into: Path) -> str:
    commit = subprocess.run(["git", "rev-parse", "--short=12", rev], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout.strip()
    archive = into / "baseline.tar"
    subprocess.run(["git", "archive", "-o", str(archive), commit], cwd=REPO_ROOT, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "src", filter="data")
    return commit


# --------------------------------------------------------------------------- retention sweep (this process, this tree)
async def _sweep_phase(url: str, sessions: int, events: int) -> dict:
    from google.adk.events.event import Event
    from google.genai import types

    from adk_oceanbase import OceanBaseSessionService
    from adk_oceanbase.governance import Retention, RetentionPolicy, sweep

    old = time.time() - 60 * 86400
    async with OceanBaseSessionService(url) as svc:
        for n in range(sessions):
            s = await svc.create_session(app_name="gc", user_id=f"u{n % 50}", state={"k": n})
            for i in range(events):
                text = types.Content(role="user", parts=[types.Part(text=f"old turn {i}")])
                await svc.append_event(s, Event(author="user", invocation_id="i", timestamp=old + i, content=text))
        t0 = time.perf_counter()
        # expiry counts from touched_at, the server's write time (issue 33): sweep as of 60 days on
        counts = await sweep(svc.database, RetentionPolicy(Retention(session_ttl="30d")), apps=["gc"], session_batch=100,
                             now=time.time() + 60 * 86400)
        took = time.perf_counter() - t0
    batches = -(-sessions // 100)
    return {"sessions": counts.sessions, "events": counts.events, "seconds": took,
            "sessions_per_s": counts.sessions / took, "mean_batch_ms": took / batches * 1000, "batches": batches}


# --------------------------------------------------------------------------- main
def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--url", help="an existing server (mysql+aiomysql://... or oceanbase://...); default: start seekdb")
    p.add_argument("--baseline", help="git revision without the debug archive (default: merge-base of HEAD and main)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--appends", type=int, default=300, help="timed appends per worker")
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--sweep-sessions", type=int, default=500)
    p.add_argument("--sweep-events", type=int, default=10)
    p.add_argument("--db-prefix", default="govbench", help="databases <prefix>_<mode> and <prefix>_gc are dropped and recreated")
    p.add_argument("--out", default=str(REPO_ROOT / "benchmarks" / "results" / "governance-lifecycle.json"))
    p.add_argument("--worker", choices=MODES, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        print(json.dumps(asyncio.run(_worker(args.url, args.worker, args.appends, args.warmup, args.seed))))
        return
    sys.path.insert(0, str(REPO_ROOT))  # this tree for the sweep phase (a worker imports from its PYTHONPATH)

    rev = args.baseline or subprocess.run(["git", "merge-base", "HEAD", "main"], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="govbench-") as tmp, seekdb_or_url(args.url) as server:
        base = args.url.rstrip("/").rsplit("/", 1)[0] if args.url else f"mysql+aiomysql://root@127.0.0.1:{server.port}"
        host, port = ("127.0.0.1", server.port) if server else (None, None)
        baseline_commit = _export_baseline(rev, Path(tmp))
        env = environment(["google-adk", "sqlalchemy", "aiomysql", "pylibseekdb"], {"baseline_commit": baseline_commit})
        print_environment(env)
        urls = {m: f"{base}/{args.db_prefix}_{m}" for m in (*MODES, "gc")}
        if server:
            for m in urls:
                ensure_database(host, port, "root", None, f"{args.db_prefix}_{m}", fresh=True)
        src = {"baseline": Path(tmp) / "src", "off": REPO_ROOT, "on": REPO_ROOT}
        samples: dict[str, list[float]] = {m: [] for m in MODES}
        round_p50: dict[str, list[float]] = {m: [] for m in MODES}
        # Schema setup first, for every mode, outside the rounds: seekdb works in the background
        # after DDL, and the first timed round measured that (an "off" round at 3.3 ms vs 1.0 ms).
        for mode in MODES:
            _run_worker(src[mode], urls[mode], mode, argparse.Namespace(appends=1, warmup=1), 0)
        for r in range(args.rounds):
            order = MODES if r % 2 == 0 else tuple(reversed(MODES))
            for mode in order:
                lat = _run_worker(src[mode], urls[mode], mode, args, args.seed * 1000 + r)
                samples[mode].extend(lat)
                round_p50[mode].append(statistics.median(lat) * 1000)
            print(f"round {r + 1}/{args.rounds}: " + ", ".join(f"{m} p50 {round_p50[m][-1]:.3f} ms" for m in MODES))
        append = {m: {**summarize(samples[m]), "round_p50_ms": round_p50[m],
                      "median_round_p50_ms": statistics.median(round_p50[m])} for m in MODES}
        print("== append_event (every event carries one temp: key)")
        for m in MODES:
            a = append[m]
            print(f"  {m:8s} p50 {a['p50_ms']:.3f} ms  p95 {a['p95_ms']:.3f} ms  median of round p50s "
                  f"{a['median_round_p50_ms']:.3f} ms  (n={a['n']})")
        ratio_off = append["off"]["p50_ms"] / append["baseline"]["p50_ms"]
        ratio_on = append["on"]["p50_ms"] / append["baseline"]["p50_ms"]
        print(f"  off / baseline p50: {ratio_off:.3f}   on / baseline p50: {ratio_on:.3f}")
        sweep_res = asyncio.run(_sweep_phase(urls["gc"], args.sweep_sessions, args.sweep_events))
        print(f"== retention sweep: {sweep_res['sessions']} sessions / {sweep_res['events']} events in "
              f"{sweep_res['seconds']:.2f} s ({sweep_res['sessions_per_s']:.0f} sessions/s, "
              f"{sweep_res['mean_batch_ms']:.1f} ms per 100-session batch)")
        write_json(args.out, {"environment": env, "args": vars(args), "append": append,
                              "ratios": {"off_vs_baseline_p50": ratio_off, "on_vs_baseline_p50": ratio_on}, "sweep": sweep_res})


if __name__ == "__main__":
    main()
