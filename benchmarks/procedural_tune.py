"""Tunes procedural memory's knobs on the tune split only (issue 27): never on what procedural.py reports.

Two parts, both without a database (the numbers procedural.py reports come
from the real store; these only choose the knobs):

* ``grouping``: MiniLM vectors of ``TUNE_WORDINGS`` (12 tasks that are not
  the reported 20) in the benchmark's schedule, assigned by
  :class:`adk_oceanbase.procedural.scenarios.Grouping` for each
  ``merge_similarity`` (paths drawn uniformly, as early sessions explore):
  scenarios found, purity, tasks split;
* ``policy``: the scripted agent against the pure ranking
  (:func:`adk_oceanbase.procedural.recall.build_recall`) on ``TUNE_SEEDS``,
  for each ``half_life`` and follow bar: expected success after 30 sessions
  per task against the oracle, tool calls per solved task, and in the drift
  run the session the recommendation switched for good.

Usage::

    python benchmarks/procedural_tune.py grouping [--merge none,0.3,0.4,0.45,0.5] [--overlap 0.5]
        [--agreement none,1.0,0.5] [--paths uniform,learning] [--path-join none,0.4]
    python benchmarks/procedural_tune.py policy [--half-life 5,10,15] [--follow 0.4,0.5,0.6,draws]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _procedural_env import TUNE_SEEDS, TUNE_WORDINGS, add_drift, build, choose  # noqa: E402

from adk_oceanbase.procedural import ProceduralSettings  # noqa: E402
from adk_oceanbase.procedural import scenarios as sc  # noqa: E402
from adk_oceanbase.procedural.extraction import path_hash  # noqa: E402
from adk_oceanbase.procedural.recall import build_recall  # noqa: E402

PER_TASK = 50
WARMUP = 30


def schedule(env, seed: int) -> list:
    order = [s for s in env.scenarios for _ in range(PER_TASK)]
    random.Random(seed + 2).shuffle(order)
    return order


def grouping(merges: list[float | None], join: float, overlap: float, agreements: list[float | None], paths: str,
             path_joins: list[float | None] = (None,)) -> None:
    """Scenario grouping of the tune split's requests for each merge threshold and agreement rule.

    Each request is run on a path and succeeds with the path's hidden
    probability.  ``paths="uniform"``: drawn uniformly (early sessions
    explore); ``"learning"``: the task's best path with probability
    ``min(0.9, k / 25)`` at its k-th session, else uniform (roughly what the
    agent does as it learns: few paths tried per fragment, the regime where
    two tasks' small path sets overlap by chance).
    """
    import numpy as np

    from adk_oceanbase.memory.embedding import SentenceTransformerEmbedder, normalize_rows

    runs = {}
    for seed in TUNE_SEEDS:
        env = build(seed, TUNE_WORDINGS)
        order = schedule(env, seed)
        pick = random.Random(seed + 9)
        seen: Counter = Counter()
        rows = []
        for task in order:
            seen[task.name] += 1
            learned = paths == "learning" and pick.random() < min(0.9, seen[task.name] / 25)
            path = task.paths[task.best if learned else pick.randrange(4)]
            rows.append((task, env.request(task), path_hash(list(path.tools)), pick.random() < path.p))
        runs[seed] = rows
    texts = sorted({text for rows in runs.values() for _t, text, _p, _o in rows})
    vectors = dict(zip(texts, normalize_rows(np.asarray(SentenceTransformerEmbedder().embed(texts)))))
    for merge, agreement, path_join in itertools.product(merges, agreements, path_joins):
        found, purity, split = [], [], []
        for seed, rows in runs.items():
            g = sc.Grouping([], join=join, merge=merge, overlap=overlap, agreement=agreement, path_join=path_join)
            where: list[str] = []
            moved: dict[str, str] = {}
            for k, (_task, text, path, ok) in enumerate(rows):
                got, merged = g.assign(vectors[text], f"s{k}", path, ok)
                moved.update(dict(merged))
                where.append(got)

            def final(s: str) -> str:
                while s in moved:
                    s = moved[s]
                return s

            groups: dict[str, list[str]] = defaultdict(list)
            for (task, _text, _path, _ok), s in zip(rows, where):
                groups[final(s)].append(task.name)
            found.append(len(groups))
            purity.append(sum(Counter(v).most_common(1)[0][1] for v in groups.values()) / len(rows))
            homes = defaultdict(set)
            for s, v in groups.items():
                for t in v:
                    homes[t].add(s)
            split.append(sum(1 for h in homes.values() if len(h) > 1))
        print(json.dumps({"paths": paths, "merge_similarity": merge, "merge_overlap": overlap,
                          "merge_agreement": agreement, "path_similarity": path_join, "join": join,
                          "tasks": len(TUNE_WORDINGS),
                          "scenarios_found": found, "purity": [round(p, 3) for p in purity], "tasks_split": split}),
              flush=True)


def policy(half_life: float | None, follow: float | None, condition: str, seed: int) -> dict:
    """One simulated run: expected success (the chosen path's true p) after WARMUP, calls per expected success."""
    env = build(seed, TUNE_WORDINGS)
    drift = add_drift(env) if condition == "drift" else None
    settings = ProceduralSettings(half_life=half_life)
    rng = random.Random(seed + 3)
    runs: dict[str, list[tuple[str, str]]] = defaultdict(list)  # task -> (path hash, outcome), oldest first
    counts: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    tools_of: dict[str, tuple] = {}
    seen: Counter = Counter()
    after, best_after, calls, wins, trace = [], [], 0, 0.0, []
    for task in schedule(env, seed):
        seen[task.name] += 1
        if drift is task and seen[task.name] == PER_TASK // 2 + 1:
            for path, p in zip(task.paths, task.drift_to):
                path.p = p
        stats = [{"path_hash": h, "successes": s, "failures": f, "unknowns": 0, "iterations_sum": s + f,
                  "tool_calls_sum": (s + f) * len(tools_of[h]), "tainted": 0, "last_seen": datetime(2026, 1, 1),
                  "tool_path": json.dumps([{"tool": t, "args": {}} for t in tools_of[h]])}
                 for h, (s, f) in counts[task.name].items()]
        recent = list(reversed(runs[task.name][-settings.recent_window:]))
        recall = build_recall(task.name, 1.0, stats, recent, [], [], settings, 10)
        i, recommended = choose(recall, task, rng, follow)
        path = task.paths[i]
        ok = rng.random() < path.p
        reported = (not ok) if condition == "noise" and rng.random() < 0.2 else ok
        h = path_hash(list(path.tools))
        tools_of[h] = path.tools
        counts[task.name][h][0 if reported else 1] += 1
        runs[task.name].append((h, "success" if reported else "failure"))
        calls += len(path.tools)
        wins += path.p
        if seen[task.name] > WARMUP:
            after.append(path.p)
            best_after.append(task.paths[task.best].p)
        if drift is task and seen[task.name] > PER_TASK // 2:
            trace.append(recommended == task.paths[task.best].tools)
    follow_at = next((k + 1 for k in range(len(trace)) if all(trace[k:])), None)
    return {"gap": sum(best_after) / len(best_after) - sum(after) / len(after), "calls_per_solved": calls / wins,
            "follow": follow_at, "trace": "".join("1" if x else "0" for x in trace)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("part", choices=["grouping", "policy"])
    parser.add_argument("--merge", default="none,0.3,0.4,0.45,0.5,0.6,0.7")
    parser.add_argument("--overlap", type=float, default=ProceduralSettings().merge_overlap)
    parser.add_argument("--agreement", default="none,1.0,0.75,0.5,0.34", help="merge_agreement values ('none': off)")
    parser.add_argument("--paths", default="uniform,learning", help="how the grouping part draws paths")
    parser.add_argument("--path-join", default="none", help="ProceduralSettings.path_similarity values ('none': off)")
    parser.add_argument("--join", type=float, default=ProceduralSettings().similarity)
    parser.add_argument("--half-life", default="none,5,8,10,15,20")
    parser.add_argument("--follow", default="draws,0.4,0.5,0.6")
    parser.add_argument("--conditions", default="clean,noise,drift")
    args = parser.parse_args()

    def floats(text: str, none: str = "none") -> list[float | None]:
        return [None if x in (none, "draws") else float(x) for x in text.split(",")]

    if args.part == "grouping":
        for paths in args.paths.split(","):
            grouping(floats(args.merge), args.join, args.overlap, floats(args.agreement), paths, floats(args.path_join))
        return
    for hl in floats(args.half_life):
        for follow in floats(args.follow):
            row = {"half_life": hl, "follow": follow if follow is not None else "draws"}
            for condition in args.conditions.split(","):
                res = [policy(hl, follow, condition, seed) for seed in TUNE_SEEDS]
                row[condition] = {"gap": round(sum(r["gap"] for r in res) / len(res), 3),
                                  "calls": round(sum(r["calls_per_solved"] for r in res) / len(res), 2)}
                if condition == "drift":
                    row[condition]["follow"] = [r["follow"] for r in res]
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
