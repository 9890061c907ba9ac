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
  is returned), the margin how much else comes with it.  Context and version
  only borrow from memories with evidence of their own.
* **Margin** (``relevance_margin``): recency, frequency and importance count
  only for candidates whose relevance (semantic + full-text + context +
  version, weighted) is within the margin of the best eligible candidate's;
  they pick among near-equally relevant memories (versions of a fact,
  parallel facts) and cannot lift a weak match over a strong one.

**Lexical evidence** is one named expression (:func:`lexical_evidence_sql`)
and one function (:func:`lexical_evidence`), the same measure on both paths:
the fraction of the query's distinct full-text terms (stemmed, stopwords and
the user's author names removed: ``search_sql.fulltext_query``) that occur
as whole words in the memory's ``search_text``, unweighted.  It is in [0, 1]
like a per-user BM25 coverage (fraction of the query's IDF mass matched)
would be, which is meant to replace it: unweighted, a common word counts as
much as a rare name.

The SQL builders return fragments used by ``search_sql.hybrid_search``; the
numpy functions are used by ``scoring.rank_rows``.  No I/O.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .settings import MemorySettings

__all__ = [
    "MAX_TERMS",
    "boost_mask",
    "eligible_sql",
    "fill_mask",
    "fill_sql",
    "gate_enabled",
    "lexical_evidence",
    "lexical_evidence_sql",
    "lexical_terms",
    "margin_sql",
    "relevant_mask",
]

MAX_TERMS = 32
"""At most this many distinct query terms count for the lexical evidence (a bound on the statement)."""


def gate_enabled(settings: MemorySettings) -> bool:
    """Whether eligibility is checked at all (either floor set)."""
    return settings.relevance_min_similarity is not None or settings.relevance_min_lexical is not None


def lexical_terms(fulltext_query: str) -> tuple[str, ...]:
    """The distinct terms of a full-text query string (``search_sql.fulltext_query``), in order, capped."""
    out: list[str] = []
    for t in fulltext_query.split():
        if t not in out:
            out.append(t)
    return tuple(out[:MAX_TERMS])


def _needle(term: str) -> str:
    """ASCII words must match whole words of ``search_text``; other scripts (CJK: no spaces) as substrings."""
    return f" {term} " if term.isascii() else term


def lexical_evidence(search_text: str | None, terms: Sequence[str]) -> float:
    """Fraction of ``terms`` found in ``search_text`` (see the module docstring); 0 without terms."""
    if not terms:
        return 0.0
    padded = f" {(search_text or '').lower()} "
    return sum(_needle(t) in padded for t in terms) / len(terms)


def lexical_evidence_sql(alias: str, terms: Sequence[str], params: dict[str, Any]) -> str:
    """:func:`lexical_evidence` of row ``alias`` as a SQL expression (binds ``lt0``, ``lt1``, ...)."""
    if not terms:
        return "0"
    padded = f"CONCAT(' ', LOWER(COALESCE({alias}.search_text, '')), ' ')"
    hits = []
    for i, t in enumerate(terms):
        params[f"lt{i}"] = _needle(t)
        hits.append(f"(LOCATE(:lt{i}, {padded}) > 0)")
    return f"(({' + '.join(hits)}) / {len(terms)}.0)"


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
