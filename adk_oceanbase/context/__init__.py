"""Context engineering: blocks and a budget-guaranteeing pruner, memories as cited advice, per-turn snapshots and diffs.

Names load lazily, like :mod:`adk_oceanbase.compaction`: the turn reader
imports the session service, which must stay importable without it.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Block": "blocks",
    "Budget": "blocks",
    "ContextReport": "blocks",
    "Decision": "blocks",
    "Priority": "blocks",
    "Sensitivity": "blocks",
    "prune": "pruner",
    "render_memories": "memories",
    "Snapshot": "snapshots",
    "state_as_of": "snapshots",
    "Change": "turns",
    "Turn": "turns",
    "TurnDiff": "turns",
    "list_turns": "turns",
    "replay_to_sandbox": "turns",
    "turn_diff": "turns",
    "turn_range": "turns",
    "turn_snapshot": "turns",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(name)
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
