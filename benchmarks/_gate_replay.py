"""``--gate-replay``: the relevance gate's settings on the tune split, re-ranked in numpy from captured candidates.

Why: a ``--tune-grid`` setting re-runs ~1,600 searches on seekdb (50-130 s
each on the shared 2 vCPUs); the gate only changes which already-scored
candidates may be returned.  This loads the tune split once (as
``--tune-grid`` does), runs each question once through the service on the
numpy path (``scoring="numpy"``: the SQL prefilter, which is the same ``ft``
CTE as the one-statement search, then ``scoring.rank_rows``), keeps the
prefiltered rows, and re-ranks them under every grid setting with
``rank_rows`` itself.  The numpy path is the SQL path's mirror (the parity
tests in ``tests/test_memory_relevance_gate.py`` / ``test_memory_ranking.py``);
the chosen setting is confirmed on seekdb by ``--tune-grid`` / ``--split``.

With ``--longmemeval`` the LongMemEval tune half is captured and replayed too
(``_lme_replay.py``) and the setting is chosen by ``_tune.choose_ranking``
(ranking settings: weights, ``context_mode``, window) instead of the gate rule.

Also writes per-question features (best raw cosine, best ``ft_cov``, best
cosine minus the candidates' mean) so the floors can be read off their
distributions, answerable against unanswerable.
"""

from __future__ import annotations

import argparse
import dataclasses
import pickle
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._capture import captured_search, numpy_path, rank_captured, spying
from benchmarks._common import environment, seekdb_or_url
from benchmarks._metrics import aggregate
from benchmarks._ours import OursSystem, load_locomo_and_ku, settings_from_overrides
from benchmarks._split_data import query_rows
from benchmarks._tune import DEFAULT_GRID, _summary, choose, load_tune_split

__all__ = ["capture", "replay", "run_gate_replay"]

_rank = rank_captured  # the name tests/test_benchmark_split_units.py imports


async def capture(args: argparse.Namespace) -> dict[str, Any]:
    """Loads the tune split and records, per question, the numpy path's rows and ranking arguments."""
    embedder, (loco, _), (ku, _) = load_tune_split(args)
    out: dict[str, Any] = {"datasets": {}}
    with seekdb_or_url(args.url, memory_budget="2G") as server:
        url = server.url("bench_gate_replay", scheme="oceanbase") if server else args.url
        ours = OursSystem(url, embedder)
        try:
            await load_locomo_and_ku(ours, loco, ku)
            numpy_path(ours)
            with spying() as seen:
                for ds in (loco, ku):
                    qs = []
                    for q in ds.queries:
                        rows, kw = await captured_search(ours, seen, q.scope, q.question, q.vector, args.top_k)
                        qs.append({"group": q.group, "relevant": q.relevant, "rows": rows, "kw": kw})
                    out["datasets"][ds.name] = {"headline": ds.headline_groups, "queries": qs}
        finally:
            await ours.close()
    return out


def replay(captured: dict[str, Any], settings: Any, top_k: int) -> dict[str, Any]:
    """``_tune`` summary of one setting over the captured questions."""
    res = {}
    for name, ds in captured["datasets"].items():
        rows = []
        for q in ds["queries"]:
            rows.extend(query_rows(q["group"], q["relevant"], rank_captured(q, settings, top_k)[:top_k], ds["headline"]))
        res[name] = aggregate(rows)
    loco = next(v for k, v in res.items() if k.startswith("locomo"))
    ku = next(v for k, v in res.items() if k.startswith("knowledge"))
    return {"locomo": loco, "ku": ku, **_summary(loco, ku)}


def features(captured: dict[str, Any]) -> list[dict[str, Any]]:
    """Per question: best raw cosine, best ft_cov, best cosine minus the semantic candidates' mean."""
    out = []
    for name, ds in captured["datasets"].items():
        for q in ds["queries"]:
            kw = q["kw"]
            qv = kw.get("query_vector")
            sims = []
            if qv is not None:
                qn = np.asarray(qv, dtype=np.float64)
                qn = qn / (np.linalg.norm(qn) or 1.0)
                for r in q["rows"]:
                    v = r["embedding"]
                    if v is not None:
                        v = np.asarray(v, dtype=np.float64)
                        sims.append(float(v @ qn / (np.linalg.norm(v) or 1.0)))
            pool = sorted(sims, reverse=True)[:200]
            covs = [float(r["ft_cov"] or 0) for r in q["rows"]]
            out.append({"dataset": name, "group": q["group"], "answerable": bool(q["relevant"]),
                        "max_sim": pool[0] if pool else 0.0, "mean_sim": float(np.mean(pool)) if pool else 0.0,
                        "max_cov": max(covs, default=0.0)})
    return out


async def _cached(path: str | None, make: Any) -> dict[str, Any]:
    """The pickle at ``path`` if it exists, else ``await make()`` (written there when a path is given)."""
    cache = Path(path) if path else None
    if cache is not None and cache.exists():
        return pickle.loads(cache.read_bytes())
    captured = await make()
    if cache is not None:
        cache.write_bytes(pickle.dumps(captured))
    return captured


async def run_gate_replay(args: argparse.Namespace) -> dict[str, Any]:
    """Every grid setting re-ranked over the captured tune split; with ``--longmemeval`` also over
    LongMemEval's tune half (``_lme_replay``), and the setting is then chosen by ``choose_ranking``."""
    from adk_oceanbase.memory import MemorySettings
    from benchmarks._lme_replay import LME_METRICS, capture_lme, replay_lme
    from benchmarks._tune import choose_ranking
    from benchmarks._dataset import parse_overrides

    captured = await _cached(args.replay_cache, lambda: capture(args))
    lme = await _cached(args.lme_replay_cache, lambda: capture_lme(args)) if args.longmemeval else None
    base = dataclasses.replace(MemorySettings(), scoring="numpy")
    grid = args.gate_replay.split(";") if args.gate_replay != "default" else DEFAULT_GRID
    result: dict[str, Any] = {"environment": environment(("adk-oceanbase", "pylibseekdb", "sentence-transformers")),
                              "split": "tune", "mode": "numpy replay of captured candidates", "runs": [],
                              "features": features(captured)}
    if lme is not None:
        result["longmemeval"] = {"file": lme["file"], "per_type": lme["per_type"], "tune_questions": lme["questions"]}
    for spec in grid:
        t0 = time.perf_counter()
        settings = settings_from_overrides(base, parse_overrides(spec))
        run = {"setting": spec or "defaults", **replay(captured, settings, args.top_k)}
        line = ""
        if lme is not None:
            run["lme"] = replay_lme(lme, settings, args.top_k)
            run["lme_turn_ndcg10"] = run["lme"]["overall"]["turn_nDCG@10"]
            line = "  LME " + " ".join(f"{m} {run['lme']['overall'][m]:.3f}" for m in LME_METRICS)
        run["seconds"] = time.perf_counter() - t0
        result["runs"].append(run)
        print(f"{run['setting']}: LoCoMo R@10 {run['locomo_r10']:.3f}  KU R@1 {run['ku_r1']:.3f}  "
              f"abstain clean {run['abstain_clean']:.3f}  cat5 clean {run['cat5_clean']:.3f}  "
              f"returned {run['locomo_returned']:.1f}{line}  ({run['seconds']:.0f} s)", flush=True)
    best = choose_ranking(result["runs"]) if lme is not None else choose(result["runs"])
    result["chosen"] = {"setting": best["setting"], "rule": "choose_ranking" if lme is not None else "choose"}
    print(f"\nchosen (rule in benchmarks/_tune.py): {best['setting']}")
    return result
