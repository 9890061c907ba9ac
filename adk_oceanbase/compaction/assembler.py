"""Budgeted context assembly: memories, compaction summaries and the conversation packed by :mod:`adk_oceanbase.context`'s pruner.

Every candidate becomes a :class:`~adk_oceanbase.context.Block` and the
pruner decides: memories first (relevance x confidence, capped so they never
crowd out the conversation), then the live compaction summaries, then the
newest events, newest first and contiguous, a function call never without its
response.  ``before_model_callback()`` does the same to an ADK request and
also pays for the system instruction, the tool declarations and a reserve for
the reply, so the request it sends never exceeds ``max_tokens``.

The report belongs to the request: :meth:`ContextAssembler.assemble` returns
it, and the callback keeps it under the invocation id
(:meth:`ContextAssembler.reports_for`) and hands it to ``on_report``.  Nothing
is shared between requests, so one assembler can serve concurrent sessions.

Memories go into one user-role content of their own (see
:mod:`adk_oceanbase.context.memories`), placed before the latest user turn
like ADK's ``preload_memory`` does; the system instruction is never touched.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from google.adk.events.event import Event
from google.genai import types

from ..context import signals
from ..context.blocks import Block, Budget, ContextReport, Decision, Priority, Sensitivity
from ..context.memories import MEMORY_CLOSE, MEMORY_HEADER, MEMORY_OPEN, frame_text, memory_blocks, render_memories
from ..context.pruner import prune
from ..context.requests import apply_to_contents, call_groups, clip, request_blocks, request_parts
from ..tokens import EstimatingTokenCounter, TokenCounter, event_text
from .summarizer import render_event

__all__ = [
    "MEMORY_CLOSE", "MEMORY_HEADER", "MEMORY_OPEN", "AssembledContext", "ContextAssembler", "ContextItem", "render_memories",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ContextItem:
    """One candidate for the context window and what happened to it (a flat view of a :class:`Decision`)."""

    kind: str
    text: str
    tokens: int
    reason: str
    source_id: str | None = None
    score: float | None = None
    label: str = ""
    """A memory's citation (date, author, session, confidence), as the prompt shows it."""
    action: str = "kept"

    @classmethod
    def of(cls, d: Decision) -> "ContextItem":
        b = d.block
        source = b.meta.get("source_id", b.meta.get("memory_id"))
        score = b.meta.get("relevance") if b.kind == "memory" else None
        return cls(b.kind, b.text, d.tokens if d.action != "dropped" else b.tokens, d.reason, source, score, b.meta.get("citation", ""), d.action)


@dataclass
class AssembledContext:
    """One request's packing: its :class:`ContextReport` and, for :meth:`ContextAssembler.assemble`, the kept events."""

    budget: int
    report: ContextReport
    events: list[Event] = field(default_factory=list)
    """Kept summaries then kept events, oldest first."""
    invocation_id: str | None = None

    def _items(self, *actions: str) -> list[ContextItem]:
        chosen = self.report.included if "dropped" not in actions else self.report.decisions
        return [ContextItem.of(d) for d in chosen if d.action in actions and d.block.kind != "memory_frame"]

    @property
    def kept(self) -> list[ContextItem]:
        """Kept and degraded items in prompt order."""
        return self._items("kept", "degraded")

    @property
    def degraded(self) -> list[ContextItem]:
        return self._items("degraded")

    @property
    def dropped(self) -> list[ContextItem]:
        return self._items("dropped")

    @property
    def used_tokens(self) -> int:
        return self.report.used_tokens

    def memory_block(self) -> str:
        """The kept memories as the model sees them; ``""`` when there are none."""
        return render_memories([d for d in self.report.included if d.block.kind == "memory"])


