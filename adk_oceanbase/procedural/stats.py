"""Confidence from sample size, medians from counts, and the vector codec of scenarios.  Pure, no I/O."""

from __future__ import annotations

import base64
import math
from typing import Iterable, Mapping, Sequence

import numpy as np

__all__ = ["decline_point", "decode_vector", "encode_vector", "fisher_differ_p", "median_of_counts", "wilson_lower_bound"]


def wilson_lower_bound(successes: float, n: float, z: float = 1.96) -> float:
    """Lower end of the Wilson score interval of a success rate: what the data supports with ~95 % confidence.

    Small samples are held down (1 of 1 gives 0.21, 19 of 20 gives 0.76),
    so a path that worked once never outranks one that worked 19 times in 20.

    Example:
        >>> round(wilson_lower_bound(1, 1), 2), round(wilson_lower_bound(19, 20), 2), wilson_lower_bound(0, 0)
        (0.21, 0.76, 0.0)
    """
    if n <= 0:
        return 0.0
    p = min(max(successes / n, 0.0), 1.0)  # recency-weighted counts are floats
    z2 = z * z
    centre = p + z2 / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, (centre - margin) / (1 + z2 / n))


def decline_point(outcomes: Sequence[bool]) -> tuple[float, int]:
    """Where a path's outcomes got worse: ``(p, k)``, the smallest one-sided p-value over every split of
    ``outcomes`` (newest first) into its newest ``k`` and the older rest, and that ``k``.

    The p-value is Fisher's exact test that the newest ``k`` held this few
    successes by chance when every outcome had the same success rate: the
    hypergeometric probability of at most the observed successes among ``k``
    draws from all of them.  Exact, so it holds at the handful of runs a path
    has (one failure after ten successes: p = 1/11; three after ten: 1/286,
    where a likelihood-ratio test would call both significant).  ``(1.0, 0)``
    when no split is worse than the rest.  The smallest of up to ``n - 1``
    p-values is not itself a p-value: the threshold that uses it
    (``ProceduralSettings.decline_p``) was chosen on the benchmark's tune split.

    Example:
        >>> p, k = decline_point([False, False, False] + [True] * 10)
        >>> round(p, 4), k
        (0.0035, 3)
        >>> decline_point([True] * 5)
        (1.0, 0)
    """
    n, total = len(outcomes), sum(1 for ok in outcomes if ok)
    best, where, wins = 1.0, 0, 0
    if n < 2 or total in (0, n):
        return best, where
    for k in range(1, n):
        wins += 1 if outcomes[k - 1] else 0
        if wins * n >= total * k:  # the newest k did no worse than the whole: no decline at this split
            continue
        tail = sum(math.comb(total, x) * math.comb(n - total, k - x) for x in range(max(0, k - (n - total)), wins + 1))
        p = tail / math.comb(n, k)
        if p < best:
            best, where = p, k
    return best, where


def median_of_counts(counts: Mapping[int, int] | Iterable[tuple[int, int]]) -> float | None:
    """The median of values given as ``{value: how many}``; ``None`` for no values.

    Example:
        >>> median_of_counts({1: 3, 2: 1}), median_of_counts({1: 1, 3: 1})
        (1.0, 2.0)
    """
    pairs = sorted((int(v), int(c)) for v, c in (counts.items() if isinstance(counts, Mapping) else counts) if c > 0)
    total = sum(c for _, c in pairs)
    if not total:
        return None
    lo_rank, hi_rank = (total - 1) // 2, total // 2
    seen, lo = 0, None
    for value, count in pairs:
        if lo is None and seen + count > lo_rank:
            lo = value
        if seen + count > hi_rank:
            return (lo + value) / 2.0
        seen += count
    return None  # unreachable: hi_rank < total


def encode_vector(vec: np.ndarray) -> str:
    """float32 little-endian, base64: 384 dimensions are 2 KB of text on every engine."""
    return base64.b64encode(np.asarray(vec, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(text: str | None) -> np.ndarray | None:
    if not text:
        return None
    return np.frombuffer(base64.b64decode(text), dtype="<f4").astype(np.float32)


def fisher_differ_p(successes_a: int, n_a: int, successes_b: int, n_b: int) -> float:
    """How surprising two groups' success counts are if both had one rate: the smaller one-sided p-value of
    Fisher's exact test (group ``a`` did worse, or better, than the pooled rate).  ``1.0`` when a group is empty
    or every outcome is alike.

    Example:
        >>> round(fisher_differ_p(1, 10, 9, 10), 4), fisher_differ_p(3, 3, 0, 0)
        (0.0005, 1.0)
    """
    n, k = n_a + n_b, successes_a + successes_b
    if n_a <= 0 or n_b <= 0 or k in (0, n):
        return 1.0
    lo, hi = max(0, n_a - (n - k)), min(n_a, k)
    weights = {x: math.comb(k, x) * math.comb(n - k, n_a - x) for x in range(lo, hi + 1)}
    total = math.comb(n, n_a)
    less = sum(w for x, w in weights.items() if x <= successes_a)
    more = sum(w for x, w in weights.items() if x >= successes_a)
    return min(less, more) / total
