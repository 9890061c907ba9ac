"""Capturing ours' ranking inputs once and re-ranking them in numpy: shared by both replays.

``--gate-replay`` (``_gate_replay.py``, LoCoMo + knowledge-update tune split) and its LongMemEval half
(``_lme_replay.py``) both run each question once through the live service on the numpy path, keep what
``scoring.rank_rows`` was given, and later re-rank it under other settings.  The pieces live here, below
both, so neither replay imports the other (issue 25: ``benchmarks/`` was an import circle).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from types import SimpleNamespace
from typing import Any, Iterator

from benchmarks._ours import OursSystem


@contextlib.contextmanager
def spying() -> Iterator[list[tuple[list[dict], dict]]]:
    """While open, every ``rank_rows`` call of the numpy retriever records its rows and keyword arguments."""
    import adk_oceanbase.memory.retrievers as service_mod

    real = service_mod.rank_rows
    seen: list[tuple[list[dict], dict]] = []

    def spy(rows, **kw):
        seen.append(([dict(r._mapping) for r in rows], dict(kw)))
        return real(rows, **kw)

    service_mod.rank_rows = spy
    try:
        yield seen
    finally:
        service_mod.rank_rows = real


def numpy_path(ours: OursSystem) -> None:
    """Switches ``ours``' live service to the numpy path (``MySQLRetriever``)."""
    svc = ours._svc
    svc.settings = dataclasses.replace(svc.settings, scoring="numpy")


async def captured_search(ours: OursSystem, seen: list, scope: str, question: str, vector: Any,
                          top_k: int) -> tuple[list[dict], dict]:
    """One search through ``ours`` (numpy path, inside ``spying``): its prefiltered rows (embeddings come
    decoded, by the engine's vector type) and ``rank_rows``' arguments."""
    seen.clear()
    await ours.search(scope, question, vector, top_k)
    return seen[0] if seen else ([], {})


def rank_captured(q: dict, settings: Any, top_k: int) -> list[str]:
    """The ids ``rank_rows`` returns for one captured question under ``settings`` (no database)."""
    from adk_oceanbase.memory.scoring import rank_rows

    if not q["rows"]:
        return []
    rows = [SimpleNamespace(**r) for r in q["rows"]]
    kw = dict(q["kw"], settings=settings, weights=settings.weights, top_k=top_k)  # a search without weights uses the settings'
    ranked = rank_rows(rows, **kw)
    return [d for r, _ in ranked for d in (json.loads(r.event_ids) if r.event_ids else None) or [r.memory_id]]
