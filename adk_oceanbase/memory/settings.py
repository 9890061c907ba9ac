"""Frozen settings of the memory service: score weights, retrieval knobs, ingest policy, vectorizer.

Defaults are starting points, not tuned values: the issue's LoCoMo
measurements (turns as memories, categories 1-4) gave R@10 0.451 for dense
MiniLM, 0.565 for BM25 and 0.616 for 0.7*cosine + 0.3*BM25, so semantic and
full-text carry most of the weight; recency, frequency and importance are
tie-breakers until ``benchmarks/retrieval.py`` says otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["MemorySettings", "ScoreWeights"]


@dataclass(frozen=True)
class ScoreWeights:
    """Weights of the five signals in ``score = Σ w_i * signal_i`` (each signal is in [0, 1], semantic in [-1, 1])."""

    semantic: float = 0.7
    """Cosine similarity ``1 - cosine_distance`` between query and memory embedding."""

    fulltext: float = 0.3
    """Full-text relevance (``MATCH ... AGAINST``) divided by the best full-text score among the candidates."""

    recency: float = 0.1
    """``exp(-ln2 * age / half_life)``: 1 for a memory from now, 0.5 at one half-life."""

    frequency: float = 0.05
    """``min(1, ln(1 + access_count) / ln(1 + frequency_norm_count))``: how often search returned it."""

    importance: float = 0.05
    """The stored ``importance_score`` (0.5 unless an LLM extractor or the caller set one)."""


@dataclass(frozen=True)
class MemorySettings:
    """Everything that shapes ingest and retrieval; pass ``settings=`` to the service.

    Example:
        >>> s = MemorySettings(top_k=5, weights=ScoreWeights(recency=0.3))
        >>> s.weights.semantic
        0.7
    """

    # ------------------------------------------------------------ retrieval
    weights: ScoreWeights = field(default_factory=ScoreWeights)
    """Signal weights used when a search passes none."""

    recency_half_life_s: float = 30 * 86400.0
    """Age (seconds, from the memory's ``created_at``) at which the recency signal is 0.5."""

    recency_reference: Literal["newest", "now"] = "newest"
    """What age is measured from: ``newest`` = the newest candidate of this search (capped at ``now``),
    which gets 1.0; ``now`` = the search's clock (absolute age)."""

    frequency_norm_count: int = 100
    """Access count at which the frequency signal saturates at 1."""

    top_k: int = 10
    """Memories returned by ``search_memory`` (and by ``search`` without ``top_k``)."""

    min_score: float | None = None
    """Memories scoring below this are dropped; ``None`` keeps everything in the top k."""

    candidate_pool: int = 100
    """Candidates taken from each of the ANN and full-text lists before the final scoring."""

    vector_search: Literal["ann", "exact"] = "ann"
    """``ann`` uses the HNSW index (``APPROXIMATE``); ``exact`` scans the user's rows (fine below ~10k)."""

    ef_search: int | None = None
    """``ob_hnsw_ef_search`` for the search connection; ``None`` keeps the server default (64)."""

    scoring: Literal["auto", "sql", "numpy"] = "auto"
    """Where the score is computed: ``sql`` (OceanBase/seekdb), ``numpy`` (MySQL), ``auto`` picks by engine."""

    numpy_scan_limit: int = 50_000
    """Numpy path: newest rows of the user fetched for scoring (the SQL prefilter's bound)."""

    bump_access: bool = True
    """After a search, add 1 to ``access_count`` and set ``last_accessed_at`` of returned rows (one UPDATE)."""

    include_superseded: bool = False
    """Return memories an LLM extractor marked as superseded by a newer fact."""

    # --------------------------------------------------------------- ingest
    memory_authors: tuple[str, ...] | None = None
    """Authors whose turns become memories; ``None`` means everyone (user and agents)."""

    min_turn_chars: int = 8
    """Turns shorter than this (CJK characters count 3) are not remembered."""

    near_duplicate_similarity: float = 0.9
    """Cosine similarity at or above which a new fact is merged into an older one."""

    consolidate: bool = True
    """Merge near-duplicate *facts* (LLM-extracted or ``add_memory``) when rows get their vectors.

    Dialogue turns (``turn:*`` rows) are records, not facts: they are never
    near-duplicate merged (on LoCoMo that merged ~5% of turns, lost recall and
    cost one vector query per row at ingest).  Exact duplicates are always merged.
    """

    # ----------------------------------------------------------- vectorizer
    queue_size: int = 1024
    """Memory ids waiting for embedding in process; beyond it rows stay ``pending`` and a sweep finds them."""

    batch_size: int = 32
    """Texts per embedding call."""

    batch_wait_s: float = 0.02
    """How long the worker waits to fill a batch after the first id arrives."""

    max_attempts: int = 4
    """Embedding attempts per batch before its rows are marked ``failed`` (swept again later)."""

    retry_base_s: float = 0.2
    """First retry delay; doubles per attempt."""

    sweep_interval_s: float = 60.0
    """How often the worker looks for ``pending``/``failed`` rows no queue entry covers."""

    @property
    def frequency_norm(self) -> float:
        """``ln(1 + frequency_norm_count)``, the divisor of the frequency signal."""
        return math.log1p(max(self.frequency_norm_count, 1))
