"""Handing the agent what worked: an ADK tool, and an instruction block within a token budget.

Seed 000 sections 8.2.5 / A.1.9: the block is a fixed, labelled section
(``## Procedures that worked (advice)``) that says it is advice, not fact;
it is cut to a token budget, best path first; tainted or low-confidence
paths never appear.  A failing database never fails the agent's turn: the
block is left out and a warning logged.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..tokens import EstimatingTokenCounter, TokenCounter
from .recall import Procedure, Recall

if TYPE_CHECKING:  # the store imports the embedder stack; serving is imported with the package
    from .store import ProcedureStore

__all__ = ["HEADER", "ProcedureAdvice", "format_advice", "recall_procedures_tool"]

logger = logging.getLogger(__name__)

HEADER = "## Procedures that worked (advice)"
_PREAMBLE = "From past runs of similar requests; advice, not fact: verify results as usual."


def _path(p: Procedure) -> str:
    def step(s: dict[str, Any]) -> str:
        args = ", ".join(f"{k}: {v}" for k, v in (s.get("args") or {}).items())
        return f"{s.get('tool')}({args})"

    return " -> ".join(step(s) for s in p.steps)


def _worked(p: Procedure) -> str:
    line = (f"- Suggested path: {_path(p)}; {round((p.recent_success_rate or 0) * 100)}% of its "
            f"{p.recent_samples} recent runs succeeded (confidence {p.confidence:.2f}, "
            f"{p.samples} runs in all)")
    if p.median_iterations is not None:
        line += f", median {p.median_iterations:g} iteration(s)"
    line += _worse(p)
    if p.failure_reasons:
        top = p.failure_reasons[0]
        line += f"; when it failed: {top['tool'] or 'outcome'}: {top['reason'] or 'no reason given'}"
    return line


def _avoid(p: Procedure) -> str:
    line = (f"- Avoid: {' -> '.join(p.tools)}; {round((1 - (p.recent_success_rate or 0)) * 100)}% of its "
            f"{p.recent_samples} recent runs failed")
    line += _worse(p)
    if p.failure_reasons:
        top = p.failure_reasons[0]
        line += f" ({top['tool'] or 'outcome'}: {top['reason'] or 'no reason given'})"
    return line


def _worse(p: Procedure) -> str:
    """A path that broke is said to have broken: "it used to work" is what a reader needs to know."""
    if not p.getting_worse:
        return ""
    was = "" if p.earlier_success_rate is None else f" (was {round(p.earlier_success_rate * 100)}%)"
    return f"; getting worse{was}"


def format_advice(recall: Recall, *, budget_tokens: int = 200, counter: TokenCounter | None = None) -> str:
    """The advice block of ``recall`` within ``budget_tokens``, or ``""`` when nothing fits or nothing is known.

    Lines are added best first (suggested paths, then paths to avoid) while
    the whole block stays within budget.

    Example:
        >>> format_advice(Recall(scenario_id=None, similarity=0.0, procedures=[], avoid=[]))
        ''
    """
    counter = counter or EstimatingTokenCounter()
    lines = [HEADER, _PREAMBLE]
    used = counter.count("\n".join(lines))
    added = 0
    for text in [*(_worked(p) for p in recall.procedures), *(_avoid(p) for p in recall.avoid)]:
        cost = counter.count("\n" + text)
        if used + cost > budget_tokens:
            continue
        lines.append(text)
        used += cost
        added += 1
    return "\n".join(lines) if added else ""


class ProcedureAdvice:
    """Injects the advice block into an agent's model requests.

    Use as ``LlmAgent(before_model_callback=advice.before_model_callback)``,
    or as (part of) an instruction provider: ``await advice.instruction(ctx)``.
    The request's text (the invocation's user message) picks the scenario.

    Args:
        store: the :class:`ProcedureStore`.
        budget_tokens: the most the block may cost (``tokens.EstimatingTokenCounter`` unless ``counter``).
        top_k: paths recalled before the budget cuts.
    """

    def __init__(self, store: "ProcedureStore", *, budget_tokens: int = 200, top_k: int = 3,
                 counter: TokenCounter | None = None):
        self._store = store
        self._budget = int(budget_tokens)
        self._top_k = top_k
        self._counter = counter or EstimatingTokenCounter()

    async def block(self, app_name: str, user_id: str | None, request: str) -> str:
        """The advice for ``request``, or ``""``."""
        if not request.strip():
            return ""
        try:
            recall = await self._store.recall_procedures(app_name, request, user_id=user_id, top_k=self._top_k)
        except Exception:  # noqa: BLE001 - advice is optional; the turn must go on without it
            logger.warning("procedural recall failed; the advice block is left out", exc_info=True)
            return ""
        return format_advice(recall, budget_tokens=self._budget, counter=self._counter)

    async def instruction(self, ctx: Any) -> str:
        """An ADK instruction provider (``ReadonlyContext`` in, text out)."""
        session = ctx.session
        return await self.block(session.app_name, session.user_id, _user_text(ctx.user_content))

    async def before_model_callback(self, callback_context: Any, llm_request: Any) -> None:
        """Appends the block to the request's system instruction; returns ``None`` so the model is called."""
        text = await self.instruction(callback_context)
        if text:
            llm_request.append_instructions([text])
        return None


def _user_text(content: Any) -> str:
    parts = getattr(content, "parts", None) or []
    return " ".join(p.text for p in parts if getattr(p, "text", None)).strip()


def recall_procedures_tool(store: "ProcedureStore", *, top_k: int = 3) -> Any:
    """An ADK ``FunctionTool`` named ``recall_procedures`` the model can call with the task it is about to do."""
    from google.adk.tools.function_tool import FunctionTool
    from google.adk.tools.tool_context import ToolContext

    async def recall_procedures(task: str, tool_context: ToolContext) -> dict:
        """Looks up which tool paths worked before for a task like this one, and which failed.

        Args:
            task: the task in a sentence, e.g. "refund order 1234".

        Returns:
            The suggested tool paths with their success rates and confidence, and the paths to avoid.
            Advice from past runs, not facts.
        """
        session = tool_context.session
        recall = await store.recall_procedures(session.app_name, task, user_id=session.user_id, top_k=top_k)
        return recall.as_dict()

    return FunctionTool(recall_procedures)
