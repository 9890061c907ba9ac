"""``compact_session``: runs a :mod:`policy` on a stored session, off the request path.

The compaction event is written with ``append_event`` and the session copy
this function loaded, so it is a compare-and-set on the session's revision
like every other append: if a turn appends meanwhile, the write is refused
(``StaleSessionError``), nothing is archived, and the compactor reloads and
decides again. It therefore never races a Runner, and the summary (often a
slow model call) runs outside any transaction or lock.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from google.adk.apps.base_events_summarizer import BaseEventsSummarizer
from google.adk.errors import StaleSessionError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.genai import types

from ..context import signals
from ..errors import SessionMissingError
from ..sessions.store import revision_of
from . import queries as cq
from .policy import CompactionPlan, CompactionPolicy, EventInfo, TokenThresholdPolicy
from .summarizer import ExtractiveSummarizer, render_events

if TYPE_CHECKING:
    from ..sessions import OceanBaseSessionService

__all__ = ["BackgroundCompactor", "CompactionResult", "compact_session"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompactionResult:
    """What one ``compact_session`` call did."""

    compacted: bool
    reason: str
    mode: str | None = None
    covered_events: int = 0
    folded_summaries: int = 0
    tokens_before: int = 0
    summary_tokens: int = 0
    event: Event | None = None
    attempts: int = 1


def _safe_prefix(events: list[Event], n: int) -> int:
    """Shrinks a compacted prefix of ``n`` events so no tool call/response pair is split.

    A response left verbatim whose call would be summarised is orphaned in the
    next request, and a call summarised without its response can never be
    paired again; both move the split earlier.
    """
    while n > 0:
        calls = {fc.id for e in events[:n] for fc in e.get_function_calls() if fc.id}
        answered = {fr.id for e in events[:n] for fr in e.get_function_responses() if fr.id}
        later = {fr.id for e in events[n:] for fr in e.get_function_responses() if fr.id}
        if calls & later or (calls - answered):
            n -= 1
            continue
        return n
    return 0


def _key_part(events: list[Event]) -> list[types.Part]:
    text = render_events(events)
    return [types.Part(text=f"Key events kept verbatim:\n{text}")] if text else []


async def _build_event(
    plan: CompactionPlan,
    covered: list[Event],
    keys: list[Event],
    folded: list[Event],
    summarizer: BaseEventsSummarizer,
) -> Event | None:
    """The compaction event for ``plan``: a model summary or an extract, plus key events verbatim."""
    start = min([e.timestamp for e in covered] + [f.actions.compaction.start_timestamp for f in folded])
    end = max(e.timestamp for e in covered)
    if plan.mode == "summarize":
        seeds = [
            Event(timestamp=f.actions.compaction.start_timestamp, author="model", content=f.actions.compaction.compacted_content,
                  invocation_id=f.invocation_id)
            for f in folded
        ]
        key_ids = {k.id for k in keys}
        to_summarise = seeds + [e for e in covered if e.id not in key_ids]
        produced = await summarizer.maybe_summarize_events(events=to_summarise) if to_summarise else None
        if produced is None or produced.actions.compaction is None or produced.actions.compaction.compacted_content is None:
            if to_summarise:
                return None
            parts: list[types.Part] = []
        else:
            parts = list(produced.actions.compaction.compacted_content.parts or [])
    else:
        parts = [types.Part(text=f"{len(covered) - len(keys)} earlier events were elided.")]
    parts += _key_part(keys)
    return Event(
        author="user",
        invocation_id=Event.new_id(),
        actions=EventActions(
            compaction=EventCompaction(
                start_timestamp=start,
                end_timestamp=end,
                compacted_content=types.Content(role="model", parts=parts),
            )
        ),
        custom_metadata={"adk_oceanbase": {"compaction": plan.mode, "covered": len(covered), "reason": plan.reason}},
    )


async def _attempt(
    service: "OceanBaseSessionService",
    app: str,
    user: str,
    sid: str,
    policy: CompactionPolicy,
    summarizer: BaseEventsSummarizer,
) -> CompactionResult:
    session = await service.get_session(app_name=app, user_id=user, session_id=sid)
    if session is None:
        raise SessionMissingError(f"Session {sid} not found.")
    revision = revision_of(session)
    if revision is None:
        raise RuntimeError("compact_session needs a session loaded by OceanBaseSessionService")

    async def load(conn: Any) -> list:
        return (await conn.execute(cq.live_event_meta(app, user, sid, max_seq=revision))).all()

    rows = await service.store.read(load)
    if [r.event_id for r in rows] != [e.id for e in session.events]:
        raise StaleSessionError("session changed between reads")
    infos = [EventInfo(r.seq, r.ts, r.token_count, r.event_type, bool(r.is_final), r.invocation_id) for r in rows]
    total = sum(i.tokens for i in infos)
    plan = policy.plan(infos)
    if plan is None or not plan.compact_seqs:
        return CompactionResult(False, "policy: nothing to compact", tokens_before=total)

    by_seq = dict(zip((i.seq for i in infos), session.events))
    covered = [by_seq[s] for s in plan.compact_seqs]
    n = _safe_prefix(covered, len(covered))
    if n == 0:
        return CompactionResult(False, "every candidate event belongs to an open tool call", tokens_before=total)
    covered = covered[:n]
    ids = {e.id for e in covered}
    keys = [by_seq[s] for s in plan.key_seqs if by_seq[s].id in ids]
    folded = [by_seq[s] for s in plan.fold_summaries]
    event = await _build_event(plan, covered, keys, folded, summarizer)
    if event is None:
        return CompactionResult(False, "summarizer returned nothing", tokens_before=total)
    await service.append_event(session, event)  # CAS on the revision loaded above
    return CompactionResult(
        True, plan.reason, plan.mode, len(covered), len(folded), total,
        service.store.token_counter.count(render_events([event])), event,
    )


async def compact_session(
    service: "OceanBaseSessionService",
    *,
    app_name: str,
    user_id: str,
    session_id: str,
    policy: Optional[CompactionPolicy] = None,
    summarizer: Optional[BaseEventsSummarizer] = None,
    max_attempts: int = 3,
) -> CompactionResult:
    """Compacts one stored session by ``policy``; safe to run beside live Runners.

    Args:
        service: the session service that stores the session.
        policy: e.g. ``TokenThresholdPolicy(low=4000, high=8000, keep_last=40)``
            (``TokenThresholdPolicy()`` when unset).
        summarizer: any ADK ``BaseEventsSummarizer``; ``llm_summarizer(model)``
            for real summaries. Defaults to the offline ``ExtractiveSummarizer``.
        max_attempts: reload-and-retry budget when a concurrent append wins.

    Returns:
        A :class:`CompactionResult`; ``compacted`` is False when the policy
        found nothing to do or every attempt lost to concurrent appends.
    """
    policy = policy or TokenThresholdPolicy()
    summarizer = summarizer or ExtractiveSummarizer()
    for attempt in range(1, max_attempts + 1):
        try:
            result = await _attempt(service, app_name, user_id, session_id, policy, summarizer)
        except StaleSessionError:
            logger.info("compaction of session %s lost to a concurrent append (attempt %d)", session_id, attempt)
            continue
        signals.record_compaction("compacted" if result.compacted else "skipped", result.covered_events)  # issue 30
        return CompactionResult(**{**result.__dict__, "attempts": attempt})
    signals.record_compaction("gave_up")  # issue 30: compaction results metric
    return CompactionResult(False, f"session kept changing; gave up after {max_attempts} attempts", attempts=max_attempts)


class BackgroundCompactor:
    """Runs ``compact_session`` in a background task, one session at a time, off the request path.

    Example:
        >>> bg = BackgroundCompactor(service, TokenThresholdPolicy())  # doctest: +SKIP
        >>> bg.schedule(app_name="app", user_id="u", session_id=s.id)  # after a turn
        >>> await bg.close()  # drains the queue

    Args:
        close_timeout_s: how long ``close()`` waits for queued sessions; a
            summarizer (an LLM call) that hangs is cancelled after it.
    """

    def __init__(
        self,
        service: "OceanBaseSessionService",
        policy: CompactionPolicy,
        summarizer: Optional[BaseEventsSummarizer] = None,
        *,
        close_timeout_s: float = 30.0,
    ):
        self._service, self._policy, self._summarizer = service, policy, summarizer
        self._close_timeout_s = close_timeout_s
        self._queue: asyncio.Queue[tuple[str, str, str] | None] = asyncio.Queue()
        self._pending: set[tuple[str, str, str]] = set()
        self._task: asyncio.Task | None = None
        self.results: list[CompactionResult] = []

    def schedule(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Queues a session (deduplicated while queued); starts the worker on first use."""
        key = (app_name, user_id, session_id)
        if key in self._pending:
            return
        self._pending.add(key)
        self._queue.put_nowait(key)
        if self._task is None:
            self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while (key := await self._queue.get()) is not None:
            self._pending.discard(key)
            try:
                self.results.append(
                    await compact_session(self._service, app_name=key[0], user_id=key[1], session_id=key[2],
                                          policy=self._policy, summarizer=self._summarizer)
                )
            except Exception:  # one bad session must not stop the worker
                logger.exception("background compaction of session %s failed", key[2])
            finally:
                self._queue.task_done()

    async def drain(self) -> None:
        """Waits until every scheduled session has been processed."""
        await self._queue.join()

    async def close(self, timeout: float | None = None) -> None:
        """Drains the queue for at most ``timeout`` seconds (``close_timeout_s``), then stops the worker.

        A compaction cut short rolls back (each is one transaction); sessions
        still queued stay as they are until something schedules them again.
        """
        if self._task is None:
            return
        limit = self._close_timeout_s if timeout is None else timeout
        await self._queue.put(None)
        try:
            await asyncio.wait_for(asyncio.shield(self._task), limit)
        except (asyncio.TimeoutError, TimeoutError):
            logger.warning("background compaction still busy after %.1f s at close; cancelled", limit)
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        self._task = None
