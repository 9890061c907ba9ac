"""Token-budgeted loads: the newest live events whose stored ``token_count`` fits a budget, summaries first.

The cut is computed by the server: a window ``SUM(token_count) OVER (ORDER
BY seq DESC)`` over the primary-key range, reading index-width columns only,
so a 5,000-event session costs one short scan and the payloads of just the
rows that fit are fetched afterwards. Summaries (live compaction events) are
packed before raw events because one summary stands for many of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from google.adk.events.event import Event

from ..errors import ValidationError
from .. import validation
from ..sessions import codec
from . import queries as cq

if TYPE_CHECKING:
    from ..sessions import OceanBaseSessionService

__all__ = ["BudgetedEvents", "load_within_budget"]


@dataclass(frozen=True)
class BudgetedEvents:
    """What fits in a token budget: summaries (oldest first), then the newest raw events (oldest first)."""

    budget: int
    summaries: list[Event] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    summary_tokens: int = 0
    event_tokens: int = 0
    dropped_summaries: int = 0
    dropped_events: int = 0
    """Live raw events older than the cut (archived events are never counted)."""

    @property
    def used_tokens(self) -> int:
        return self.summary_tokens + self.event_tokens

    @property
    def all_events(self) -> list[Event]:
        """Summaries first, then events: ready for ``Session.events`` or ADK's content builder."""
        return [*self.summaries, *self.events]


async def load_within_budget(
    service: "OceanBaseSessionService",
    *,
    app_name: str,
    user_id: str,
    session_id: str,
    max_tokens: int,
) -> BudgetedEvents | None:
    """Loads the live summaries and newest live events that fit ``max_tokens`` (``None``: no such session).

    Summaries are packed newest first and stop at the first that does not
    fit; the remaining budget then takes raw events newest first, contiguous
    (a gap would tear a conversation apart), cut where the running sum first
    exceeds it. A function response whose call fell off the cut is left for
    ADK's content builder, which drops orphaned responses.
    """
    if not isinstance(max_tokens, int) or max_tokens < 0:
        raise ValidationError("max_tokens must be a non-negative integer")
    app, user, sid = validation.check_id("app_name", app_name), validation.check_id("user_id", user_id), validation.check_id("session_id", session_id)

    async def load(conn: Any) -> tuple[list, list, list, int, list] | None:
        if (await conn.execute(cq.session_head(app, user, sid))).first() is None:
            return None
        summary_rows = (await conn.execute(cq.live_summaries(app, user, sid))).all()
        kept_summaries = []
        left = max_tokens
        for row in reversed(summary_rows):
            if row.token_count > left:
                break
            kept_summaries.append(row)
            left -= row.token_count
        kept_summaries.reverse()
        window = (await conn.execute(cq.budget_window(app, user, sid, budget=left))).all()
        total_live = (await conn.execute(cq.live_raw_count(app, user, sid))).scalar() or 0
        seqs = [r.seq for r in window]
        rows = (await conn.execute(cq.events_by_seq(app, user, sid, seqs))).all() if seqs else []
        return summary_rows, kept_summaries, window, total_live, rows

    loaded = await service.store.read(load)
    if loaded is None:
        return None
    summary_rows, kept_summaries, window, total_live, rows = loaded
    return BudgetedEvents(
        budget=max_tokens,
        summaries=[codec.decode_event(r.event_json) for r in kept_summaries],
        events=[codec.decode_event(r.event_json) for r in rows],
        summary_tokens=sum(r.token_count for r in kept_summaries),
        event_tokens=sum(r.token_count for r in window),
        dropped_summaries=len(summary_rows) - len(kept_summaries),
        dropped_events=int(total_live) - len(window),
    )
