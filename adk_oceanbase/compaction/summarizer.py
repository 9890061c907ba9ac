"""Summarizers for compaction: ADK's ``LlmEventSummarizer`` on the user's model, or an offline extractive one.

Both implement ADK's ``BaseEventsSummarizer``, so either can also go into an
``EventsCompactionConfig(summarizer=...)``.
"""

from __future__ import annotations

import json
from typing import Optional, Sequence

from google.adk.apps.base_events_summarizer import BaseEventsSummarizer
from google.adk.apps.llm_event_summarizer import LlmEventSummarizer
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.adk.models.base_llm import BaseLlm
from google.genai import types

__all__ = ["ExtractiveSummarizer", "llm_summarizer", "render_event", "render_events"]


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... [{len(text) - limit} more chars]"


def render_event(event: Event, *, max_chars: int = 2000) -> str:
    """One event as plain text lines (what it told the model), for summaries and verbatim key events."""
    lines: list[str] = []
    comp = event.actions.compaction if event.actions else None
    content = comp.compacted_content if comp is not None and comp.compacted_content is not None else event.content
    for part in (content.parts if content is not None and content.parts else []):
        if part.text and not part.thought:
            lines.append(f"{event.author}: {_clip(part.text, max_chars)}")
        if part.function_call is not None:
            args = json.dumps(part.function_call.args or {}, ensure_ascii=False, default=str)
            lines.append(f"{event.author} called {part.function_call.name}({_clip(args, max_chars)})")
        if part.function_response is not None:
            resp = json.dumps(part.function_response.response or {}, ensure_ascii=False, default=str)
            lines.append(f"{part.function_response.name} returned {_clip(resp, max_chars)}")
    if event.error_code or event.error_message:
        lines.append(f"{event.author} error {event.error_code or ''}: {_clip(event.error_message or '', max_chars)}")
    return "\n".join(lines)


def render_events(events: Sequence[Event], *, max_chars: int = 2000) -> str:
    return "\n".join(t for t in (render_event(e, max_chars=max_chars) for e in events) if t)


class ExtractiveSummarizer(BaseEventsSummarizer):
    """Deterministic, offline summary: the rendered events, clipped to ``max_chars``.

    No model call, no network: for tests, for offline demos and as the cheap
    end of a policy. Produces the same event shape as ADK's
    ``LlmEventSummarizer`` (author ``user``, ``actions.compaction`` spanning
    the first to the last event's timestamp, role ``model`` content).

    Args:
        max_chars: the summary text is clipped to this many characters
            (keeping its head: the oldest facts, and a tail marker).
        prefix: first line of the summary.
    """

    def __init__(self, *, max_chars: int = 4000, prefix: str = "Summary of earlier conversation:"):
        self.max_chars = max_chars
        self.prefix = prefix

    async def maybe_summarize_events(self, *, events: list[Event]) -> Optional[Event]:
        if not events:
            return None
        body = render_events(events, max_chars=max(200, self.max_chars // 4))
        text = _clip(f"{self.prefix}\n{body}", self.max_chars)
        return Event(
            author="user",
            invocation_id=Event.new_id(),
            actions=EventActions(
                compaction=EventCompaction(
                    start_timestamp=events[0].timestamp,
                    end_timestamp=events[-1].timestamp,
                    compacted_content=types.Content(role="model", parts=[types.Part(text=text)]),
                )
            ),
        )


def llm_summarizer(model: str | BaseLlm, *, prompt_template: str | None = None) -> LlmEventSummarizer:
    """ADK's ``LlmEventSummarizer`` on ``model`` (a ``BaseLlm`` or a model name ADK's registry resolves).

    The default summarizer for users: the same one ADK's Runner builds from
    the root agent's model when ``EventsCompactionConfig.summarizer`` is unset.
    """
    if isinstance(model, str):
        from google.adk.models.registry import LLMRegistry

        model = LLMRegistry.new_llm(model)
    return LlmEventSummarizer(llm=model, prompt_template=prompt_template)
