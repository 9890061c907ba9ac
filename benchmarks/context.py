"""Context engineering (issue #30): the pruner's budget guarantee and packing, and turn-snapshot reads.

Two measurements, in one process:

1. the pruner over ``--requests`` random requests (fixed seed): every request
   checked against its budget (violations must be 0), tokens sent whole
   compared with an oracle packing (the most tokens any choice of whole
   groups could send, must-keep groups forced: exact subset sum), and the
   pruner's own time per request;
2. the merged state as of a turn for sessions of 100 / 1,000 / 5,000 events
   (every event writes state; ``--other-sessions`` more sessions of the app
   write shared ``app:`` keys meanwhile) on a seekdb server: the full-log
   replay (``compaction.replay_state``, the baseline) against the snapshot
   reader (``context.snapshots.state_as_of``) cold (its first read, which
   writes the checkpoints) and warm (p50 over random turns), and the public
   ``turn_snapshot(turn=N)`` (the server cuts turn N's range, then the read).

Usage::

    python benchmarks/context.py                       # starts its own seekdb server
    python benchmarks/context.py --sizes 100,1000 --requests 2000 --url oceanbase://root@127.0.0.1:2881/
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # this checkout's adk_oceanbase, as in sessions.py

from _common import ensure_database, environment, percentile, print_environment, seekdb_or_url, write_json  # noqa: E402

T0 = 1_740_000_000.0  # events dated long ago: settled, so snapshot reads may checkpoint them


def random_request(rng: random.Random) -> tuple[list[Any], Any]:
    """A request: instruction and tools (must keep), memories, a conversation with call/response pairs, a budget."""
    from adk_oceanbase.context.blocks import Block, Budget, Priority

    blocks = [Block("instruction", "instruction", "", rng.randint(50, 600), Priority.MUST, must_keep=True, order=-3)]
    if rng.random() < 0.6:
        blocks.append(Block("tools", "tools", "", rng.randint(40, 500), Priority.MUST, must_keep=True, order=-2))
    for i in range(rng.randint(0, 8)):
        blocks.append(Block(f"m{i}", "memory", "", rng.randint(5, 120), Priority.HIGH, score=rng.random(), order=-1 + i / 100))
    n = rng.randint(1, 50)
    i = 0
    while i < n:
        tokens = rng.choice([rng.randint(1, 60), rng.randint(60, 400), rng.randint(400, 3000)])
        summary = rng.random() < 0.3 and tokens > 100
        if rng.random() < 0.2 and i + 1 < n:  # a call and its (often long) response
            blocks.append(Block(f"e{i}", "content", "", rng.randint(10, 60), group=f"g{i}", chain="c", order=i))
            blocks.append(Block(f"e{i + 1}", "content", "", tokens, group=f"g{i}", chain="c", order=i + 1,
                                summary="s" if summary else None, summary_tokens=tokens // 8 if summary else 0))
            i += 2
        else:
            blocks.append(Block(f"e{i}", "content", "", tokens, chain="c", order=i, must_keep=i == n - 1,
                                summary="s" if summary else None, summary_tokens=tokens // 8 if summary else 0))
            i += 1
    window = rng.choice([2000, 4000, 8000, 16000, 32000])
    return blocks, Budget(window, rng.choice([0, 256, 1024]), {"memory": window // 4})


def oracle_tokens(blocks: list[Any], available: int) -> int | None:
    """The most tokens whole groups can fill, must-keep groups forced (exact, by a bitset subset sum); None: must-keep alone overflow."""
    units: dict[str, list[Any]] = {}
    for b in blocks:
        units.setdefault(b.group or b.block_id, []).append(b)
    forced = sum(b.tokens for u in units.values() if any(x.must_keep for x in u) for b in u)
    if forced > available:
        return None
    cap = available - forced
    reachable, mask = 1, (1 << (cap + 1)) - 1
    for u in units.values():
        if not any(x.must_keep for x in u):
            reachable = (reachable | (reachable << sum(b.tokens for b in u))) & mask
    return forced + reachable.bit_length() - 1


def bench_pruner(requests: int, seed: int) -> dict[str, Any]:
    from adk_oceanbase.context.pruner import prune
    from adk_oceanbase.errors import ContextBudgetError

    rng = random.Random(seed)
    violations = refused = 0
    whole = oracle = sent = available = 0
    elapsed = 0.0
    for _ in range(requests):
        blocks, budget = random_request(rng)
        best = oracle_tokens(blocks, budget.available)
        t0 = time.perf_counter()
        try:
            report = prune(blocks, budget)
        except ContextBudgetError:
            elapsed += time.perf_counter() - t0
            refused += 1
            assert best is None, "refused a request the oracle could pack"
            continue
        elapsed += time.perf_counter() - t0
        violations += report.used_tokens > budget.available
        if best is None:  # fits only because must-keep blocks degraded: no whole-group oracle to compare with
            continue
        whole += sum(d.tokens for d in report.kept)
        sent += report.used_tokens
        oracle += best
        available += budget.available
    packed = requests - refused
    return {
        "requests": requests, "violations": violations, "refused": refused,
        "whole_vs_oracle": whole / oracle if oracle else 0.0, "sent_vs_oracle": sent / oracle if oracle else 0.0,
        "sent_vs_available": sent / available if available else 0.0, "us_per_request": elapsed / max(packed, 1) * 1e6,
    }


async def bench_snapshots(url: str, sizes: list[int], other_sessions: int, reads: int, seed: int) -> list[dict[str, Any]]:
    from google.adk.events.event import Event
    from google.adk.events.event_actions import EventActions
    from google.genai import types

    from adk_oceanbase import OceanBaseSessionService
    from adk_oceanbase.compaction import replay_state
    from adk_oceanbase.context import snapshots
    from adk_oceanbase.context.turns import list_turns, turn_snapshot

    rng = random.Random(seed)
    svc = OceanBaseSessionService(url)
    out = []

    def event(i: int, inv: str, delta: dict[str, Any]) -> Event:
        return Event(author="user", invocation_id=inv, timestamp=T0 + i, actions=EventActions(state_delta=delta),
                     content=types.Content(role="user", parts=[types.Part(text=f"message {i} " * 6)]))

    for size in sizes:
        app = f"ctx_bench_{size}"
        s = await svc.create_session(app_name=app, user_id="u", state={"step": 0})
        others = [await svc.create_session(app_name=app, user_id=f"o{k}") for k in range(other_sessions)]
        for i in range(1, size + 1):
            await svc.append_event(s, event(i, f"t{(i + 1) // 2}", {"step": i, f"slot{i % 16}": i, **({"user:seen": i} if i % 25 == 0 else {})}))
            if others and i % 2 == 0:  # the rest of the app keeps writing shared state meanwhile
                await svc.append_event(others[i % len(others)], event(i, f"o{i}", {"app:round": i, "n": i}))
        turns = await list_turns(svc, app_name=app, user_id="u", session_id=s.id)
        last = turns[-1]

        async def timed(coro: Any) -> tuple[float, Any]:
            t0 = time.perf_counter()
            result = await coro
            return (time.perf_counter() - t0) * 1000, result

        full_ms, full = await timed(replay_state(svc, app_name=app, user_id="u", session_id=s.id, event_id=last.event_ids[-1]))
        cold_ms, cold = await timed(snapshots.state_as_of(svc.database, app, "u", s.id, last.last_seq))
        assert cold.state == full.state, "snapshot differs from the full replay"
        warm, with_index = [], []
        for _ in range(reads):
            t = rng.choice(turns)
            ms, _snap = await timed(snapshots.state_as_of(svc.database, app, "u", s.id, t.last_seq))
            warm.append(ms)
            ms, by_turn = await timed(turn_snapshot(svc, app_name=app, user_id="u", session_id=s.id, turn=t.number))
            assert by_turn.seq == t.last_seq
            with_index.append(ms)
        base = []
        for _ in range(max(3, reads // 10)):
            t = rng.choice(turns)
            ms, _r = await timed(replay_state(svc, app_name=app, user_id="u", session_id=s.id, event_id=t.event_ids[-1]))
            base.append(ms)
        out.append({
            "events": size, "turns": len(turns), "app_events": size + (size // 2 if others else 0),
            "replay_p50_ms": percentile(base, 50), "replay_last_ms": full_ms, "cold_ms": cold_ms,
            "warm_p50_ms": percentile(warm, 50), "warm_p95_ms": percentile(warm, 95),
            "with_turn_index_p50_ms": percentile(with_index, 50),
        })
    await svc.close()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", help="server URL (oceanbase://user@host:port/); default: start our own seekdb")
    p.add_argument("--requests", type=int, default=10_000, help="random requests for the pruner")
    p.add_argument("--sizes", default="100,1000,5000", help="session sizes (events) for snapshot reads")
    p.add_argument("--other-sessions", type=int, default=10, help="other sessions of the app writing shared state")
    p.add_argument("--reads", type=int, default=50, help="warm snapshot reads per size")
    p.add_argument("--seed", type=int, default=30)
    p.add_argument("--json", metavar="PATH", help="also write the results here (e.g. benchmarks/results/context-DATE.json)")
    args = p.parse_args(argv)
    env = environment(["adk-oceanbase", "google-adk", "pylibseekdb"])
    print_environment(env)

    r = bench_pruner(args.requests, args.seed)
    print(f"\npruner, {r['requests']} random requests: {r['violations']} over budget, {r['refused']} refused "
          f"(must-keep alone over the budget); tokens sent whole / oracle {r['whole_vs_oracle']:.3f}, "
          f"sent incl. summaries / oracle {r['sent_vs_oracle']:.3f}, sent / available {r['sent_vs_available']:.3f}; "
          f"{r['us_per_request']:.0f} us per request")

    with seekdb_or_url(args.url) as server:
        if server is not None:
            host, port = server.host, server.port
            url = f"oceanbase://root@{host}:{port}/context_bench"
        else:
            url = args.url.rstrip("/") + "/context_bench"
            host, port = url.split("@")[1].split("/")[0].split(":")
            port = int(port)
        ensure_database(host, port, "root", None, "context_bench", fresh=True)
        rows = asyncio.run(bench_snapshots(url, [int(x) for x in args.sizes.split(",")], args.other_sessions, args.reads, args.seed))
    print("\nstate as of a turn (ms): full-log replay vs snapshot reader")
    print("| events | turns | app events | replay p50 | snapshot cold | snapshot warm p50 | warm p95 | turn_snapshot(turn=N) p50 |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['events']} | {row['turns']} | {row['app_events']} | {row['replay_p50_ms']:.1f} | {row['cold_ms']:.1f} | "
              f"{row['warm_p50_ms']:.1f} | {row['warm_p95_ms']:.1f} | {row['with_turn_index_p50_ms']:.1f} |")
    if args.json:
        write_json(args.json, {"environment": env, "args": vars(args), "pruner": r, "snapshots": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
