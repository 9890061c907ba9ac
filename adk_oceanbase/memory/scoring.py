"""The hybrid score in numpy: the MySQL/MariaDB path, mirroring ``search_sql.hybrid_search`` exactly.

MySQL has no vector distance, so the SQL prefilter (tenant, filters, newest
``numpy_scan_limit`` rows plus the user's best BM25 matches, with their
scores from the same ``ft`` CTE as the SQL path) brings rows here and the same
candidate construction and formula run in numpy: top ``candidate_pool`` by
cosine, union top ``candidate_pool`` by full-text, the two put on one scale
by ``settings.fusion``, recency from the newest candidate (or now), the
context and version signals, the relevance gate (``relevance.py``), then the weighted sum.  A test checks that both
paths rank the same memories the same way on seekdb.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Sequence

import numpy as np

from . import relevance as rv
from .asker import author_match
from .settings import MemorySettings, ScoreWeights

__all__ = ["Signals", "cap_per_session", "rank_rows"]


@dataclass(frozen=True)
class Signals:
    """One candidate's per-signal values (before weighting) and its final score."""

    semantic: float
    recency: float
    frequency: float
    fulltext: float
    importance: float
    score: float
    context: float = 0.0
    version: float = 0.0
    ft_cov: float = 0.0
    """Lexical evidence in [0, 1]: the share of the query's idf mass the memory's words match
    (``postings.bm25_ctes``); comparable across queries, unlike the max-normalised ``fulltext``.
    The relevance gate's lexical floor (``relevance_min_lexical``) applies to it; not weighted."""
    author: float = 0.0
    """1 when the memory's author is the one the question asks about (``asker.author_cue``), else 0."""


def _fused(rows, settings, cand, has_vec, sem, ft_in, fts) -> tuple[np.ndarray, np.ndarray]:
    """Semantic and full-text signals of the candidates, as ``search_sql._fusion_exprs`` computes them."""
    n = len(rows)
    sem_sig, ft_sig = np.zeros(n), np.zeros(n)
    vec_c = np.flatnonzero(cand & has_vec)
    ft_c = np.flatnonzero(cand & ft_in)
    if settings.fusion in ("linear", "minmax"):
        ft_max = fts[ft_c].max() if ft_c.size else 0.0
        if ft_max > 0:
            ft_sig[ft_c] = fts[ft_c] / ft_max
        if settings.fusion == "linear" or not vec_c.size:
            sem_sig[vec_c] = sem[vec_c]
        else:
            lo, hi = sem[vec_c].min(), sem[vec_c].max()
            sem_sig[vec_c] = (sem[vec_c] - lo) / (hi - lo) if hi > lo else 1.0
    elif settings.fusion == "rrf":
        k = float(settings.rrf_k)
        for rank, i in enumerate(sorted(vec_c, key=lambda i: (-sem[i], rows[i].memory_id)), start=1):
            sem_sig[i] = (k + 1) / (k + rank)
        for rank, i in enumerate(sorted(ft_c, key=lambda i: (-fts[i], rows[i].memory_id)), start=1):
            ft_sig[i] = (k + 1) / (k + rank)
    else:
        raise ValueError(f"unknown fusion {settings.fusion!r}; choose linear, minmax or rrf")
    return sem_sig, ft_sig