class ContextAssembler:
    """Packs memories, summaries and recent events (or a whole ADK request) into ``max_tokens``.

    Args:
        memory_service: anything with ``search(app_name=, user_id=, query=, top_k=)``
            (ours, best first) or ADK's ``search_memory(app_name=, user_id=, query=)``.
        max_tokens: the request's input budget: in the callback it pays for the
            system instruction and tool declarations too.
        memory_top_k: memories asked for and considered.
        memory_max_tokens: cap on memory tokens (default: a third of the budget).
        reserve_for_reply: tokens of ``max_tokens`` left free for the answer.
        max_sensitivity: blocks above it are never sent.
        counter: token counter (the fast estimator by default).
        on_report: called with each request's :class:`AssembledContext`.
        keep_reports: how many invocations' reports :meth:`reports_for` keeps (oldest forgotten first).
    """

    def __init__(
        self,
        memory_service: Any = None,
        *,
        max_tokens: int = 4000,
        memory_top_k: int = 5,
        memory_max_tokens: int | None = None,
        reserve_for_reply: int = 0,
        max_sensitivity: Sensitivity = Sensitivity.SECRET,
        counter: TokenCounter | None = None,
        on_report: Callable[[AssembledContext], None] | None = None,
        keep_reports: int = 256,
    ):
        self.memory_service = memory_service
        self.max_tokens = max_tokens
        self.memory_top_k = memory_top_k
        self.memory_max_tokens = memory_max_tokens if memory_max_tokens is not None else max_tokens // 3
        self.reserve_for_reply = reserve_for_reply
        self.max_sensitivity = max_sensitivity
        self.counter = counter or EstimatingTokenCounter()
        self.on_report = on_report
        self.keep_reports = keep_reports
        self._reports: "OrderedDict[str, list[AssembledContext]]" = OrderedDict()

    def reports_for(self, invocation_id: str) -> list[AssembledContext]:
        """The reports of one invocation's model calls, oldest first (``[]`` when unknown or forgotten)."""
        return list(self._reports.get(invocation_id, ()))

    def _budget(self, max_tokens: int) -> Budget:
        return Budget(
            max_tokens, min(self.reserve_for_reply, max_tokens), {"memory": self.memory_max_tokens}, self.max_sensitivity
        )

    async def _memories(self, app_name: str, user_id: str, query: str) -> list[Any]:
        ms = self.memory_service
        if ms is None or not query:
            return []
        if hasattr(ms, "search"):
            try:
                res = await ms.search(app_name=app_name, user_id=user_id, query=query, top_k=self.memory_top_k)
            except TypeError:
                res = await ms.search(app_name=app_name, user_id=user_id, query=query)
        else:
            res = await ms.search_memory(app_name=app_name, user_id=user_id, query=query)
        return list(getattr(res, "memories", res) or [])

    def _memory_candidates(self, found: Sequence[Any]) -> tuple[list[Block], list[Decision]]:
        blocks, refused = memory_blocks(found, self.counter, top_k=self.memory_top_k, order=-1)
        if blocks:  # the header and delimiters cost tokens too: paid before the first memory
            frame = frame_text()
            blocks.insert(0, Block("memory-frame", "memory_frame", frame, self.counter.count(frame), Priority.HIGH, score=float("inf"), order=-1.5))
        return blocks, [Decision(b, "dropped", why, 0) for b, why in refused]

    def _finish(self, report: ContextReport, refused: list[Decision]) -> ContextReport:
        frame = next((d for d in report.decisions if d.block.kind == "memory_frame"), None)
        if frame is not None and frame.action == "kept" and not any(d.block.kind == "memory" and d.action != "dropped" for d in report.decisions):
            report.decisions[report.decisions.index(frame)] = Decision(frame.block, "dropped", "no memory kept", 0)
        report.decisions.extend(refused)
        return report

    def _event_blocks(self, events: Sequence[Event]) -> list[Block]:
        groups = call_groups([e.content or types.Content(parts=[]) for e in events])
        out = []
        for i, e in enumerate(events):
            text, tokens = render_event(e), self.counter.count(event_text(e))
            if e.actions and e.actions.compaction:
                out.append(Block(f"event:{e.id}", "summary", text, tokens, Priority.HIGH, score=-1, order=-0.5 + i * 1e-6, meta={"source_id": e.id, "index": i}))
                continue
            short = clip(text)
            out.append(Block(
                f"event:{e.id}", "event", text, tokens, Priority.MEDIUM, group=groups[i] and f"event-{groups[i]}",
                chain="events", order=i, summary=short, summary_tokens=self.counter.count(short) if short else 0,
                meta={"source_id": e.id, "index": i},
            ))
        return out

    async def assemble(
        self,
        *,
        app_name: str,
        user_id: str,
        query: str,
        events: Sequence[Event] = (),
        max_tokens: int | None = None,
    ) -> AssembledContext:
        """Packs memories for ``query``, then summaries and the newest of ``events``; returns this request's report.

        A degraded event stays in ``events`` whole (the caller renders); the
        report says it was degraded and what its clipped text costs.
        """
        budget = self.max_tokens if max_tokens is None else max_tokens
        memories, refused = self._memory_candidates(await self._memories(app_name, user_id, query))
        report = self._finish(prune([*memories, *self._event_blocks(events)], self._budget(budget)), refused)
        kept = [events[d.block.meta["index"]] for d in report.included if "index" in d.block.meta]
        out = AssembledContext(budget, report, kept)
        self._record(out)
        return out

    def _record(self, out: AssembledContext) -> None:
        signals.record_report(out.report)
        if out.invocation_id is not None:
            self._reports.setdefault(out.invocation_id, []).append(out)
            self._reports.move_to_end(out.invocation_id)
            while len(self._reports) > self.keep_reports:
                self._reports.popitem(last=False)
        if self.on_report is not None:
            self.on_report(out)

    def before_model_callback(self):
        """An ADK ``before_model_callback``: the request pruned to ``max_tokens``, memories as a cited data section.

        Raises :class:`~adk_oceanbase.errors.ContextBudgetError` when the system
        instruction, tool declarations and latest content alone exceed the budget.
        """

        async def callback(callback_context: Any, llm_request: Any) -> Optional[Any]:
            contents = list(llm_request.contents or [])
            query = ""
            for c in reversed(contents):
                if c.role == "user" and any(p.text for p in c.parts or []):
                    query = " ".join(p.text for p in c.parts if p.text)
                    break
            session = callback_context.session
            memories, refused = self._memory_candidates(await self._memories(session.app_name, session.user_id, query))
            instruction, tools = request_parts(llm_request)
            blocks = [*memories, *request_blocks(instruction, tools, contents, self.counter)]
            report = self._finish(prune(blocks, self._budget(self.max_tokens)), refused)
            kept = apply_to_contents(contents, report)
            block = render_memories([d for d in report.included if d.block.kind == "memory"])
            if block:
                _insert_before_latest_user_turn(kept, types.Content(role="user", parts=[types.Part(text=block)]))
            llm_request.contents = kept
            out = AssembledContext(self.max_tokens, report, invocation_id=callback_context.invocation_id)
            self._record(out)
            if report.dropped or report.degraded:
                logger.debug(
                    "context assembly of invocation %s: %d dropped, %d degraded",
                    callback_context.invocation_id, len(report.dropped), len(report.degraded),
                )
            return None

        return callback


def _insert_before_latest_user_turn(contents: list[types.Content], section: types.Content) -> None:
    """Puts ``section`` before the newest user text turn (ADK ``preload_memory``'s place), else first."""
    for i in range(len(contents) - 1, -1, -1):
        c = contents[i]
        if c.role == "user" and any(p.text for p in c.parts or []) and not any(p.function_response for p in c.parts or []):
            contents.insert(i, section)
            return
    contents.insert(0, section)
