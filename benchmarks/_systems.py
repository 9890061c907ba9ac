"""The systems the retrieval benchmark compares, by ``--systems`` name, and ours' named variants.

Shared by ``retrieval.py`` and ``_longmemeval.py`` (which runs the same systems on LongMemEval), so it
sits below both.
"""

from __future__ import annotations

import argparse
from typing import Any

from benchmarks._baselines import (
    ADKInMemorySystem, BM25System, CarefulBM25System, DenseRecencySystem, DenseSystem, FusionSystem,
)
from benchmarks._dataset import parse_overrides
from benchmarks._embed_cache import CachedEmbedder

PACKAGES = ("adk-oceanbase", "google-adk", "sentence-transformers", "torch", "numpy", "rank-bm25",
            "pylibseekdb", "SQLAlchemy", "aiomysql")
ALL_SYSTEMS = ("adk-inmemory", "dense", "bm25", "fusion", "bm25-care", "fusion-tuned", "dense-recency", "ours",
               "ours-gate", "ours-abstain")
GATE_VARIANT = {"gsim": 0.76, "glex": 0.15, "gfill": 1.0}
"""``ours-gate``: the relevance gate (opt-in, ``MemorySettings.relevance_min_similarity``) at the setting chosen on
the tune split (``--gate-replay default``): the most clean abstentions at no loss of LoCoMo R@10 / knowledge-update R@1."""
ABSTAIN_VARIANT = {"gsim": 0.76, "glex": 0.25, "gfill": 1.0}
"""``ours-abstain``: a stricter lexical floor than the default, an opt-in trade-off read off the tune split's
frontier (``--gate-replay``): 64% clean abstentions for -0.010 LoCoMo R@10 and -0.08 knowledge-update R@1."""
PREVIOUS_DEFAULTS = {"clend": 0}
"""``ours-previous``: ours with the ranking defaults before the latest change (a long neighbour lent its
whole relevance, ``MemorySettings.context_long_lends_less``), for before/after in one run.  Up to
``retrieval-longmemeval-2026-11-24-n24b.json``: ``author=0.2``.  Up to ``retrieval-longmemeval-2026-11-23-n16d.json``:
``author=0`` (no author signal); up to ``...-n16b.json``: ``cchars=-1`` (every turn borrowed its whole context
signal); up to ``...-n16.json``: ``semantic=0.5, fulltext=0.5, context=0.7, cgap=0``."""


def build_system(name: str, args: argparse.Namespace, embedder: CachedEmbedder, server_url: str | None,
                 tuned: dict[str, Any] | None = None):
    tuned = tuned or {}
    if name == "bm25-care":
        return CarefulBM25System()
    if name == "fusion-tuned":
        w = float(tuned.get("fusion", {}).get("best", 0.7))
        return FusionSystem(w, 1.0 - w, careful=True, name="fusion-tuned")
    if name == "dense-recency":
        best = tuned.get("dense_recency", {}).get("best", {"w_rec": 0.1, "half_life_days": 90.0})
        return DenseRecencySystem(best["w_rec"], best["half_life_days"])
    if name == "adk-inmemory":
        return ADKInMemorySystem()
    if name == "dense":
        return DenseSystem()
    if name == "bm25":
        return BM25System()
    if name == "fusion":
        return FusionSystem()
    if name == "ours":
        from benchmarks._ours import OursSystem

        return OursSystem(server_url, embedder, overrides=parse_overrides(args.ours))
    if name == "ours-gate":
        from benchmarks._ours import OursSystem

        return OursSystem(server_url, embedder, overrides={**parse_overrides(args.ours), **GATE_VARIANT})
    if name == "ours-abstain":
        from benchmarks._ours import OursSystem

        return OursSystem(server_url, embedder, overrides={**parse_overrides(args.ours), **ABSTAIN_VARIANT})
    if name == "ours-previous":
        from benchmarks._ours import OursSystem

        return OursSystem(server_url, embedder, overrides={**parse_overrides(args.ours), **PREVIOUS_DEFAULTS})
    raise SystemExit(f"unknown system {name!r}; choose from {', '.join(ALL_SYSTEMS)}, ours-previous")
