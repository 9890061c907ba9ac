"""The memory pipeline (issue #31): ``add_session_to_memory`` latency off the request path, and recall unchanged.

A scripted, deterministic extractor stands in for the LLM (no network): every
turn of an exchange becomes one fact, word for word, after sleeping
``--delay-ms`` (500 ms: a hosted model's latency).  Two measurements, on a
seekdb server this script starts (or ``--url``):

1. **latency**: ``--calls`` sessions of ``--turns`` turns (consecutive LoCoMo
   turns of the tune split, stored through ``OceanBaseSessionService``, so the
   call reads and decodes the stored log as in production), each remembered
   once with ``add_session_to_memory`` while the background workers extract
   the previous ones.  p50/p95/max of the call, pipeline (``mode="background"``)
   against inline extraction (``pipeline=None``, ``--inline-calls`` calls: each
   waits for every exchange's model call), then the time ``flush()`` takes to
   drain the queue.
2. **recall**: LoCoMo's tune split (conversations 1-5; ``benchmarks/_split.py``;
   never the test split) remembered session by session, then every question of
   categories 1-4 searched (top 10; a hit counts the dialogue ids of its source
   events); and the knowledge-update sets of the tune seeds (0-3,
   ``benchmarks/_synthetic.py``: facts that change over time, dated before a
   fixed clock), each fact one user turn, remembered as sessions of 50 turns
   in date order, the recall history replayed (``top_k=1`` searches that count
   as accesses), then every question asked at the set's clock (R@1, R@10).
   Inline extraction against the pipeline, once with
   ``summarization_threshold=0`` (every exchange through the extractor, as
   inline: must be equal) and once with the default threshold (short
   exchanges stored raw, trivial turns dropped).

Usage::

    python benchmarks/pipeline.py --locomo /work/shared/datasets/locomo10.json
    python benchmarks/pipeline.py --locomo ... --calls 100 --delay-ms 500 --json benchmarks/results/pipeline-DATE.json
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # this checkout's adk_oceanbase

from _common import ensure_database, environment, percentile, print_environment, seekdb_or_url, write_json  # noqa: E402

APP = "pipeline_bench"


def sleepy_extractor(delay_s: float) -> Any:
    """The scripted extractor: each turn's text is a fact, after ``delay_s`` (deterministic, no network)."""
    from adk_oceanbase.memory import LlmExtractor
    from adk_oceanbase.memory.extraction import ExtractedFact, event_text

    class Sleepy(LlmExtractor):
        def __init__(self) -> None:
            self.model, self.max_facts, self.version, self.calls = None, 16, "bench:v1", 0

        async def extract(self, exchange: Sequence[Any], existing: Sequence[tuple[str, str]] = ()) -> list[Any]:
            self.calls += 1
            await asyncio.sleep(delay_s)
            return [ExtractedFact(text=t) for e in exchange if (t := event_text(e))][: self.max_facts]

    return Sleepy()


def events_of(conv: Any, turns: Sequence[Any]) -> list[Any]:
    """LoCoMo turns as ADK events: the first speaker is the ``user`` (exchanges start at their turns)."""
    from google.adk.events.event import Event
    from google.genai import types

    from _locomo import turn_content

    return [
        Event(id=t.dia_id, invocation_id=f"s{t.session}", author="user" if t.speaker == conv.speakers[0] else t.speaker,
              timestamp=t.time.timestamp(), content=types.Content(role="user", parts=[types.Part(text=turn_content(t))]))
        for t in turns
    ]


def memory_service(url: str, embedder: Any, extractor: Any, pipeline: Any) -> Any:
    from adk_oceanbase.memory import MemorySettings, OceanBaseMemoryService

    # pipeline False: extraction inline (with an extractor, None would pick the default pipeline)
    return OceanBaseMemoryService(url, embedder=embedder, extractor=extractor, pipeline=pipeline,
                                  settings=MemorySettings(bump_access=False))


