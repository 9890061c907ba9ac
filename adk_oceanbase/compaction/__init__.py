"""Event compaction, token budgets, replay and budgeted context assembly for the session service.

Names load lazily: the session service imports :mod:`.coverage` while this
package's other modules import the session service.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "CompactionPlan": "policy",
    "CompactionPolicy": "policy",
    "KeepLastN": "policy",
    "TokenThresholdPolicy": "policy",
    "CompactionResult": "compactor",
    "compact_session": "compactor",
    "BackgroundCompactor": "compactor",
    "ExtractiveSummarizer": "summarizer",
    "llm_summarizer": "summarizer",
    "BudgetedEvents": "budget",
    "load_within_budget": "budget",
    "ReplayedState": "replay",
    "replay_state": "replay",
    "AssembledContext": "assembler",
    "ContextAssembler": "assembler",
    "ContextItem": "assembler",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(name)
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
