"""Scenarios: what users asked for, grouped so that paraphrases of one task meet.  Pure, no I/O.

A request joins the scenario whose centroid (the normalised sum of its
members' unit vectors) is nearest by cosine, if at least
``ProceduralSettings.similarity``; otherwise it starts a new one.  An
explicit label (``{"scenario": "refund"}`` in the outcome signal, or
``record_outcome(..., scenario=)``) names the scenario outright.
The request text itself is never stored: only its hash and its vector.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from .stats import decode_vector

__all__ = ["Centroid", "centroids", "label_id", "near", "nearest", "new_id", "request_hash"]


@dataclass(frozen=True)
class Centroid:
    scenario_id: str
    label: str | None
    direction: np.ndarray | None  # unit vector, or None for a label with no vectors yet
    members: int


def request_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def label_id(label: str) -> str:
    """The scenario id of an explicit label (the same label always meets itself)."""
    return "l-" + hashlib.sha256(label.strip().lower().encode("utf-8")).hexdigest()[:40]


def new_id(app: str, scope: str, req_hash: str) -> str:
    """A new scenario's id, derived from its first request: two extractors of one session pick the same."""
    return "s-" + hashlib.sha256(f"{app}\x00{scope}\x00{req_hash}".encode("utf-8")).hexdigest()[:40]


def centroids(rows: Iterable[Any], model: str) -> list[Centroid]:
    """Decoded scenario rows; vectors of another embedding model are not comparable and are ignored."""
    out = []
    for r in rows:
        total = decode_vector(r.vector_sum) if r.embedding_model in (None, model) else None
        norm = float(np.linalg.norm(total)) if total is not None else 0.0
        out.append(Centroid(r.scenario_id, r.label, total / norm if norm > 0 else None, int(r.members)))
    return out


def nearest(vec: np.ndarray, known: Sequence[Centroid], threshold: float) -> tuple[str | None, float]:
    """The best scenario for a unit vector and its cosine, or ``(None, best cosine)`` below ``threshold``."""
    best, score = None, -1.0
    for c in known:
        if c.direction is None or c.direction.shape != vec.shape:
            continue
        s = float(np.dot(c.direction, vec))
        if s > score:
            best, score = c.scenario_id, s
    return (best, score) if score >= threshold else (None, score)


def near(vec: np.ndarray, known: Sequence[Centroid], threshold: float, limit: int = 3) -> list[tuple[str, float]]:
    """Every scenario within ``threshold`` of a unit vector, nearest first (at most ``limit``).

    Recall pools them: early requests of one task can start two scenarios
    before their centroids settle (benchmarks/procedural.py: 39 scenarios
    for 20 tasks, 98 % pure), and their evidence belongs together.
    """
    scored = [(c.scenario_id, float(np.dot(c.direction, vec))) for c in known
              if c.direction is not None and c.direction.shape == vec.shape]
    return sorted((x for x in scored if x[1] >= threshold), key=lambda x: -x[1])[:limit]