async def bench_latency(url: str, convs: list[Any], embedder: Any, args: argparse.Namespace) -> dict[str, Any]:
    from adk_oceanbase import OceanBaseSessionService
    from adk_oceanbase.memory import PipelineSettings

    windows = [(c, c.turns[i:i + args.turns]) for c in convs for i in range(0, len(c.turns) - args.turns + 1, args.turns)]
    sessions = OceanBaseSessionService(url)
    stored = []
    for n, (conv, turns) in enumerate(windows[: args.calls + args.inline_calls]):
        s = await sessions.create_session(app_name=APP, user_id=f"lat{n}", session_id=f"w{n}")
        for e in events_of(conv, turns):
            await sessions.append_event(s, e)
        stored.append(await sessions.get_session(app_name=APP, user_id=f"lat{n}", session_id=f"w{n}"))
    await sessions.close()
    out: dict[str, Any] = {"turns_per_session": args.turns}
    half = args.calls // 2
    for name, pipeline, batch in (
        ("pipeline, workers in another process", PipelineSettings(workers=0), stored[:half]),
        (f"pipeline, {args.workers} workers in this process", PipelineSettings(workers=args.workers),
         stored[half: args.calls]),
        ("inline", False, stored[args.calls:]),
    ):
        ex = sleepy_extractor(args.delay_ms / 1000)
        svc = memory_service(url, embedder, ex, pipeline)
        await svc.stats()  # connect and set up outside the timed calls
        worker = None
        if name.endswith("another process"):  # a worker process drains the queue while the front end adds
            worker = await asyncio.create_subprocess_exec(
                sys.executable, __file__, "--drain", url, "--delay-ms", str(args.delay_ms),
                "--workers", str(args.workers), "--embedder", args.embedder, "--locomo", args.locomo,
                stdin=asyncio.subprocess.PIPE)
        times, cpu = [], []
        for s in batch:
            t0, c0 = time.perf_counter(), time.process_time()
            await svc.add_session_to_memory(s)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)  # this process's CPU (the workers' too when they share it)
        t0 = time.perf_counter()
        if worker is not None:
            assert worker.stdin is not None
            worker.stdin.close()  # "drain what is queued, then stop"
            await worker.wait()
        await svc.flush()
        drain = time.perf_counter() - t0
        ms = [t * 1000 for t in times]
        out[name] = {"calls": len(ms), "p50_ms": percentile(ms, 50), "p95_ms": percentile(ms, 95), "max_ms": max(ms),
                     "cpu_p50_ms": percentile([c * 1000 for c in cpu], 50), "flush_s": drain, "extractor_calls": ex.calls}
        await svc.close()
    return out


async def drain_worker(url: str, embedder: Any, args: argparse.Namespace) -> None:
    """``--drain``: a worker process; extracts until stdin closes, then drains what is left and exits."""
    from adk_oceanbase.memory import PipelineSettings

    svc = memory_service(url, embedder, sleepy_extractor(args.delay_ms / 1000),
                         PipelineSettings(workers=args.workers, poll_interval_s=0.2))
    await svc.stats()  # starts the background worker
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)
    await svc.flush()
    await svc.close()


def ku_sessions(seed: int) -> tuple[str, Any, list[Any]]:
    """A knowledge-update set as ``(user, set, sessions)``: each fact one user turn, 50 turns a session, oldest first."""
    from google.adk.events.event import Event
    from google.adk.sessions.session import Session
    from google.genai import types

    from _synthetic import dated_texts, make_knowledge_update_set

    ku = make_knowledge_update_set(seed)
    user = f"ku-seed{seed}"
    events = [Event(id=m.memory_id, invocation_id="ku", author="user", timestamp=when.timestamp(),
                    content=types.Content(role="user", parts=[types.Part(text=m.text)]))
              for m, when, _ in sorted(dated_texts(ku), key=lambda d: d[1])]
    chunks = [events[i:i + 50] for i in range(0, len(events), 50)]
    return user, ku, [Session(id=f"ku{n}", app_name=APP, user_id=user, events=c, last_update_time=c[-1].timestamp)
                      for n, c in enumerate(chunks)]