def _context(
    rows: Sequence[Any], cand: np.ndarray, relevance: np.ndarray, window: int, eligible: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``search_sql._context_exprs`` in numpy: best relevance among the neighbours within ``window``
    positions, and whether one of them is ``eligible`` (the gate's ``rel_ok``)."""
    out = np.zeros(len(rows))
    has = np.zeros(len(rows), dtype=bool)
    if window < 1:
        return out, has
    by_session: dict[str, list[int]] = {}
    for i in np.flatnonzero(cand):
        r = rows[i]
        if r.turn_pos is not None and r.session_id is not None:
            by_session.setdefault(r.session_id, []).append(int(i))
    for members in by_session.values():
        for i in members:
            pos = rows[i].turn_pos
            near = [j for j in members if j != i and 0 < abs(rows[j].turn_pos - pos) <= window]
            if near:
                out[i] = max(max(relevance[j] for j in near), 0.0)
                has[i] = any(eligible[j] for j in near)
    return out, has


def _version(rows, eligible, relevance, sem, ft, unit, settings: MemorySettings) -> np.ndarray:
    """``search_sql._version_ctes`` in numpy: the full-text signal each top fact borrows from its best version."""
    out = np.zeros(len(rows))
    facts = [int(i) for i in np.flatnonzero(eligible) if not (rows[i].extractor or "").startswith("turn:")]
    top = sorted(facts, key=lambda i: (-relevance[i], rows[i].memory_id))[: settings.version_pool]
    if len(top) < 2:
        return out
    idx = np.array(top)
    vecs = np.array([unit[i] for i in top])
    own = ft[idx]
    pair = (
        (1.0 - vecs @ vecs.T <= 1.0 - settings.version_similarity)
        & (np.abs(sem[idx][:, None] - sem[idx][None, :]) <= settings.version_band)
        & (own[None, :] > own[:, None])
    )
    best = np.where(pair, own[None, :], -np.inf).max(axis=1)
    out[idx] = np.where(np.isfinite(best), best - own, 0.0)
    return out


def rank_rows(
    rows: Sequence[Any],
    *,
    query_vector: np.ndarray | None,
    embedding_model: str,
    now: datetime,
    top_k: int,
    weights: ScoreWeights,
    settings: MemorySettings,
    min_score: float | None = None,
    author_cue: str | None = None,
) -> list[tuple[Any, Signals]]:
    """Scores prefiltered rows (``numpy_prefilter`` columns, ``embedding`` decoded) and returns the top k, best first.

    ``author_cue``: whose words the question asks about (``asker.author_cue``)."""
    if not rows:
        return []
    n = len(rows)
    pool = settings.candidate_pool
    sem = np.zeros(n)
    has_vec = np.zeros(n, dtype=bool)
    unit: dict[int, np.ndarray] = {}  # row -> its embedding scaled to length 1 (the version signal)
    if query_vector is not None:
        q = np.asarray(query_vector, dtype=np.float64)
        q = q / (np.linalg.norm(q) or 1.0)
        for i, r in enumerate(rows):
            if r.embedding is None or r.embedding_model != embedding_model:
                continue
            v = r.embedding
            if v.size != q.size:
                continue
            v = np.asarray(v, dtype=np.float64)
            norm = np.linalg.norm(v)
            unit[i] = v / norm if norm else v
            sem[i] = float(unit[i] @ q)
            has_vec[i] = True
    fts = np.array([float(r.fts or 0.0) for r in rows])
    cand = np.zeros(n, dtype=bool)
    if query_vector is not None and has_vec.any():
        idx = np.flatnonzero(has_vec)
        order = sorted(idx, key=lambda i: (-sem[i], rows[i].memory_id))[:pool]  # the SQL scan's tie-break
        cand[order] = True
    ft_in = np.zeros(n, dtype=bool)
    matched = np.flatnonzero(fts > 0)
    if matched.size:
        # same tie-break as the SQL candidate list: score, then memory id
        top = sorted(matched, key=lambda i: (-fts[i], rows[i].memory_id))[:pool]
        ft_in[top] = True
        cand |= ft_in
    sem_sig, ft_sig = _fused(rows, settings, cand, has_vec, sem, ft_in, fts)
    half_life, freq_norm = settings.recency_half_life_s, settings.frequency_norm
    ref = now
    if settings.recency_reference == "newest" and cand.any():
        ref = min(now, max(rows[i].created_at for i in np.flatnonzero(cand)))
    # The relevance gate (relevance.py): own evidence (rel_ok); context and version rank as without it.
    lex = np.array([float(r.ft_cov or 0.0) if ft_in[i] else 0.0 for i, r in enumerate(rows)])  # bm25_ctes' cov
    rel_ok = rv.relevant_mask(settings, sem, has_vec, lex)
    relevance = weights.semantic * sem_sig + weights.fulltext * ft_sig
    window = settings.context_window if weights.context else 0
    length_share = np.ones(n)  # a long turn borrows (and lends) in proportion (search_sql._context_exprs)
    if settings.context_full_chars is not None:
        chars = np.array([max(len(r.content or ""), 1) for r in rows], dtype=np.float64)
        length_share = np.minimum(1.0, settings.context_full_chars / chars)
    lent = relevance * length_share if settings.context_long_lends_less else relevance
    ctx, nb_ok = _context(rows, cand, lent, window, rel_ok)
    if settings.context_mode == "gap":
        ctx = np.maximum(ctx - np.maximum(relevance, 0.0), 0.0)  # search_sql._context_exprs' gap
    ctx = ctx * length_share
    ver = np.zeros(n)
    if weights.version and query_vector is not None:
        ver = _version(rows, cand & has_vec, relevance, sem, ft_sig, unit, settings)
    rel = relevance + weights.context * ctx + weights.version * ver
    fill = rv.fill_mask(settings, rel, cand & rel_ok)
    ok = cand & (rel_ok | (nb_ok if settings.relevance_gate_neighbours else False) | fill)
    boost = rv.boost_mask(settings, rel, ok)
    out: list[tuple[Any, Signals]] = []
    for i in np.flatnonzero(ok):
        r = rows[i]
        age = max((ref - r.created_at).total_seconds(), 0.0)
        rec = math.exp(-math.log(2) * age / half_life)
        freq = min(math.log1p(r.access_count) / freq_norm, 1.0)
        imp = float(r.importance_score)
        auth = author_match(author_cue, r.author)
        extra = weights.recency * rec + weights.frequency * freq + weights.importance * imp + weights.author * auth
        score = float(rel[i]) + (extra if boost[i] else 0.0)
        if min_score is not None and score < min_score:
            continue
        out.append((r, Signals(float(sem_sig[i]), rec, freq, float(ft_sig[i]), imp, score, float(ctx[i]),
                               float(ver[i]), ft_cov=float(r.ft_cov or 0.0), author=auth)))
    out.sort(key=lambda x: (-x[1].score, -x[0].created_at.timestamp(), x[0].memory_id))
    return cap_per_session(out, settings.max_hits_per_session)[:top_k]


def cap_per_session(ranked: list[tuple[Any, Signals]], cap: int | None) -> list[tuple[Any, Signals]]:
    """Hits beyond the ``cap`` best of their source session move after all others, in score order.

    ``search_sql._session_cap_expr`` in numpy; ``ranked`` is best first.
    Memories without a session are never capped.
    """
    if cap is None:
        return ranked
    seen: dict[str, int] = {}
    head, tail = [], []
    for hit in ranked:
        sid = hit[0].session_id
        if sid is not None:
            seen[sid] = seen.get(sid, 0) + 1
        (tail if sid is not None and seen[sid] > cap else head).append(hit)
    return head + tail
