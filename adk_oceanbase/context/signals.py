"""Metrics on memory and context quality: what an operator alerts on (seed 002 §8, seed 004 §9).

All instruments live on the meter :mod:`adk_oceanbase.telemetry` resolves
(``set_providers`` or the global provider); with none configured every
``record_*`` call is one cached lookup and returns.

* ``adk_oceanbase.context.blocks`` (counter, ``{block}``): the pruner's
  decisions by ``kind`` and ``action`` (kept / degraded / dropped).  Alert on
  the dropped share of ``memory`` or ``content`` rising.
* ``adk_oceanbase.context.budget_used`` (histogram, ratio): tokens sent over
  tokens available, per request.
* ``adk_oceanbase.memory.supersessions`` (counter): memories silently
  replaced by consolidation, by ``reason`` (near_duplicate / contradiction).
* ``adk_oceanbase.memory.embedding_failures`` (counter): by ``error.type``.
* ``adk_oceanbase.compaction.runs`` (counter): by ``outcome``
  (compacted / skipped / gave_up), and ``adk_oceanbase.compaction.events``
  (counter): events archived.
* ``adk_oceanbase.replay.duration`` (histogram, s): snapshot and replay
  reads, by ``operation``.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Any, Iterator

from .. import telemetry
from .blocks import ContextReport

__all__ = [
    "record_compaction",
    "record_embedding_failure",
    "record_report",
    "record_supersession",
    "timed_replay",
]

_built: dict[int, dict[str, Any]] = {}


def _instruments() -> dict[str, Any] | None:
    meter = telemetry.current_meter()
    if meter is None:
        return None
    found = _built.get(id(meter))
    if found is None:
        found = _built[id(meter)] = {
            "blocks": meter.create_counter("adk_oceanbase.context.blocks", unit="{block}", description="Context blocks by pruner decision"),
            "used": meter.create_histogram("adk_oceanbase.context.budget_used", unit="1", description="Share of the context budget a request used"),
            "supersessions": meter.create_counter("adk_oceanbase.memory.supersessions", unit="{memory}", description="Memories superseded by newer ones"),
            "embedding_failures": meter.create_counter("adk_oceanbase.memory.embedding_failures", unit="{memory}", description="Memory embeddings that failed"),
            "compaction_runs": meter.create_counter("adk_oceanbase.compaction.runs", unit="{run}", description="Compaction runs by outcome"),
            "compaction_events": meter.create_counter("adk_oceanbase.compaction.events", unit="{event}", description="Events archived by compaction"),
            "replay": meter.create_histogram("adk_oceanbase.replay.duration", unit="s", description="Duration of state snapshot and replay reads"),
        }
    return found


def record_report(report: ContextReport) -> None:
    """Counts one request's decisions by kind and action, and the share of the budget it used."""
    ins = _instruments()
    if ins is None:
        return
    for kind, actions in report.counts().items():
        for action, n in actions.items():
            ins["blocks"].add(n, {"kind": kind, "action": action})
    available = report.budget.available
    ins["used"].record(report.used_tokens / available if available else 0.0)


def record_supersession(n: int = 1, *, reason: str) -> None:
    """Memories superseded without anyone asking: ``near_duplicate`` (merged) or ``contradiction`` (a newer fact)."""
    ins = _instruments()
    if ins is not None and n:
        ins["supersessions"].add(n, {"reason": reason})


def record_embedding_failure(error_type: str, n: int = 1) -> None:
    ins = _instruments()
    if ins is not None and n:
        ins["embedding_failures"].add(n, {"error.type": error_type})


def record_compaction(outcome: str, events: int = 0) -> None:
    ins = _instruments()
    if ins is None:
        return
    ins["compaction_runs"].add(1, {"outcome": outcome})
    if events:
        ins["compaction_events"].add(events)


@contextmanager
def timed_replay(operation: str) -> Iterator[None]:
    """Records how long the block took under ``adk_oceanbase.replay.duration``."""
    ins = _instruments()
    started = time.perf_counter()
    try:
        yield
    finally:
        if ins is not None:
            ins["replay"].record(time.perf_counter() - started, {"operation": operation})