async def remember_split(url: str, convs: list[Any], kus: list[Any], embedder: Any, extractor: Any,
                         pipeline: Any) -> tuple[Any, float]:
    svc = memory_service(url, embedder, extractor, pipeline)
    from google.adk.sessions.session import Session

    t0 = time.perf_counter()
    for conv in convs:
        by_session: dict[int, list[Any]] = {}
        for t in conv.turns:
            by_session.setdefault(t.session, []).append(t)
        for sno, turns in sorted(by_session.items()):
            events = events_of(conv, turns)
            await svc.add_session_to_memory(Session(id=f"s{sno}", app_name=APP, user_id=conv.sample_id, events=events,
                                                    last_update_time=events[-1].timestamp))
    for _, _, sessions in kus:
        for s in sessions:
            await svc.add_session_to_memory(s)
    await svc.flush()
    return svc, time.perf_counter() - t0


async def recall(svc: Any, convs: list[Any], kus: list[Any]) -> dict[str, Any]:
    from _metrics import recall_at_k
    from _synthetic import KU_CLOCK

    def ids(hits: list[Any]) -> list[str]:
        return [d for h in hits for d in (h.entry.custom_metadata.get("event_ids") or [h.memory_id])]

    scores = []
    for conv in convs:
        now = max(t.time for t in conv.turns) + timedelta(days=1)
        for q in conv.queries:
            if q.category == 5:
                continue
            hits = await svc.search(APP, conv.sample_id, q.question, top_k=10, bump_access=False, now=now)
            scores.append(recall_at_k(ids(hits), q.evidence, 10))
    out: dict[str, Any] = {"questions": len(scores), "r10": sum(scores) / len(scores)}
    r1, r10 = [], []
    for user, ku, _ in kus:
        for question in ku.warmups:  # the recall history: the frequency signal's accesses
            await svc.search(APP, user, question, top_k=1, bump_access=True, now=KU_CLOCK)
        for q in ku.queries:
            ranked = ids(await svc.search(APP, user, q.question, top_k=10, bump_access=False, now=KU_CLOCK))
            r1.append(recall_at_k(ranked, [q.relevant], 1))
            r10.append(recall_at_k(ranked, [q.relevant], 10))
    if r1:
        out.update(ku_questions=len(r1), ku_r1=sum(r1) / len(r1), ku_r10=sum(r10) / len(r10))
    return out


