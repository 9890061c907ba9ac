"""The relevance gate: which candidates may be returned at all, and which get the non-relevance boosts.

Why: the score adds recency, frequency and importance as near-constants
(0.2 * ~1 + 0.3 * freq + 0.05 * 0.5), so on LoCoMo an unrelated turn scored
~0.78 against ~0.96 for the real match, and ``search_memory`` (ADK's
``preload_memory`` / ``load_memory``) always handed the model ``top_k``
memories, relevant or not.  The gate has two parts (``MemorySettings``):

* **Eligibility** (``relevance_min_similarity``, ``relevance_min_lexical``):
  a candidate may be returned only if its raw cosine similarity to the query
  or its lexical evidence reaches a floor.  Both are absolute, so they mean
  the same for every query (unlike ``fts / max(fts)``, which is 1 for the
  best match of any query, however weak).  With
  ``relevance_gate_neighbours`` a session neighbour (``context_window``) of
  an eligible memory is eligible too: the context signal's premise is that
  the answer is often the turn next to the match.  With
  ``relevance_fill_margin`` a memory whose relevance is within that margin of
  the best memory with evidence of its own is eligible too: the floors then
  decide whether the query has an answer at all (nothing passes them: nothing
  is returned), the margin how much else comes with it.  The gate decides
  what may be returned, not how it ranks: the context and version signals
  are computed as with the gate off, so with a wide fill margin a query that
  has an answer gets the ungated ranking (LoCoMo tune R@10 at similarity
  0.76 / lexical 0.15 / fill 1.0: 0.733 when they borrowed only from eligible
  memories, 0.746 now, as with the gate off).
* **Margin** (``relevance_margin``): recency, frequency and importance count
  only for candidates whose relevance (semantic + full-text + context +
  version, weighted) is within the margin of the best eligible candidate's;
  they pick among near-equally relevant memories (versions of a fact,
  parallel facts) and cannot lift a weak match over a strong one.

**Lexical evidence** is the per-user BM25 coverage ``ft_cov``
(``postings.bm25_ctes``): the share of the query's IDF mass (its stemmed
full-text terms, stopwords and the user's author names removed, unseen terms
at the highest IDF) that the memory's words match, in [0, 1].  Weighted, so a
rare name counts for more than a word half the memories contain, and a query
about someone the user never mentioned ("where does Victor live?") leaves
every memory low however many common words it shares.  Both paths read it
from the same ``ft`` CTE (memories outside the full-text candidates have 0).

The SQL builders return fragments used by ``search_sql.hybrid_search``; the
numpy functions are used by ``scoring.rank_rows``.  No I/O.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .settings import MemorySettings

__all__ = [
    "boost_mask",
    "eligible_sql",
    "fill_mask",
    "fill_sql",
    "gate_enabled",
    "margin_sql",
    "relevant_mask",
]

def gate_enabled(settings: MemorySettings) -> bool:
    """Whether eligibility is checked at all (either floor set)."""
    return settings.relevance_min_similarity is not None or settings.relevance_min_lexical is not None


def eligible_sql(settings: MemorySettings, params: dict[str, Any], *, sem: str, has_vec: str, lex: str) -> str:
    """1 when the candidate has semantic or lexical evidence of its own (``rel_ok``), else 0."""
    parts = []
    if settings.relevance_min_similarity is not None:
        params["g_sim"] = float(settings.relevance_min_similarity)
        parts.append(f"({has_vec} = 1 AND {sem} >= :g_sim)")
    if settings.relevance_min_lexical is not None:
        params["g_lex"] = float(settings.relevance_min_lexical)
        parts.append(f"({lex} >= :g_lex)")
    if not parts:
        return "1"
    return f"(CASE WHEN {' OR '.join(parts)} THEN 1 ELSE 0 END)"


def fill_sql(settings: MemorySettings, params: dict[str, Any], *, rel: str, rel_ok: str) -> str:
    """1 when ``rel`` is within ``relevance_fill_margin`` of the best ``rel`` among the memories with
    evidence of their own (a window; 0 when there is none), else 0."""
    if settings.relevance_fill_margin is None or not gate_enabled(settings):
        return "0"
    params["g_fill"] = float(settings.relevance_fill_margin)
    return f"(CASE WHEN {rel} >= MAX(CASE WHEN {rel_ok} = 1 THEN {rel} END) OVER () - :g_fill THEN 1 ELSE 0 END)"


def fill_mask(settings: MemorySettings, rel: np.ndarray, rel_ok: np.ndarray) -> np.ndarray:
    """:func:`fill_sql` in numpy (``rel_ok``: candidates with evidence of their own)."""
    if settings.relevance_fill_margin is None or not gate_enabled(settings) or not rel_ok.any():
        return np.zeros(len(rel), dtype=bool)
    return rel >= rel[rel_ok].max() - settings.relevance_fill_margin


def margin_sql(settings: MemorySettings, params: dict[str, Any], *, rel: str, ok: str) -> str:
    """1 when ``rel`` is within ``relevance_margin`` of the best eligible ``rel`` of the search (a window)."""
    if settings.relevance_margin is None:
        return "1"
    params["g_margin"] = float(settings.relevance_margin)
    return f"(CASE WHEN {rel} >= MAX(CASE WHEN {ok} = 1 THEN {rel} END) OVER () - :g_margin THEN 1 ELSE 0 END)"


def relevant_mask(settings: MemorySettings, sem: np.ndarray, has_vec: np.ndarray, lex: np.ndarray) -> np.ndarray:
    """:func:`eligible_sql` in numpy, for every row."""
    if not gate_enabled(settings):
        return np.ones(len(sem), dtype=bool)
    ok = np.zeros(len(sem), dtype=bool)
    if settings.relevance_min_similarity is not None:
        ok |= has_vec & (sem >= settings.relevance_min_similarity)
    if settings.relevance_min_lexical is not None:
        ok |= lex >= settings.relevance_min_lexical
    return ok


def boost_mask(settings: MemorySettings, rel: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """:func:`margin_sql` in numpy: which rows get recency, frequency and importance."""
    if settings.relevance_margin is None or not ok.any():
        return np.ones(len(rel), dtype=bool)
    return rel >= rel[ok].max() - settings.relevance_margin
