"""A deterministic Agno ``Model`` for tests: no network, answers from what it was given.

* Asked by Agno's ``MemoryManager`` (its tools include ``add_memory``): calls
  ``add_memory`` once with the fact in the user's last message ("I like
  ...", "I live ...", "I work ..."), then says "saved"; a question saves nothing.
* Otherwise: says how many user turns it was shown (history across runs) and
  which remembered facts its system message carried (memory recall).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, AsyncIterator, Iterator

from agno.models.base import Model
from agno.models.response import ModelResponse


def _text(message: Any) -> str:
    content = message.content
    return content if isinstance(content, str) else json.dumps(content) if content is not None else ""


@dataclass
class StubModel(Model):
    id: str = "stub-1"
    name: str = "Stub"
    provider: str = "tests"

    def _reply(self, messages: list[Any], tools: Any) -> ModelResponse:
        names = {(t.get("function") or {}).get("name") or t.get("name") for t in tools or [] if isinstance(t, dict)}
        if "add_memory" in names:
            if messages and messages[-1].role == "tool":
                return ModelResponse(role="assistant", content="saved")
            said = next(_text(m) for m in reversed(messages) if m.role == "user")
            found = re.search(r"(I (?:like|live|work) [^?.!]+)(?:[.!]|$)", said)
            if found is None:  # a question, not a fact: nothing to remember
                return ModelResponse(role="assistant", content="nothing to save")
            fact = found.group(1).strip()
            call = {"id": "call_1", "type": "function",
                    "function": {"name": "add_memory", "arguments": json.dumps({"memory": f"User says: {fact}", "topics": ["profile"]})}}
            return ModelResponse(role="assistant", tool_calls=[call])
        system = next((_text(m) for m in messages if m.role == "system"), "")
        users = [_text(m) for m in messages if m.role == "user"]
        recalled = sorted(set(re.findall(r"User says: ([^\n<]+)", system)))
        return ModelResponse(role="assistant", content=f"turns={len(users)} recalled={recalled}")

    def invoke(self, messages: list[Any], *args: Any, tools: Any = None, **kwargs: Any) -> ModelResponse:
        return self._reply(messages, tools)

    async def ainvoke(self, messages: list[Any], *args: Any, tools: Any = None, **kwargs: Any) -> ModelResponse:
        return self._reply(messages, tools)

    def invoke_stream(self, messages: list[Any], *args: Any, tools: Any = None, **kwargs: Any) -> Iterator[ModelResponse]:
        yield self._reply(messages, tools)

    async def ainvoke_stream(self, messages: list[Any], *args: Any, tools: Any = None, **kwargs: Any) -> AsyncIterator[ModelResponse]:
        yield self._reply(messages, tools)

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response