async def bench_recall(base_url: str, convs: list[Any], embedder: Any, args: argparse.Namespace, make_db: Any) -> dict[str, Any]:
    from adk_oceanbase.memory import PipelineSettings

    runs = {
        "inline": (sleepy_extractor(0.0), False),
        "pipeline, threshold 0": (sleepy_extractor(args.delay_ms / 1000), PipelineSettings(workers=args.workers, summarization_threshold=0)),
        "pipeline, default threshold": (sleepy_extractor(args.delay_ms / 1000), PipelineSettings(workers=args.workers)),
    }
    kus = [ku_sessions(seed) for seed in args.ku_seeds]
    out = {}
    for name, (ex, pipeline) in runs.items():
        url = make_db(name)
        svc, took = await remember_split(url, convs, kus, embedder, ex, pipeline)
        r = await recall(svc, convs, kus)
        stats = await svc.stats(app_name=APP)
        await svc.close()
        out[name] = {**r, "remember_s": took, "extractor_calls": ex.calls, "memories": sum(stats.get(APP, {}).values())}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--locomo", required=True, help="path to locomo10.json")
    p.add_argument("--url", help="server URL (oceanbase://user@host:port/); default: start our own seekdb")
    p.add_argument("--turns", type=int, default=50, help="turns per session in the latency run")
    p.add_argument("--calls", type=int, default=60, help="add_session_to_memory calls with the pipeline (half each way)")
    p.add_argument("--inline-calls", type=int, default=3, help="calls with inline extraction (each takes seconds)")
    p.add_argument("--delay-ms", type=float, default=500.0, help="the scripted extractor's latency per call")
    p.add_argument("--workers", type=int, default=32, help="PipelineSettings.workers")
    p.add_argument("--embedder", choices=("hash", "minilm"), default="hash")
    p.add_argument("--conversations", type=int, default=None, help="only the first N tune conversations (default all 5)")
    p.add_argument("--skip-recall", action="store_true")
    p.add_argument("--ku-seeds", type=lambda v: [int(x) for x in v.split(",") if x], default=None,
                   help="knowledge-update seeds in the recall run (default: the tune split's, 0-3; '' for none)")
    p.add_argument("--json", metavar="PATH", help="also write the results here")
    p.add_argument("--drain", metavar="URL", help=argparse.SUPPRESS)  # the worker process of the latency run
    args = p.parse_args(argv)
    if args.drain:
        from adk_oceanbase.memory import HashEmbedder, default_embedder

        asyncio.run(drain_worker(args.drain, HashEmbedder() if args.embedder == "hash" else default_embedder(), args))
        return 0
    env = environment(["adk-oceanbase", "google-adk", "pylibseekdb"])
    print_environment(env)
    print(f"  load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")

    from _locomo import load_locomo
    from _split import SPLITS

    from adk_oceanbase.memory import HashEmbedder, default_embedder

    if args.ku_seeds is None:
        args.ku_seeds = list(SPLITS["tune"].seeds)
    every, _ = load_locomo(args.locomo)
    tune = [every[i] for i in SPLITS["tune"].conversations]
    convs = tune[: args.conversations]  # the recall run's; the latency run takes its windows from all five
    embedder = HashEmbedder() if args.embedder == "hash" else default_embedder()
    with seekdb_or_url(args.url) as server:
        if server is not None:
            host, port, base = server.host, server.port, f"oceanbase://root@{server.host}:{server.port}"
        else:
            base = args.url.rstrip("/")
            host, port = base.split("@")[1].split("/")[0].split(":")
            port = int(port)

        def make_db(name: str) -> str:
            db = "pipeline_" + "".join(ch if ch.isalnum() else "_" for ch in name)
            ensure_database(host, port, "root", None, db, fresh=True)
            return f"{base}/{db}"

        lat = asyncio.run(bench_latency(make_db("latency"), tune, embedder, args))
        rec = None if args.skip_recall else asyncio.run(bench_recall(base, convs, embedder, args, make_db))
    print(f"\nadd_session_to_memory, {args.turns}-turn sessions, scripted extractor sleeping {args.delay_ms:.0f} ms per call")
    print("| mode | calls | p50 ms | p95 ms | max ms | CPU p50 ms | flush() after s | extractor calls here |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in lat.items():
        if not isinstance(r, dict):
            continue
        print(f"| {name} | {r['calls']} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} | {r['max_ms']:.1f} | {r['cpu_p50_ms']:.1f} | {r['flush_s']:.1f} | {r['extractor_calls']} |")
    if rec:
        print(f"\nLoCoMo tune split ({len(convs)} of conversations 1-5), categories 1-4, R@10 ({args.embedder} embedder)")
        print(f"knowledge-update seeds {args.ku_seeds}: R@1 / R@10 at the set's clock, after its recall history")
        print("| extraction | LoCoMo questions | LoCoMo R@10 | KU questions | KU R@1 | KU R@10 | memories | extractor calls "
              "| remember + flush s |")
        print("|---|---|---|---|---|---|---|---|---|")
        for name, r in rec.items():
            ku = f"{r['ku_questions']} | {r['ku_r1']:.4f} | {r['ku_r10']:.4f}" if "ku_r1" in r else "- | - | -"
            print(f"| {name} | {r['questions']} | {r['r10']:.4f} | {ku} | {r['memories']} | {r['extractor_calls']} "
                  f"| {r['remember_s']:.1f} |")
    if args.json:
        write_json(args.json, {"environment": env, "args": vars(args), "latency": lat, "recall": rec})
    return 0


if __name__ == "__main__":
    sys.exit(main())
