"""Weights of the tuned baselines, chosen on the tune split (numpy; every query scored once per setting).

* ``fusion-tuned``: ``w * cosine + (1 - w) * BM25-care / max``; ``w`` with the
  best LoCoMo tune R@10 (categories 1-4).
* ``dense-recency``: ``cosine + w * 0.5^(age / half_life)``; ``(w, half_life)``
  with the best knowledge-update tune R@1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks._baselines import CarefulBM25System, DenseRecencySystem
from benchmarks._metrics import recall_at_k

__all__ = ["FUSION_GRID", "RECENCY_GRID", "best_setting", "tune_dense_recency", "tune_fusion"]

FUSION_GRID = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
RECENCY_GRID = tuple((w, hl) for w in (0.02, 0.05, 0.1, 0.2, 0.3, 0.5) for hl in (30.0, 90.0, 180.0, 365.0))


def best_setting(scores: dict[Any, float]) -> Any:
    """The setting with the highest score; ties go to the earlier setting of the grid."""
    return max(scores, key=lambda k: (scores[k], -list(scores).index(k)))


def _top(scores: np.ndarray, ids: list[str], k: int) -> list[str]:
    return [ids[i] for i in np.argsort(-scores, kind="stable")[:k]]


async def tune_fusion(ds: Any, grid: tuple[float, ...] = FUSION_GRID) -> dict[str, Any]:
    """R@10 of ``fusion-tuned`` per ``w_cos`` on ``ds``'s headline questions; ``best`` is the choice."""
    bm25 = CarefulBM25System()
    for scope, docs in ds.docs.items():
        await bm25.index(scope, docs)
    mats = {scope: np.stack([d.vector for d in docs]) for scope, docs in ds.docs.items()}
    ids = {scope: [d.doc_id for d in docs] for scope, docs in ds.docs.items()}
    totals = {w: 0.0 for w in grid}
    n = 0
    for q in ds.queries:
        if q.group not in ds.headline_groups:
            continue
        cos = mats[q.scope] @ q.vector
        bm = bm25.scores(q.scope, q.question)
        bm = bm / bm.max() if bm.max() > 0 else bm
        for w in grid:
            totals[w] += recall_at_k(_top(w * cos + (1 - w) * bm, ids[q.scope], 10), q.relevant, 10)
        n += 1
    scores = {w: t / max(n, 1) for w, t in totals.items()}
    return {"metric": "LoCoMo tune R@10 (categories 1-4)", "grid": {str(w): s for w, s in scores.items()},
            "best": best_setting(scores)}


async def tune_dense_recency(ds: Any, grid: tuple[tuple[float, float], ...] = RECENCY_GRID) -> dict[str, Any]:
    """R@1 of ``dense-recency`` per ``(w, half_life_days)`` on ``ds``'s headline questions."""
    sys = DenseRecencySystem()
    for scope, docs in ds.docs.items():
        await sys.index(scope, docs)
    totals = {g: 0.0 for g in grid}
    n = 0
    for q in ds.queries:
        if q.group not in ds.headline_groups:
            continue
        cos = sys.scores(q.scope, q.vector)
        for w, hl in grid:
            rec = np.power(0.5, sys._age_days[q.scope] / hl)
            totals[(w, hl)] += recall_at_k(_top(cos + w * rec, sys._ids[q.scope], 1), q.relevant, 1)
        n += 1
    scores = {g: t / max(n, 1) for g, t in totals.items()}
    best = best_setting(scores)
    return {"metric": "knowledge-update tune R@1", "grid": {f"{w}@{hl:.0f}d": s for (w, hl), s in scores.items()},
            "best": {"w_rec": best[0], "half_life_days": best[1]}}
