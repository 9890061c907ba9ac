"""Deterministic stand-ins for an LLM: scripted models that never touch the network."""

from __future__ import annotations

from typing import AsyncGenerator, Callable

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types


def user_event(text_: str, **delta) -> Event:
    """A user text event with a ``state_delta`` (the session tests' unit of work)."""
    return Event(
        author="user",
        invocation_id="inv",
        content=types.Content(role="user", parts=[types.Part(text=text_)]),
        actions=EventActions(state_delta=delta),
    )


def last_user_text(request: LlmRequest) -> str:
    for content in reversed(request.contents or []):
        if content.role == "user":
            for part in content.parts or []:
                if part.text:
                    return part.text
    return ""


def has_function_response(request: LlmRequest) -> bool:
    last = request.contents[-1] if request.contents else None
    return bool(last and any(p.function_response for p in last.parts or []))


class ScriptedLlm(BaseLlm):
    """A model whose reply is computed by ``script(request) -> Content``; records every request."""

    model: str = "scripted-llm"
    script: Callable[[LlmRequest], types.Content]
    requests: list[LlmRequest] = []

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request)
        yield LlmResponse(content=self.script(llm_request), turn_complete=True)


def text_reply(text: str) -> types.Content:
    return types.Content(role="model", parts=[types.Part(text=text)])


def call_reply(name: str, **args) -> types.Content:
    return types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(name=name, args=args))])
