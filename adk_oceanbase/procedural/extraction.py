"""From ADK events to runs: per invocation, the tool path taken, its failures and its outcome signal.  Pure, no I/O.

Seed 000 section 8.2.2 ("path-level signal"): replay the ``tool_call -> tool_result``
sequence of the event stream.  Events are grouped by ``invocation_id`` (two
invocations interleaved in one session stay apart), calls are paired with
their responses by call id (by name when the id is missing), and only the
shape of the arguments is kept: which arguments, which JSON types; never
their values (a 10 MB argument is ``"str"``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

__all__ = [
    "EXTRACTOR",
    "OUTCOME_KEY",
    "Invocation",
    "Judge",
    "ToolStep",
    "arg_shape",
    "extract_invocations",
    "path_hash",
]

EXTRACTOR = "path:v1"
"""The version of these rules, stored on every run: extraction is idempotent per (session, version)."""

OUTCOME_KEY = "procedure_outcome"
"""The default ``state_delta`` / ``custom_metadata`` key an agent sets to report an invocation's outcome.

Its value is ``True`` / ``False``, ``"success"`` / ``"failure"``, or
``{"success": bool, "reason": str, "scenario": str}``.
"""

MAX_ARGS = 32  # argument names kept per call; the rest are counted as "..."
MAX_NAME = 128  # a tool or argument name longer than this is cut (names are the tool's schema, not data)
MAX_STEPS = 64  # tool calls kept per invocation: a runaway loop is one long path, not a giant row
MAX_REASON = 200
_ERROR_STATUSES = frozenset({"error", "failed", "failure"})


@dataclass
class ToolStep:
    """One tool call of an invocation and what came back."""

    tool: str
    args: dict[str, str]
    call_id: str | None = None
    error: str | None = None
    answered: bool = False

    def shape(self) -> dict[str, Any]:
        return {"tool": self.tool, "args": self.args}


@dataclass
class Invocation:
    """What one invocation did: the unit a run counts."""

    invocation_id: str
    request: str = ""
    steps: list[ToolStep] = field(default_factory=list)
    iterations: int = 0
    exceptions: int = 0
    outcome: bool | None = None
    outcome_source: str = "none"
    reason: str | None = None
    scenario_label: str | None = None
    started: float | None = None
    event_ids: list[str] = field(default_factory=list)

    @property
    def tools(self) -> list[str]:
        """The path: tool names in call order, a retry of the same tool folded into one step."""
        out: list[str] = []
        for step in self.steps:
            if not out or out[-1] != step.tool:
                out.append(step.tool)
        return out

    @property
    def tool_errors(self) -> int:
        return sum(1 for s in self.steps if s.error is not None)

    @property
    def retries(self) -> int:
        return sum(1 for a, b in zip(self.steps, self.steps[1:]) if a.tool == b.tool and a.error is not None)

    @property
    def failed_tool(self) -> str | None:
        return next((s.tool for s in self.steps if s.error is not None), None)

    def shapes(self) -> list[dict[str, Any]]:
        """One shape per step of :attr:`tools` (the first call's arguments of a folded retry)."""
        out: list[dict[str, Any]] = []
        for step in self.steps:
            if not out or out[-1]["tool"] != step.tool:
                out.append(step.shape())
        return out

    def failure_reason(self) -> str | None:
        """The outcome's reason, else the last tool error, else the exception count; shortened."""
        reason = self.reason or next((s.error for s in reversed(self.steps) if s.error), None)
        if reason is None and self.exceptions:
            reason = "exception"
        return reason[:MAX_REASON] if reason else None


Judge = Callable[[Invocation], "bool | tuple[bool, str | None] | None"]
"""Decides an invocation's outcome when no event says it; ``None`` leaves it unknown."""


def path_hash(tools: Sequence[str]) -> str:
    """The stats key of a path: sha256 of the JSON list of tool names."""
    return hashlib.sha256(json.dumps(list(tools), ensure_ascii=False).encode()).hexdigest()


def _type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "str"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return type(value).__name__[:32]


def arg_shape(args: Any) -> dict[str, str]:
    """Argument names and JSON types, never values; nested objects are ``"object"``.

    Example:
        >>> arg_shape({"query": "x" * 10_000_000, "limit": 5, "filters": {"a": 1}})
        {'filters': 'object', 'limit': 'number', 'query': 'str'}
    """
    if not isinstance(args, Mapping):
        return {} if args is None else {"*": _type(args)}
    names = sorted(str(k)[:MAX_NAME] for k in args)
    kept = names[:MAX_ARGS]
    shape = {name: _type(args.get(name)) for name in kept}
    if len(names) > MAX_ARGS:
        shape["..."] = f"{len(names) - MAX_ARGS} more"
    return shape


def _error_of(response: Any) -> str | None:
    """An error a tool reported: an ``error`` field, or ``status`` naming a failure."""
    if not isinstance(response, Mapping):
        return None
    err = response.get("error")
    if err not in (None, "", False):
        return (err if isinstance(err, str) else json.dumps(err, default=str))[:MAX_REASON]
    status = response.get("status")
    if isinstance(status, str) and status.lower() in _ERROR_STATUSES:
        detail = response.get("message") or response.get("reason") or status
        return str(detail)[:MAX_REASON]
    return None


def _signal(value: Any) -> tuple[bool | None, str | None, str | None]:
    """(success, reason, scenario label) from an outcome value; (None, None, None) when it says nothing."""
    if isinstance(value, bool):
        return value, None, None
    if isinstance(value, str) and value.lower() in ("success", "failure"):
        return value.lower() == "success", None, None
    if isinstance(value, Mapping):
        ok = value.get("success")
        reason = value.get("reason")
        label = value.get("scenario")
        return (
            ok if isinstance(ok, bool) else None,
            str(reason)[:MAX_REASON] if reason else None,
            str(label)[:256] if label else None,
        )
    return None, None, None


def _text(content: Any) -> str:
    parts = getattr(content, "parts", None) or []
    return " ".join(p.text for p in parts if getattr(p, "text", None) and not getattr(p, "thought", False)).strip()


def _take_signal(inv: Invocation, value: Any, source: str) -> None:
    ok, reason, label = _signal(value)
    if label:
        inv.scenario_label = label
    if ok is not None:
        inv.outcome, inv.outcome_source = ok, source
        inv.reason = reason if not ok else None


def extract_invocations(
    events: Iterable[Any], *, outcome_key: str = OUTCOME_KEY, judge: Judge | None = None
) -> list[Invocation]:
    """The invocations of a session's events, in the order each began; those that called no tool are left out.

    Outcome signals, strongest last: ``state_delta[outcome_key]``, then
    ``custom_metadata[outcome_key]`` (an event's own), then ``judge`` when
    neither said anything.  :meth:`ProcedureStore.record_outcome` overrides
    all of them later.
    """
    by_id: dict[str, Invocation] = {}
    for event in events:
        inv_id = getattr(event, "invocation_id", None)
        if not inv_id:
            continue
        inv = by_id.setdefault(inv_id, Invocation(invocation_id=inv_id))
        if inv.started is None and getattr(event, "timestamp", None):
            inv.started = float(event.timestamp)
        if getattr(event, "id", None) and len(inv.event_ids) < MAX_STEPS:
            inv.event_ids.append(str(event.id)[:128])
        content = getattr(event, "content", None)
        if getattr(event, "author", None) == "user" and not inv.request:
            inv.request = _text(content)
        if getattr(event, "error_code", None) or getattr(event, "error_message", None):
            inv.exceptions += 1
        calls = 0
        for part in getattr(content, "parts", None) or []:
            if (fc := getattr(part, "function_call", None)) is not None and len(inv.steps) < MAX_STEPS:
                inv.steps.append(ToolStep(str(fc.name or "?")[:MAX_NAME], arg_shape(fc.args), fc.id))
                calls += 1
            elif (fr := getattr(part, "function_response", None)) is not None:
                step = _pending(inv.steps, fr.id, str(fr.name or "?")[:MAX_NAME])
                if step is not None:
                    step.answered = True
                    step.error = _error_of(fr.response)
        inv.iterations += 1 if calls else 0
        actions = getattr(event, "actions", None)
        delta = getattr(actions, "state_delta", None) or {}
        if outcome_key in delta:
            _take_signal(inv, delta[outcome_key], "state")
        meta = getattr(event, "custom_metadata", None) or {}
        if outcome_key in meta:
            _take_signal(inv, meta[outcome_key], "metadata")
    out = [inv for inv in by_id.values() if inv.steps]
    if judge is not None:
        for inv in out:
            if inv.outcome is None:
                verdict = judge(inv)
                ok, reason = verdict if isinstance(verdict, tuple) else (verdict, None)
                if isinstance(ok, bool):
                    inv.outcome, inv.outcome_source, inv.reason = ok, "judge", (reason if not ok else None)
    return out


def _pending(steps: list[ToolStep], call_id: str | None, name: str) -> ToolStep | None:
    """The call a response answers: the same id, else the oldest unanswered call of that tool."""
    if call_id:
        for step in steps:
            if step.call_id == call_id and not step.answered:
                return step
    return next((s for s in steps if s.tool == name and not s.answered), None)
