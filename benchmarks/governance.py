"""Governance cost benchmark: ``append_event`` p50 with redaction and the audit log off vs on.

Four session services share one seekdb/OceanBase database in one process:
``off`` (neither), ``redact`` (``RedactionPolicy(RuleRedactor())``), ``audit``
(``AuditSettings()``: the audit row rides in the append's COMMIT packet) and
``both``.  Each appends the same events to its own session, sample by sample
in alternating order (``time_async_paired``), so load from other processes
hits every mode alike.  Issue #10's goal: each costs < 10% of append p50.

The events are chat turns (~200 characters), a fifth of them with PII (an
e-mail, a phone number, a card number) and a tenth a tool call with arguments:
the rules run on every string, and replace only in those.

Usage::

    python benchmarks/governance.py                  # starts its own seekdb server
    python benchmarks/governance.py --appends 500    # quicker
    python benchmarks/governance.py --url oceanbase://root@127.0.0.1:2881/adkbench_gov
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # this checkout's adk_oceanbase, as in sessions.py

from _common import (  # noqa: E402  (script-style import of the sibling module)
    ensure_database,
    environment,
    print_environment,
    seekdb_or_url,
    summarize,
    time_async_paired,
    write_json,
)
from google.adk.events import Event  # noqa: E402
from google.genai import types  # noqa: E402

APP = "gov_bench"
PACKAGES = ["google-adk", "sqlalchemy", "aiomysql", "pymysql", "pylibseekdb", "adk-oceanbase"]
FILLER = (
    "Could you check the itinerary for next week and tell me whether the hotel near the lake still has rooms, "
    "and what the weather will be like on Tuesday afternoon?"
)
PII = [" Mail me at lin.wei@example.com.", " Call +86 138 0013 8000.", " Card 4111 1111 1111 1111."]


def workload(seed: int, n: int) -> list[Event]:
    """``n`` events: chat turns, 20% with PII, 10% tool calls with arguments (fixed seed)."""
    rng = random.Random(seed)
    events = []
    for i in range(n):
        roll = rng.random()
        if roll < 0.1:
            call = types.FunctionCall(name="book_hotel", args={"city": "Hangzhou", "nights": 2, "guest": "Lin Wei"})
            content = types.Content(role="model", parts=[types.Part(function_call=call)])
        else:
            body = FILLER + (rng.choice(PII) if roll < 0.3 else "")
            content = types.Content(role="user" if i % 2 == 0 else "model", parts=[types.Part(text=body)])
        events.append(Event(author="user" if i % 2 == 0 else "assistant", invocation_id=f"inv-{i // 2}", content=content))
    return events


async def run(url: str, appends: int, seed: int) -> dict:
    from adk_oceanbase import AuditSettings, OceanBaseSessionService, RedactionPolicy, RuleRedactor
    from adk_oceanbase.redaction import redact_event

    policy = RedactionPolicy(RuleRedactor())
    modes = {
        "off": {},
        "redact": {"redaction": policy},
        "audit": {"audit": AuditSettings()},
        "both": {"redaction": policy, "audit": AuditSettings()},
    }
    base = OceanBaseSessionService(url)
    await base.setup()
    services = {name: OceanBaseSessionService(database=base.database, **kw) for name, kw in modes.items()}
    sessions = {name: await svc.create_session(app_name=APP, user_id="u1") for name, svc in services.items()}
    events = workload(seed, appends + 20)
    cursor = {name: 0 for name in modes}

    def appender(name: str):
        async def one() -> None:
            e = events[cursor[name] % len(events)]
            cursor[name] += 1
            await services[name].append_event(sessions[name], e.model_copy(update={"id": Event.new_id()}))

        return one

    samples = await time_async_paired(
        {name: appender(name) for name in modes}, min_reps=appends, max_reps=appends, budget_s=0, warmup=20
    )
    # the redactor alone, on the same events (pure CPU, on the event loop)
    t0 = time.perf_counter()
    for e in events[:appends]:
        await redact_event(policy.redactor, e)
    redact_us = (time.perf_counter() - t0) / appends * 1e6
    await base.close()

    results = {name: summarize(xs) for name, xs in samples.items()}
    off = results["off"]["p50_ms"]
    ratios = {name: results[name]["p50_ms"] / off for name in modes}
    print(f"\n== append_event, {appends} samples per mode, interleaved")
    print(f"  {'mode':<8}{'p50 ms':>9}{'p95 ms':>9}{'p50 / off':>11}")
    for name in modes:
        r = results[name]
        print(f"  {name:<8}{r['p50_ms']:>9.3f}{r['p95_ms']:>9.3f}{ratios[name]:>11.3f}")
    print(f"  redact_event alone: {redact_us:.1f} us per event")
    for name in ("redact", "audit", "both"):
        mark = "PASS" if ratios[name] < 1.10 else "MISS"
        print(f"  [{mark}] {name}: +{(ratios[name] - 1) * 100:.1f}% of append p50 (goal < 10%)")
    return {"append": results, "p50_ratio_over_off": ratios, "redact_event_us": redact_us}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", help="database URL (oceanbase://.../db or mysql+aiomysql://.../db); default: start our own seekdb")
    p.add_argument("--appends", type=int, default=2000, help="timed appends per mode")
    p.add_argument("--seed", type=int, default=20241123)
    p.add_argument("--db", default="adkbench_gov", help="database created on the server this script starts")
    p.add_argument("--out", help="JSON results path (default: benchmarks/results/governance-<date>.json)")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    with seekdb_or_url(args.url) as server:
        if server is not None:
            url = f"oceanbase://root@127.0.0.1:{server.port}/{args.db}"
            ensure_database("127.0.0.1", server.port, "root", None, args.db, fresh=True)
        else:
            url = args.url
        env = environment(PACKAGES, {"server_started_by_benchmark": server is not None})
        print_environment(env)
        print("  args: " + json.dumps({k: v for k, v in vars(args).items() if k != "url"}))
        results = asyncio.run(run(url, args.appends, args.seed))
    out = args.out or str(Path(__file__).resolve().parent / "results" / f"governance-{env['date_utc'][:10]}.json")
    write_json(out, {"benchmark": "governance", "environment": env, "args": vars(args) | {"url": None}, **results})
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
