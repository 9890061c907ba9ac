"""procedural.py's agent and schedule on the pure grouping and ranking, without a database (issue 27).

``procedural.py`` drives a real ADK ``Runner`` and ``ProcedureStore`` on a
seekdb server: ~3 minutes per 1,000 sessions on a quiet machine, hours on
a loaded one.  This replays the same sessions in memory: the same
environment and random draws (``_procedural_env``, the request, the
agent's ``choose``, the attempt, the noise draw, in that order), MiniLM
vectors, :class:`~adk_oceanbase.procedural.scenarios.Grouping` deciding
joins and merges as the store does under its scope lock, and
:func:`~adk_oceanbase.procedural.recall.build_recall` over the runs of the
scenario recall picks (``vote`` of the nearest runs, else the centroids ``near``;
the newest known outcomes first).  ``--split tune`` runs it on ``TUNE_WORDINGS``
and tune-only seeds (never 7, 11, 13): how ``recall_neighbours`` was chosen.  What it
leaves out is what the database adds: float32 vector sums (a cosine at a
threshold's edge can fall the other way), timestamps, the audit log.  So it
is a diagnosis tool (compare two settings on one seed, same draws); the
numbers procedural.py reports come from procedural.py.

Usage::

    python benchmarks/procedural_replay.py --seed 7 [--runs clean,drift] [--agreement none,0.5] [--recall vote:10,scenarios]
    python benchmarks/procedural_replay.py --split tune --seed 101,102,103 --recall scenarios,vote:5,vote:10   # choosing knobs
    python benchmarks/procedural_replay.py --split tune --seed 101,102,103 --cost 0,0.2   # the agent's cost exponent
    python benchmarks/procedural_replay.py --split tune --seed 101,102,103 --path-join none,0.4   # the join by path
    python benchmarks/procedural_replay.py --split tune --seed 101,102,103 --split-p none,0.01   # splitting wrong joins
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
from collections import Counter, defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _procedural_env import COST, TUNE_SEEDS, TUNE_WORDINGS, WORDINGS, add_drift, build, choose  # noqa: E402

from adk_oceanbase.procedural import ProceduralSettings  # noqa: E402
from adk_oceanbase.procedural import scenarios as sc  # noqa: E402
from adk_oceanbase.procedural import splitting  # noqa: E402
from adk_oceanbase.procedural.extraction import path_hash  # noqa: E402
from adk_oceanbase.procedural.recall import Recall, build_recall  # noqa: E402

WARMUP, FOLLOW = 30, 0.5  # as procedural.py
REPORTED_SEEDS = (7, 11, 13)  # the test seeds benchmarks/README.md reports: the tune split never runs on them
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def replay(embed, condition: str, seed: int, settings: ProceduralSettings, sessions: int = 1000, wordings=None,
           cost: float = COST) -> dict:
    import numpy as np

    env = build(seed, wordings)
    # the `none` (uniform) and `oracle` policies' expected calls per solved task on this environment (clean
    # probabilities): the replay runs `ours` only, and the call-count goal is a ratio to `none`
    none_calls = sum(sum(len(p.tools) for p in t.paths) / len(t.paths) for t in env.scenarios) / sum(
        sum(p.p for p in t.paths) / len(t.paths) for t in env.scenarios)
    oracle_calls = sum(len(t.paths[t.best].tools) for t in env.scenarios) / sum(t.paths[t.best].p for t in env.scenarios)
    drift = add_drift(env) if condition == "drift" else None
    app = f"proc_{condition}_ours"
    noise = 0.2 if condition == "noise" else 0.0
    order = random.Random(seed + 2)
    schedule = [s for s in env.scenarios for _ in range(sessions // len(env.scenarios))]
    order.shuffle(schedule)
    g = sc.Grouping([], join=settings.similarity, merge=settings.merge_similarity, overlap=settings.merge_overlap,
                    agreement=settings.merge_agreement, path_join=settings.path_similarity, split_p=settings.split_p,
                    split_min=settings.split_min_runs)
    splits: list[dict] = []
    runs: list[dict] = []  # oldest first: scenario, path, outcome, tools, task
    vecs = np.zeros((sessions, 384), dtype=np.float32)
    seen: Counter = Counter()
    rows, trace, wordings = [], [], []
    drift_at = (sessions // len(env.scenarios)) // 2
    pool = settings.similarity if settings.pool_similarity is None else settings.pool_similarity
    for k, task in enumerate(schedule):
        seen[task.name] += 1
        if drift is task and seen[task.name] == drift_at + 1:
            for path, p in zip(task.paths, task.drift_to):
                path.p = p
        text = env.request(task)
        vec = embed(text)
        recall = _recall(_targets(vec, g, runs, vecs, settings, pool), runs, settings)
        index, recommended = choose(recall, task, env.rng, FOLLOW, cost)
        path = task.paths[index]
        ok, _failed_at = env.attempt(path)
        reported = (not ok) if env.rng.random() < noise else ok
        ph = path_hash(list(path.tools))
        scenario, merges = g.assign(vec, sc.new_id(app, "", sc.request_hash(text)), ph, reported)
        for src, dst in merges:
            for r in runs:
                if r["scenario"] == src:
                    r["scenario"] = dst
        vecs[len(runs)] = vec
        runs.append({"scenario": scenario, "path": ph, "ok": reported, "tools": path.tools, "task": task.name, "k": k,
                     "hash": sc.request_hash(text)})
        if settings.split_p is not None:
            _split(g, runs, vecs, scenario, settings, app, splits)
        rows.append((task.name, seen[task.name], ok, len(path.tools), path.p, task.paths[task.best].p))
        if drift is task and seen[task.name] > drift_at:
            trace.append(tuple(recommended) == task.paths[task.best].tools if recommended else False)
            wordings.append(next(i for i, w in enumerate(task.wordings) if _matches(w, text)))
    solved = sum(1 for r in rows if r[2])
    after = [r for r in rows if r[1] > WARMUP]
    out = {"condition": condition, "seed": seed, "merge_agreement": settings.merge_agreement,
           "success_rate": solved / len(rows), "success_after_warmup": sum(1 for r in after if r[2]) / len(after),
           "calls_per_solved": sum(r[3] for r in rows) / max(solved, 1),
           # the chosen paths' hidden probabilities: the same comparison with the outcome draws' noise taken out
           "expected_after_warmup": sum(r[4] for r in after) / len(after),
           "oracle_expected_after_warmup": sum(r[5] for r in after) / len(after),
           "none_expected_calls_per_solved": none_calls, "oracle_expected_calls_per_solved": oracle_calls}
    groups: dict[str, list[str]] = defaultdict(list)
    homes: dict[str, set] = defaultdict(set)
    for r in runs:
        groups[r["scenario"]].append(r["task"])
        homes[r["task"]].add(r["scenario"])
    if settings.split_p is not None:
        out.update(splits=len(splits), splits_pure=sum(1 for x in splits if x["pure_before"]),
                   splits_clean=sum(1 for x in splits if x["moved_one_task"] and not x["moved_host"]),
                   split_log=splits)
    out.update(scenarios_found=len(groups), tasks_split=sum(1 for h in homes.values() if len(h) > 1),
               grouping_purity=sum(Counter(v).most_common(1)[0][1] for v in groups.values()) / len(runs))
    if trace:
        out.update(drift_followed_after=next((i + 1 for i in range(len(trace)) if all(trace[i:])), None),
                   drift_trace="".join("1" if x else "0" for x in trace), drift_wordings="".join(map(str, wordings)),
                   drift_scenarios=len(homes[drift.name]))
    return out


def _split(g: sc.Grouping, runs: list[dict], vecs, scenario: str, settings: ProceduralSettings, app: str,
           log: list) -> None:
    """``ProcedureStore._split`` on the runs in memory: the scenario's newest ``split_window`` runs (oldest
    first), :func:`~adk_oceanbase.procedural.splitting.split_of`, then ``Grouping.split_to`` / ``move``."""
    members = [i for i in range(len(runs)) if runs[i]["scenario"] == scenario][-settings.split_window:]
    if g.known[scenario].label or len(members) < 2 * settings.split_min_runs:
        return
    found = splitting.split_of(vecs[members], [runs[i]["path"] for i in members], [runs[i]["ok"] for i in members],
                               link=settings.split_link, p=settings.split_p, min_count=settings.split_min_runs,
                               overlap=settings.merge_overlap)
    if found is None:
        return
    moved = [members[i] for i in found.rows]
    total = vecs[moved].sum(axis=0)
    table: dict[str, list[int]] = {}
    for i in moved:
        table.setdefault(runs[i]["path"], [0, 0])[0 if runs[i]["ok"] else 1] += 1
    before = Counter(runs[i]["task"] for i in range(len(runs)) if runs[i]["scenario"] == scenario)
    moved_tasks = Counter(runs[i]["task"] for i in moved)
    dst = g.split_to(scenario, total, table, found.path, sc.split_id(app, "", runs[moved[0]]["hash"]))
    new = dst not in g.known
    for i in moved:
        runs[i]["scenario"] = dst
    g.move(scenario, dst, total, len(moved), table, {r["path"] for r in runs if r["scenario"] == scenario})
    host = before.most_common(1)[0][0]
    log.append({"at": len(runs), "covered": found.covered, "moved": len(moved), "of": sum(before.values()), "new": new,
                "pure_before": len(before) == 1, "moved_one_task": len(moved_tasks) == 1,
                "moved_host": host in moved_tasks, "tasks_before": dict(before), "moved_tasks": dict(moved_tasks)})


def _targets(vec, g: sc.Grouping, runs: list[dict], vecs, settings: ProceduralSettings, pool: float) -> list:
    """``ProcedureStore._targets`` on the runs in memory: the vote of the runs nearest the request (the
    newest ``neighbour_window``, newest first as the store reads them), else the centroids near it."""
    if settings.recall_neighbours is not None and runs:
        newest = list(range(len(runs) - 1, max(len(runs) - settings.neighbour_window, 0) - 1, -1))
        winner, cosine = sc.vote(vec, [runs[i]["scenario"] for i in newest], vecs[newest], settings.recall_neighbours, pool)
        if winner is not None:
            return [(winner, cosine)]
    return sc.near(vec, list(g.known.values()), pool)


def _recall(targets, runs: list[dict], settings: ProceduralSettings) -> Recall:
    """What ``ProcedureStore.recall_procedures`` reads for the pooled scenarios, built from the runs in memory."""
    if not targets:
        return Recall(None, 0.0, [], [])
    ids = {t[0] for t in targets}
    mine = [r for r in runs if r["scenario"] in ids]
    stats: dict[tuple, dict] = {}
    for r in mine:
        row = stats.setdefault((r["scenario"], r["path"]), {
            "path_hash": r["path"], "successes": 0, "failures": 0, "unknowns": 0, "iterations_sum": 0,
            "tool_calls_sum": 0, "tainted": 0, "last_seen": T0,
            "tool_path": json.dumps([{"tool": t, "args": {"q": "string"}} for t in r["tools"]])})
        row["successes" if r["ok"] else "failures"] += 1
        row["iterations_sum"] += len(r["tools"])
        row["tool_calls_sum"] += len(r["tools"])
        row["last_seen"] = max(row["last_seen"], T0 + timedelta(seconds=r["k"]))
    recent = [(r["path"], "success" if r["ok"] else "failure") for r in reversed(mine)][: settings.recent_window]
    return build_recall(targets[0][0], targets[0][1], list(stats.values()), recent, [], [], settings, 10)


def _matches(wording: str, text: str) -> bool:
    head, _, tail = wording.partition("{n}")
    return text.startswith(head) and text.endswith(tail)


def main() -> None:
    import numpy as np

    from adk_oceanbase.memory.embedding import SentenceTransformerEmbedder, normalize_rows

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", default="7", help="seeds, comma-separated")
    parser.add_argument("--runs", default="clean,drift")
    parser.add_argument("--agreement", default="0.5", help="ProceduralSettings.merge_agreement values")
    parser.add_argument("--recall", default="vote:10",
                        help="ProceduralSettings.recall_neighbours as vote:K, or 'scenarios' (None), comma-separated")
    parser.add_argument("--split", choices=["test", "tune"], default="test",
                        help="tune: TUNE_WORDINGS on TUNE_SEEDS (choosing knobs); test: WORDINGS on other seeds")
    parser.add_argument("--path-join", default=str(ProceduralSettings().path_similarity),
                        help="ProceduralSettings.path_similarity values (none: the request text alone joins), comma-separated")
    parser.add_argument("--cost", default=str(COST), help="the agent's cost exponent alpha (choose), comma-separated")
    parser.add_argument("--decline", default="default",
                        help="ProceduralSettings.decline_p values ('none': off; 'default': the setting's default), comma-separated")
    parser.add_argument("--split-p", default="default",
                        help="ProceduralSettings.split_p values ('none': runs stay where filed; 'default': the setting's "
                             "default), comma-separated")
    parser.add_argument("--sessions", type=int, default=None, help="default: 50 per task (1,000; tune split 600)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    seeds = [int(x) for x in args.seed.split(",")]
    for seed in seeds:
        if args.split == "test" and seed in TUNE_SEEDS:
            parser.error(f"seed {seed} is a tune seed ({TUNE_SEEDS}): report on others")
        if args.split == "tune" and seed in REPORTED_SEEDS:
            parser.error(f"seed {seed} is a reported seed ({REPORTED_SEEDS}): never tune on it")
    wordings = TUNE_WORDINGS if args.split == "tune" else None
    model = SentenceTransformerEmbedder()
    cache: dict[str, np.ndarray] = {}

    def embed(text: str) -> np.ndarray:
        if text not in cache:
            cache[text] = normalize_rows(np.asarray(model.embed([text])))[0]
        return cache[text]

    results = []
    grid = itertools.product(args.runs.split(","), args.agreement.split(","), args.recall.split(","),
                             [float(c) for c in args.cost.split(",")], args.path_join.split(","), args.decline.split(","),
                             args.split_p.split(","), seeds)
    for condition, a, mode, cost, pj, decline, sp, seed in grid:
        extra = {} if decline == "default" else {"decline_p": None if decline == "none" else float(decline)}
        if sp != "default":
            extra["split_p"] = None if sp == "none" else float(sp)
        settings = ProceduralSettings(merge_agreement=None if a == "none" else float(a),
                                      recall_neighbours=None if mode == "scenarios" else int(mode.split(":")[1]),
                                      path_similarity=None if pj == "none" else float(pj), **extra)
        r = replay(embed, condition, seed, settings, wordings=wordings,
                   sessions=args.sessions or 50 * len(wordings or WORDINGS), cost=cost)
        r.update(recall=mode, cost=cost, path_similarity=settings.path_similarity, decline_p=settings.decline_p,
                 split_p=settings.split_p)
        results.append(r)
        print(json.dumps(r), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"results": results}, indent=1))


if __name__ == "__main__":
    main()
