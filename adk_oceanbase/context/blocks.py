"""Context blocks, the budget they are packed into, and the per-request report of what happened to each.

A block is one candidate for the model's context window (seed 004 §5, §8.1):
the system instruction, the tool declarations, a memory, a compaction
summary, a conversation event, a piece of evidence.  It carries what the
pruner needs to decide without reading it: its token cost, a priority, a
must-keep flag, an optional time-to-live, a sensitivity level, a group (a
function call and its response travel together) and an optional summary it
can be degraded to.

The report (:class:`ContextReport`) belongs to one request: the pruner returns
a new one every call and nothing is kept on a shared object, so concurrent
sessions served by one assembler never see each other's decisions.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import ValidationError

__all__ = ["Action", "Block", "Budget", "ContextReport", "Decision", "Priority", "Sensitivity"]

Action = Literal["kept", "degraded", "dropped"]


class Priority(enum.IntEnum):
    """Higher is packed first. ``MUST`` blocks are never dropped (at most degraded)."""

    LOW = 10
    MEDIUM = 20
    HIGH = 30
    MUST = 40


class Sensitivity(enum.IntEnum):
    """How sensitive a block's text is; the budget says the highest level a request may carry."""

    PUBLIC = 0
    INTERNAL = 1
    CONFIDENTIAL = 2
    SECRET = 3


@dataclass(frozen=True)
class Block:
    """One candidate for the context window.

    Attributes:
        block_id: unique within a request (an event id, a memory id, ``"system"``).
        kind: what it is: ``instruction``, ``tools``, ``memory``, ``summary``,
            ``event``, ``content``, ``evidence`` (free text; reports group by it).
        text: what the model would read.
        tokens: its cost in the window (counted by the caller's counter).
        priority: packing order between blocks; ties go to ``score``, then recency.
        must_keep: never dropped; degraded to ``summary`` if that is what fits.
        created_at: epoch seconds, for ``ttl_s``.
        ttl_s: past ``created_at + ttl_s`` the block is stale: degraded when it
            has a summary, else dropped.
        sensitivity: dropped when above the budget's ``max_sensitivity``.
        group: blocks sharing a group are kept or dropped together (a function
            call and its response): never half a group.
        summary / summary_tokens: the shorter stand-in an over-budget or stale
            block degrades to.
        chain: blocks of one chain (the conversation) are contiguous: once one
            is dropped, every block of the chain considered after it is dropped
            too ("older than the budget cut"), so the kept history has no hole.
        score: relevance (memories) or any tie-breaker; higher first.
        order: position in the prompt (ascending); the report lists kept blocks
            in this order.
        meta: carried through untouched (labels, ids) for the caller's renderer.
    """

    block_id: str
    kind: str
    text: str
    tokens: int
    priority: Priority = Priority.MEDIUM
    must_keep: bool = False
    created_at: float | None = None
    ttl_s: float | None = None
    sensitivity: Sensitivity = Sensitivity.PUBLIC
    group: str | None = None
    summary: str | None = None
    summary_tokens: int = 0
    chain: str | None = None
    score: float = 0.0
    order: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.tokens, int) or self.tokens < 0:
            raise ValidationError(f"Block {self.block_id!r}: tokens must be a non-negative integer")
        if self.summary is not None and (not isinstance(self.summary_tokens, int) or self.summary_tokens < 0):
            raise ValidationError(f"Block {self.block_id!r}: summary_tokens must be a non-negative integer")
        if self.ttl_s is not None and self.ttl_s < 0:
            raise ValidationError(f"Block {self.block_id!r}: ttl_s must be >= 0")

    def expired(self, now: float) -> bool:
        return self.ttl_s is not None and self.created_at is not None and now > self.created_at + self.ttl_s


@dataclass(frozen=True)
class Budget:
    """The model's window and what of it the packed blocks may use (seed 004 §8.1).

    ``available = max_input_tokens - reserve_for_reply``: the system
    instruction and the tool declarations are blocks like any other (must-keep),
    so they are paid out of ``available`` too, not on top of it.

    Attributes:
        max_input_tokens: the model's input limit (or the share of it this request may use).
        reserve_for_reply: tokens left free for the model's answer.
        kind_caps: optional most tokens per kind (e.g. ``{"memory": 800}``), so
            memories never crowd out the conversation.
        max_sensitivity: blocks above it are dropped whatever the room.
    """

    max_input_tokens: int
    reserve_for_reply: int = 0
    kind_caps: dict[str, int] = field(default_factory=dict)
    max_sensitivity: Sensitivity = Sensitivity.SECRET

    def __post_init__(self) -> None:
        for name in ("max_input_tokens", "reserve_for_reply"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValidationError(f"Budget.{name} must be a non-negative integer, got {value!r}")
        if self.reserve_for_reply > self.max_input_tokens:
            raise ValidationError("Budget.reserve_for_reply cannot exceed max_input_tokens")
        for kind, cap in self.kind_caps.items():
            if not isinstance(cap, int) or cap < 0:
                raise ValidationError(f"Budget.kind_caps[{kind!r}] must be a non-negative integer")

    @property
    def available(self) -> int:
        return self.max_input_tokens - self.reserve_for_reply


@dataclass(frozen=True)
class Decision:
    """What happened to one block, and why (seed 004 ``PruneDecision``)."""

    block: Block
    action: Action
    reason: str
    tokens: int
    """Tokens it costs in the request: the full text, its summary's, or 0 when dropped."""

    @property
    def text(self) -> str:
        """What the model reads for this block: its text, its summary, or nothing."""
        if self.action == "kept":
            return self.block.text
        return self.block.summary or "" if self.action == "degraded" else ""


@dataclass
class ContextReport:
    """The decisions of one request: kept and degraded blocks in prompt order, dropped ones with reasons."""

    budget: Budget
    decisions: list[Decision] = field(default_factory=list)

    def _of(self, action: Action) -> list[Decision]:
        return [d for d in self.decisions if d.action == action]

    @property
    def kept(self) -> list[Decision]:
        return self._of("kept")

    @property
    def degraded(self) -> list[Decision]:
        return self._of("degraded")

    @property
    def dropped(self) -> list[Decision]:
        return self._of("dropped")

    @property
    def included(self) -> list[Decision]:
        """Kept and degraded blocks in prompt order: what the model reads."""
        return sorted((d for d in self.decisions if d.action != "dropped"), key=lambda d: d.block.order)

    @property
    def used_tokens(self) -> int:
        return sum(d.tokens for d in self.decisions)

    def counts(self) -> dict[str, dict[str, int]]:
        """``{kind: {action: n}}``, e.g. for a metric or a log line."""
        out: dict[str, dict[str, int]] = {}
        for d in self.decisions:
            per = out.setdefault(d.block.kind, {})
            per[d.action] = per.get(d.action, 0) + 1
        return out

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view (ids, kinds, actions, reasons, tokens; never the texts)."""
        return {
            "max_input_tokens": self.budget.max_input_tokens,
            "reserve_for_reply": self.budget.reserve_for_reply,
            "used_tokens": self.used_tokens,
            "decisions": [
                {"block_id": d.block.block_id, "kind": d.block.kind, "action": d.action, "reason": d.reason, "tokens": d.tokens}
                for d in self.decisions
            ],
        }
