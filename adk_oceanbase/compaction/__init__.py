"""Event compaction, token budgets, replay and budgeted context assembly for the session service.

Built on the sessions layer's public :class:`~adk_oceanbase.sessions.store.SessionStore`
(``service.store``), never on the service's internals; the sessions layer
does not import this package back (``OceanBaseSessionService.compact_session``
runs :func:`compact_session` through the hook in :mod:`adk_oceanbase.sessions.store`).
"""

from __future__ import annotations

from .assembler import AssembledContext, ContextAssembler, ContextItem
from .budget import BudgetedEvents, load_within_budget
from .compactor import BackgroundCompactor, CompactionResult, compact_session
from .policy import CompactionPlan, CompactionPolicy, KeepLastN, TokenThresholdPolicy
from .replay import ReplayedState, replay_state
from .summarizer import ExtractiveSummarizer, llm_summarizer

__all__ = [
    "AssembledContext",
    "BackgroundCompactor",
    "BudgetedEvents",
    "CompactionPlan",
    "CompactionPolicy",
    "CompactionResult",
    "ContextAssembler",
    "ContextItem",
    "ExtractiveSummarizer",
    "KeepLastN",
    "ReplayedState",
    "TokenThresholdPolicy",
    "compact_session",
    "llm_summarizer",
    "load_within_budget",
    "replay_state",
]
