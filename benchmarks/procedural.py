"""Does procedural memory help? A scripted agent in a simulated tool environment, through a real ADK Runner (issue 27).

20 scenarios (``_procedural_env.py``), each with 4 tool paths of hidden
success probability and cost; requests phrased 4 ways.  Every session is one
``Runner.run_async`` turn of a ``BaseAgent`` subclass (no LLM, no network)
on ``OceanBaseSessionService``; the agent emits real ``function_call`` /
``function_response`` events and reports its outcome in ``state_delta``
(``procedure_outcome``), and after the turn the session is read back and
handed to ``ProcedureStore.extract_session`` (MiniLM scenario grouping).

Policies: ``none`` picks a path uniformly (no procedural memory); ``ours``
asks ``recall_procedures`` and follows the top path when its confidence is
at least ``--follow`` (0.5), else takes the path with the highest Thompson
draw (Beta over each path's recalled recency-weighted outcomes, untried
paths at Beta(1, 1)); ``oracle`` always takes the best path.  The knobs
were chosen on the tune split (``procedural_tune.py``: other tasks, seeds
``TUNE_SEEDS``); this script refuses a tune seed.  Runs: ``clean``; ``noise`` (20 % of reported outcomes
flipped; success is still measured on the truth); ``drift`` (scenario 0's
best path collapses after half of its sessions and its worst becomes best).

Usage::

    python benchmarks/procedural.py [--sessions 1000] [--seed 7] [--runs clean,noise,drift] [--url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import sys
import time
from pathlib import Path
from typing import Any, AsyncGenerator

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _procedural_env import COST, TUNE_SEEDS, Environment, Scenario, add_drift, build, choose  # noqa: E402

from google.adk.agents.base_agent import BaseAgent  # noqa: E402
from google.adk.agents.invocation_context import InvocationContext  # noqa: E402
from google.adk.events.event import Event  # noqa: E402
from google.adk.events.event_actions import EventActions  # noqa: E402
from google.genai import types  # noqa: E402

WARMUP = 30  # sessions per scenario before the "after learning" success rate counts
FOLLOW = 0.5  # the confidence at which the agent follows the top path: chosen on the tune split (procedural_tune.py)


class ScriptedAgent(BaseAgent):
    """Chooses a path by its policy, calls its tools (simulated), reports the outcome; no model."""

    policy: str
    env: Any
    store: Any = None
    noise: float = 0.0
    follow: float | None = FOLLOW
    cost: float = COST
    current: Any = None  # the Scenario of this turn (the harness knows it; the agent only sees the text)
    last: dict = {}

    async def _choose(self, ctx: InvocationContext, request: str) -> tuple[int, Any]:
        sc: Scenario = self.current
        if self.policy == "oracle":
            return sc.best, None
        if self.policy == "none":
            return self.env.rng.randrange(len(sc.paths)), None
        recall = await self.store.recall_procedures(ctx.session.app_name, request, top_k=10)
        return choose(recall, sc, self.env.rng, self.follow, self.cost)

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        request = " ".join(p.text for p in (ctx.user_content.parts or []) if p.text)
        index, recommended = await self._choose(ctx, request)
        path = self.current.paths[index]
        ok, failed_at = self.env.attempt(path)
        calls = 0
        for step, tool in enumerate(path.tools):
            calls += 1
            cid = f"{ctx.invocation_id}-{step}"
            yield Event(invocation_id=ctx.invocation_id, author=self.name, branch=ctx.branch, content=types.Content(
                role="model", parts=[types.Part(function_call=types.FunctionCall(id=cid, name=tool, args={"q": request}))]))
            # the failing step answers with an error and the agent carries on to the end of its plan, so the
            # events hold the path it chose (stopping at the failure would record a prefix as another path)
            response = {"error": f"{tool} failed"} if step == failed_at else {"ok": True}
            yield Event(invocation_id=ctx.invocation_id, author=self.name, branch=ctx.branch, content=types.Content(
                role="user", parts=[types.Part(function_response=types.FunctionResponse(id=cid, name=tool, response=response))]))
        reported = (not ok) if self.env.rng.random() < self.noise else ok
        self.last = {"ok": ok, "calls": calls, "index": index, "recommended": recommended}
        yield Event(invocation_id=ctx.invocation_id, author=self.name, branch=ctx.branch,
                    actions=EventActions(state_delta={"procedure_outcome": reported}),
                    content=types.Content(role="model", parts=[types.Part(text="done" if ok else "could not do it")]))


async def run_one(
    db: Any, embedder: Any, policy: str, condition: str, sessions: int, seed: int, pool: float | None = None,
    follow: float | None = FOLLOW, cost: float = COST, path_similarity: float | None | str = "default",
    decline: str = "default", split: str = "default",
) -> dict:
    from google.adk.runners import Runner

    from adk_oceanbase.procedural import ProceduralSettings, ProcedureStore
    from adk_oceanbase.sessions import OceanBaseSessionService

    env: Environment = build(seed)
    drift = add_drift(env) if condition == "drift" else None
    app = f"proc_{condition}_{policy}"
    extra: dict[str, Any] = {} if decline == "default" else {"decline_p": None if decline == "none" else float(decline)}
    if path_similarity != "default":
        extra["path_similarity"] = path_similarity
    if split != "default":
        extra["split_p"] = None if split == "none" else float(split)
    settings = ProceduralSettings(pool_similarity=pool, **extra)
    store = ProcedureStore(database=db, embedder=embedder, settings=settings) if policy == "ours" else None
    service = OceanBaseSessionService(database=db)
    agent = ScriptedAgent(name="scripted", policy=policy, env=env, store=store, noise=0.2 if condition == "noise" else 0.0,
                          follow=follow, cost=cost)
    runner = Runner(app_name=app, agent=agent, session_service=service)
    order = random.Random(seed + 2)
    schedule = [sc for sc in env.scenarios for _ in range(sessions // len(env.scenarios))]
    order.shuffle(schedule)
    seen: dict[str, int] = {}
    per_session, drift_trace, drift_wordings, task_of = [], [], [], {}
    drift_at = (sessions // len(env.scenarios)) // 2
    t0 = time.perf_counter()
    for k, sc in enumerate(schedule):
        seen[sc.name] = seen.get(sc.name, 0) + 1
        if drift is sc and seen[sc.name] == drift_at + 1:
            for path, p in zip(sc.paths, sc.drift_to):
                path.p = p
        agent.current = sc
        user = f"user{k % 50}"
        s = await service.create_session(app_name=app, user_id=user)
        text = env.request(sc)
        task_of[s.id] = sc.name
        async for _ in runner.run_async(user_id=user, session_id=s.id,
                                        new_message=types.Content(role="user", parts=[types.Part(text=text)])):
            pass
        if store is not None:
            await store.extract_session(await service.get_session(app_name=app, user_id=user, session_id=s.id))
        last = agent.last
        per_session.append((sc.name, seen[sc.name], last["ok"], last["calls"]))
        if drift is sc and seen[sc.name] > drift_at:
            drift_trace.append(tuple(last["recommended"]) == sc.paths[sc.best].tools if last["recommended"] else False)
            drift_wordings.append(next(i for i, w in enumerate(sc.wordings) if _matches(w, text)))
    took = time.perf_counter() - t0
    out = summarize(policy, condition, per_session, drift_trace, took)
    if drift_wordings:
        out["drift_wordings"] = "".join(str(i) for i in drift_wordings)
    if store is not None:
        out.update(await grouping(db, app, task_of, drift.name if drift else None))
    return out


def _matches(wording: str, text: str) -> bool:
    head, _, tail = wording.partition("{n}")
    return text.startswith(head) and text.endswith(tail)


async def grouping(db: Any, app: str, task_of: dict[str, str], drifted: str | None) -> dict:
    """Where the store put each request in the end (after merges): scenarios found, purity, tasks split."""
    from sqlalchemy import text

    async with db.engine.connect() as conn:
        rows = (await conn.execute(text("SELECT session_id, scenario_id FROM procedure_runs WHERE app_name = :a"),
                                   {"a": app})).all()
    groups: dict[str, list[str]] = {}
    homes: dict[str, set[str]] = {}
    for sid, scenario in rows:
        groups.setdefault(scenario, []).append(task_of[sid])
        homes.setdefault(task_of[sid], set()).add(scenario)
    majority = sum(max(v.count(n) for n in set(v)) for v in groups.values())
    out = {"scenarios_found": len(groups), "grouping_purity": majority / max(len(rows), 1),
           "tasks_split": sum(1 for h in homes.values() if len(h) > 1)}
    if drifted:
        out["drift_scenarios"] = len(homes.get(drifted, ()))
    return out


def summarize(policy: str, condition: str, rows: list, drift_trace: list, took: float) -> dict:
    solved = sum(1 for r in rows if r[2])
    calls = sum(r[3] for r in rows)
    after = [r for r in rows if r[1] > WARMUP]
    out = {
        "policy": policy, "condition": condition, "sessions": len(rows), "seconds": round(took, 1),
        "success_rate": solved / len(rows), "calls_per_solved": calls / max(solved, 1),
        "success_after_warmup": sum(1 for r in after if r[2]) / max(len(after), 1), "after_warmup_sessions": len(after),
    }
    if drift_trace:
        # sessions of the drifted scenario until the recommendation is the new best path and stays so
        follow = next((i + 1 for i in range(len(drift_trace)) if all(drift_trace[i:])), None)
        out.update(drift_sessions_after=len(drift_trace), drift_followed_after=follow,
                   drift_trace="".join("1" if x else "0" for x in drift_trace))
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--runs", default="clean,noise,drift")
    parser.add_argument("--policies", default="none,ours,oracle")
    parser.add_argument("--pool-similarity", type=float, default=None, help="ProceduralSettings.pool_similarity")
    parser.add_argument("--path-similarity", default="default",
                        help="ProceduralSettings.path_similarity: a number, 'none' (the join by text alone) or 'default'")
    parser.add_argument("--follow", default=str(FOLLOW), help="the agent's follow bar, or 'draws' (the old rule)")
    parser.add_argument("--cost", type=float, default=COST,
                        help="the agent's cost exponent alpha when exploring (ours only; procedural_replay.py --cost)")
    parser.add_argument("--decline-p", default="default",
                        help="ProceduralSettings.decline_p ('none': the rule before it; default: the setting's default)")
    parser.add_argument("--split-p", default="default",
                        help="ProceduralSettings.split_p ('none': runs stay where filed; default: the setting's default)")
    parser.add_argument("--url", default=None, help="a database URL; default: a throw-away seekdb server")
    parser.add_argument("--hash-embedder", action="store_true", help="HashEmbedder instead of MiniLM (faster, lexical)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if args.seed in TUNE_SEEDS:
        parser.error(f"seed {args.seed} is a tune seed ({TUNE_SEEDS}): report on others")
    follow = None if args.follow == "draws" else float(args.follow)
    path_similarity = args.path_similarity if args.path_similarity == "default" else (
        None if args.path_similarity == "none" else float(args.path_similarity))
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("google_adk").setLevel(logging.ERROR)

    from _common import ensure_database, environment, print_environment, seekdb_or_url, write_json

    from adk_oceanbase import Config
    from adk_oceanbase.engine import Database
    from adk_oceanbase.memory.embedding import HashEmbedder, SentenceTransformerEmbedder

    embedder = HashEmbedder() if args.hash_embedder else SentenceTransformerEmbedder()
    embedder.embed(["warm up"])
    results = []
    with seekdb_or_url(args.url) as server:
        url = args.url
        if server is not None:
            ensure_database("127.0.0.1", server.port, "root", None, "procbench", fresh=True)
            url = f"oceanbase://root@127.0.0.1:{server.port}/procbench"
        env = environment(["google-adk", "sqlalchemy", "pylibseekdb", "sentence-transformers"],
                          {"sessions": args.sessions, "seed": args.seed, "embedder": embedder.model_name})
        print_environment(env)
        db = Database(Config.from_url(url))
        from adk_oceanbase import migrations

        await migrations.upgrade(db)
        try:
            for condition in args.runs.split(","):
                for policy in args.policies.split(","):
                    r = await run_one(db, embedder, policy, condition, args.sessions, args.seed, args.pool_similarity, follow,
                                      args.cost, path_similarity, args.decline_p, args.split_p)
                    r.update(pool_similarity=args.pool_similarity, follow=args.follow, cost=args.cost,
                             path_similarity=args.path_similarity, decline_p=args.decline_p, split_p=args.split_p)
                    results.append(r)
                    print(f"{condition:6} {policy:6} success {r['success_rate']:.3f} after-{WARMUP} "
                          f"{r['success_after_warmup']:.3f} calls/solved {r['calls_per_solved']:.2f}"
                          + (f" drift followed after {r.get('drift_followed_after')} ({r['drift_trace']}, wordings "
                             f"{r.get('drift_wordings')}, {r.get('drift_scenarios')} scenario(s))" if "drift_trace" in r else "")
                          + (f" scenarios {r['scenarios_found']} purity {r['grouping_purity']:.3f} split {r['tasks_split']}"
                             if "scenarios_found" in r else "")
                          + f" ({r['seconds']} s)", flush=True)
        finally:
            await db.close()
    date = env["date_utc"][:10]
    write_json(args.out or HERE / "results" / f"procedural-{date}.json", {"environment": env, "results": results})


if __name__ == "__main__":
    asyncio.run(main())
