"""Compaction policies: pure decisions over stored event metadata (``token_count``, ``event_type``), no I/O.

A policy sees the session's *live* events (those a default load returns:
summaries plus raw events no summary covers) and answers one question: which
oldest raw events should the next compaction event cover, and how should it
represent them.  It never picks a non-prefix: ADK hides every raw event whose
timestamp falls inside a summary's range, so a summary always stands for a
contiguous run of history.

Three modes, after the hybrid strategy of the design seed (004/000): below
``low`` tokens nothing happens; between ``low`` and ``high`` the old events
are *extracted* (key events kept verbatim, the rest dropped, no model call);
at ``high`` or above they are *summarised* (a model call, key events still
appended verbatim). When the live summaries themselves outgrow
``max_summary_tokens`` the next summary also covers them: a summary of
summaries (recursive compaction), which archives the older summary events.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol, Sequence, runtime_checkable

__all__ = [
    "DEFAULT_KEY_TYPES",
    "CompactionPlan",
    "CompactionPolicy",
    "EventInfo",
    "KeepLastN",
    "TokenThresholdPolicy",
]

#: Event kinds kept verbatim by default: errors and tool results are facts a
#: summary may distort. Add ``"final"`` to keep final answers too.
DEFAULT_KEY_TYPES: frozenset[str] = frozenset({"error", "function_response"})

Mode = Literal["summarize", "extract"]


@dataclass(frozen=True)
class EventInfo:
    """Metadata of one live event, as stored in ``session_events`` (no payload)."""

    seq: int
    ts: float
    tokens: int
    event_type: str
    is_final: bool = False
    invocation_id: str | None = None

    @property
    def is_summary(self) -> bool:
        return self.event_type == "compaction"


@dataclass(frozen=True)
class CompactionPlan:
    """What the next compaction event covers and how it represents it."""

    mode: Mode
    compact_seqs: tuple[int, ...]
    """Raw events the summary covers: the oldest live raw events, in ``seq`` order."""
    key_seqs: tuple[int, ...] = ()
    """Those of ``compact_seqs`` copied verbatim into the summary."""
    fold_summaries: tuple[int, ...] = ()
    """Live summary events folded into this one (recursive compaction)."""
    reason: str = ""


@runtime_checkable
class CompactionPolicy(Protocol):
    """Decides whether and what to compact from the session's live events (oldest first)."""

    def plan(self, events: Sequence[EventInfo]) -> CompactionPlan | None: ...


def _is_key(info: EventInfo, key_types: frozenset[str]) -> bool:
    return info.event_type in key_types or ("final" in key_types and info.is_final)


def _make_plan(
    mode: Mode,
    events: Sequence[EventInfo],
    keep_last: int,
    key_types: frozenset[str],
    max_summary_tokens: int | None,
    reason: str,
) -> CompactionPlan | None:
    raw = [e for e in events if not e.is_summary]
    if len(raw) <= keep_last:
        return None
    old = raw[: len(raw) - keep_last]
    summaries = [e for e in events if e.is_summary]
    fold: tuple[int, ...] = ()
    if max_summary_tokens is not None and summaries and sum(s.tokens for s in summaries) > max_summary_tokens:
        fold = tuple(s.seq for s in summaries)
        mode = "summarize"  # folding summaries needs a model; extraction would just concatenate them
        reason += f"; summaries hold {sum(s.tokens for s in summaries)} tokens > {max_summary_tokens}: summary of summaries"
    keys = tuple(e.seq for e in old if _is_key(e, key_types))
    return CompactionPlan(mode, tuple(e.seq for e in old), keys, fold, reason)


@dataclass(frozen=True)
class KeepLastN:
    """Summarise everything but the newest ``keep_last`` raw events once ``min_batch`` more have piled up.

    Args:
        keep_last: raw events left verbatim after compaction.
        min_batch: compact only when at least this many events would be
            covered, so each summary call pays for itself.
        key_types: event kinds copied verbatim into the summary.
        max_summary_tokens: fold live summaries into the next one above this.
    """

    keep_last: int = 40
    min_batch: int = 20
    key_types: frozenset[str] = DEFAULT_KEY_TYPES
    max_summary_tokens: int | None = 2000

    def plan(self, events: Sequence[EventInfo]) -> CompactionPlan | None:
        raw = sum(1 for e in events if not e.is_summary)
        if raw - self.keep_last < max(1, self.min_batch):
            return None
        return _make_plan(
            "summarize", events, self.keep_last, frozenset(self.key_types), self.max_summary_tokens,
            f"{raw} live raw events > keep_last {self.keep_last} + min_batch {self.min_batch}",
        )


@dataclass(frozen=True)
class TokenThresholdPolicy:
    """Hybrid token policy: nothing below ``low``, extract between ``low`` and ``high``, summarise above.

    Token counts are the stored ``token_count`` of every live event
    (summaries included), i.e. what a default load hands the model.

    Args:
        low: below this many live tokens nothing happens (seed default 4000).
        high: at or above it old events are summarised by the model (8000).
        keep_last: raw events always left verbatim (seed default 40).
        key_types: event kinds copied verbatim into the compaction event.
        max_summary_tokens: fold live summaries into the next one above this.
    """

    low: int = 4000
    high: int = 8000
    keep_last: int = 40
    key_types: frozenset[str] = field(default=DEFAULT_KEY_TYPES)
    max_summary_tokens: int | None = 2000

    def __post_init__(self) -> None:
        if not 0 <= self.low <= self.high:
            raise ValueError("TokenThresholdPolicy needs 0 <= low <= high")

    def plan(self, events: Sequence[EventInfo]) -> CompactionPlan | None:
        total = sum(e.tokens for e in events)
        if total < self.low:
            return None
        mode: Mode = "summarize" if total >= self.high else "extract"
        reason = f"{total} live tokens {'>= high' if mode == 'summarize' else '>= low'} ({self.high if mode == 'summarize' else self.low})"
        return _make_plan(mode, events, self.keep_last, frozenset(self.key_types), self.max_summary_tokens, reason)
