"""An ADK ``LlmRequest`` as blocks, and the pruner's decisions applied back to its contents.

The system instruction and the tool declarations are must-keep blocks: they
are sent whatever happens, so the budget pays for them first (before, only
memories and contents were counted and a long instruction could push the
request past the model's window).  The latest content is must-keep too.
Contents form one chain (the conversation, newest first), and a function
call shares a group with its responses, so the pruner never sends a call
without its answer or an answer without its call.  A long content can
degrade to a clipped copy: a function response keeps its part (the model
API pairs it with the call) with the result clipped.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from google.genai import types

from ..tokens import TokenCounter
from .blocks import Block, ContextReport, Priority

__all__ = ["CLIP_CHARS", "apply_to_contents", "call_groups", "clip", "content_text", "request_blocks", "request_parts"]

CLIP_CHARS = 600
"""A degraded content keeps this many characters of its text (about 150 tokens of English)."""


def clip(text: str, limit: int = CLIP_CHARS) -> str | None:
    """The clipped stand-in of a text at least twice ``limit`` long, else ``None`` (not worth degrading)."""
    if len(text) < 2 * limit:
        return None
    return f"{text[:limit]} ... [clipped: {len(text) - limit} more characters]"


def content_text(content: types.Content) -> str:
    parts = []
    for p in content.parts or []:
        if p.text:
            parts.append(p.text)
        elif p.function_call is not None:
            parts.append(json.dumps({"call": p.function_call.name, "args": p.function_call.args}, default=str))
        elif p.function_response is not None:
            parts.append(json.dumps({"response": p.function_response.name, "result": p.function_response.response}, default=str))
    return "\n".join(parts)


def _instruction_text(config: Any) -> str:
    si = getattr(config, "system_instruction", None) if config is not None else None
    if si is None:
        return ""
    if isinstance(si, str):
        return si
    if isinstance(si, types.Content):
        return content_text(si)
    return str(si)


def _tools_text(config: Any) -> str:
    tools = getattr(config, "tools", None) if config is not None else None
    if not tools:
        return ""
    dumped = [t.model_dump(exclude_none=True, mode="json") if hasattr(t, "model_dump") else str(t) for t in tools]
    return json.dumps(dumped, sort_keys=True, default=str)


def call_groups(contents: Sequence[types.Content]) -> list[str | None]:
    """A group per function call: its content and the contents answering it (by call id, else the next content)."""
    groups: list[str | None] = [None] * len(contents)
    open_calls: dict[str, str] = {}
    last_call_group: str | None = None
    for i, c in enumerate(contents):
        parts = c.parts or []
        calls = [p.function_call for p in parts if p.function_call is not None]
        responses = [p.function_response for p in parts if p.function_response is not None]
        if responses:
            ids = [r.id for r in responses if r.id]
            owner = next((open_calls[x] for x in ids if x in open_calls), None) or last_call_group
            groups[i] = owner
        if calls:
            groups[i] = groups[i] or f"call@{i}"
            for call in calls:
                if call.id:
                    open_calls[call.id] = groups[i]
            last_call_group = groups[i]
        elif not responses:
            last_call_group = None
    return groups


def request_blocks(
    system_instruction: str, tools: str, contents: Sequence[types.Content], counter: TokenCounter
) -> list[Block]:
    """Blocks for a request: instruction and tools (must keep, first), then contents oldest first, the newest must-keep."""
    blocks: list[Block] = []
    if system_instruction:
        blocks.append(Block("instruction", "instruction", system_instruction, counter.count(system_instruction), Priority.MUST, must_keep=True, order=-3))
    if tools:
        blocks.append(Block("tools", "tools", tools, counter.count(tools), Priority.MUST, must_keep=True, order=-2))
    groups = call_groups(contents)
    for i, c in enumerate(contents):
        text = content_text(c)
        short = content_text(_degrade(c))  # exactly what a degraded content sends, so the count is exact
        short = short if len(short) < len(text) else None
        blocks.append(
            Block(
                f"content:{i}", "content", text, counter.count(text), Priority.MEDIUM,
                must_keep=i == len(contents) - 1, group=groups[i], chain="conversation", order=i,
                summary=short, summary_tokens=counter.count(short) if short else 0,
            )
        )
    return blocks


def request_parts(llm_request: Any) -> tuple[str, str]:
    """The system instruction and the tool declarations of an ``LlmRequest``, as the text the budget counts."""
    return _instruction_text(llm_request.config), _tools_text(llm_request.config)


def _degrade(content: types.Content) -> types.Content:
    parts = []
    for p in content.parts or []:
        if p.text and (short := clip(p.text)):
            parts.append(types.Part(text=short))
        elif p.function_response is not None:
            raw = json.dumps(p.function_response.response, default=str)
            short = clip(raw)
            fr = p.function_response
            parts.append(p if short is None else types.Part(function_response=types.FunctionResponse(id=fr.id, name=fr.name, response={"clipped_result": short})))
        else:
            parts.append(p)
    return types.Content(role=content.role, parts=parts)


def apply_to_contents(contents: Sequence[types.Content], report: ContextReport) -> list[types.Content]:
    """The contents the report keeps, in order, degraded ones clipped."""
    out = []
    for d in report.included:
        if not d.block.block_id.startswith("content:"):
            continue
        content = contents[int(d.block.block_id.split(":", 1)[1])]
        out.append(content if d.action == "kept" else _degrade(content))
    return out
