"""Ranking metrics and latency summaries: pure functions, unit tested on hand-made inputs.

Definitions (relevant set ``R``, ranked list ``L`` of ids, duplicates ignored):

* recall@k = |R ∩ L[:k]| / |R|  (fraction of the evidence found; multi-hop
  questions have several evidence turns, so 1.0 needs all of them).
* nDCG@10 with binary gains: DCG = sum 1/log2(rank+1) over relevant hits in
  the top 10, divided by the ideal DCG for min(|R|, 10) hits.
* MRR = 1 / rank of the first relevant id (0 when none is returned at all;
  not cut at 10, though systems return at most ``top_k``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Iterable, Sequence

__all__ = [
    "KS",
    "abstention_metrics",
    "aggregate",
    "dedupe",
    "mrr",
    "ndcg_at_k",
    "percentile",
    "query_metrics",
    "recall_at_k",
    "summarise_latencies",
]

KS = (1, 5, 10)


def dedupe(ranked: Iterable[str]) -> list[str]:
    """Keeps the first occurrence of each id, in order."""
    seen: set[str] = set()
    out: list[str] = []
    for r in ranked:
        if r not in seen:
            seen.add(r)
            out.append(r)
    return out


def recall_at_k(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    rel = set(relevant)
    if not rel:
        raise ValueError("recall is undefined for an empty relevant set")
    return len(rel.intersection(dedupe(ranked)[:k])) / len(rel)


def ndcg_at_k(ranked: Sequence[str], relevant: Iterable[str], k: int = 10) -> float:
    rel = set(relevant)
    if not rel:
        raise ValueError("nDCG is undefined for an empty relevant set")
    dcg = sum(1.0 / math.log2(i + 2) for i, r in enumerate(dedupe(ranked)[:k]) if r in rel)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(rel), k)))
    return dcg / ideal


def mrr(ranked: Sequence[str], relevant: Iterable[str]) -> float:
    rel = set(relevant)
    for i, r in enumerate(dedupe(ranked)):
        if r in rel:
            return 1.0 / (i + 1)
    return 0.0


def query_metrics(ranked: Sequence[str], relevant: Iterable[str]) -> dict[str, float]:
    """All metrics for one query."""
    rel = list(relevant)
    out = {f"R@{k}": recall_at_k(ranked, rel, k) for k in KS}
    out["nDCG@10"] = ndcg_at_k(ranked, rel, 10)
    out["MRR"] = mrr(ranked, rel)
    return out


def abstention_metrics(ranked: Sequence[str], relevant: Iterable[str]) -> dict[str, float]:
    """What a search handed over besides the relevant memories (the relevance gate's measure).

    * ``clean``: 1 when nothing irrelevant was returned (returning nothing is
      clean; with an empty relevant set only returning nothing is);
    * ``empty``: 1 when nothing was returned;
    * ``returned``: how many distinct ids were returned;
    * ``precision``: relevant share of what was returned (1 when nothing was).
    """
    rel = set(relevant)
    got = dedupe(ranked)
    hits = sum(r in rel for r in got)
    return {
        "clean": float(hits == len(got)),
        "empty": float(not got),
        "returned": float(len(got)),
        "precision": hits / len(got) if got else 1.0,
    }


def aggregate(rows: Sequence[tuple[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Means per group label; each row is ``(group, query_metrics)``. Adds ``n`` per group."""
    sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    counts: dict[str, int] = defaultdict(int)
    for group, metrics in rows:
        counts[group] += 1
        for name, value in metrics.items():
            sums[group][name] += value
    out: dict[str, dict[str, float]] = {}
    for group, totals in sums.items():
        out[group] = {name: total / counts[group] for name, total in totals.items()}
        out[group]["n"] = counts[group]
    return out


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default method), ``q`` in [0, 100]."""
    if not values:
        return float("nan")
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summarise_latencies(seconds: Sequence[float]) -> dict[str, float]:
    """p50/p95/mean in milliseconds plus the sample count."""
    ms = [s * 1000.0 for s in seconds]
    return {
        "p50_ms": percentile(ms, 50),
        "p95_ms": percentile(ms, 95),
        "mean_ms": (sum(ms) / len(ms)) if ms else float("nan"),
        "n": len(ms),
    }
