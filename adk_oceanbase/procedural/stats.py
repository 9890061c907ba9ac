"""Confidence from sample size, medians from counts, and the vector codec of scenarios.  Pure, no I/O."""

from __future__ import annotations

import base64
import math
from typing import Iterable, Mapping

import numpy as np

__all__ = ["decode_vector", "encode_vector", "median_of_counts", "wilson_lower_bound"]


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
