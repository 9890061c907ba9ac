"""End to end with a real ADK Runner: a fact told in one session is recalled in a new one.

The model is scripted (no network) but everything else is real: Runner,
LlmAgent, ADK's ``preload_memory`` and ``load_memory`` tools, our session
service and our memory service sharing one Database on seekdb.
"""

from __future__ import annotations

import json
from typing import AsyncGenerator

import pytest
from google.adk.agents.llm_agent import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.tools.load_memory_tool import load_memory_tool
from google.adk.tools.preload_memory_tool import preload_memory_tool
from google.genai import types

from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService
from adk_oceanbase.sessions import OceanBaseSessionService

APP, USER = "recall_app", "u1"
FACT = "My favourite book is Dune by Frank Herbert."


class RecallLlm(BaseLlm):
    """Answers from whatever memory reached the request; calls load_memory first when told to."""

    model: str = "recall-fake"
    use_tool: bool = False
    seen: list[str] = []

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        texts, responses = [], []
        for c in llm_request.contents:
            for p in c.parts or []:
                if p.text:
                    texts.append(p.text)
                if p.function_response:
                    responses.append(json.dumps(p.function_response.response, default=str))
        self.seen.append("\n".join(texts + responses))
        last_user = next((t for t in reversed(texts) if "?" in t), None)
        if self.use_tool and last_user and not responses:
            call = types.Part(function_call=types.FunctionCall(name="load_memory", args={"query": last_user}))
            yield LlmResponse(content=types.Content(role="model", parts=[call]))
            return
        context = "\n".join(texts[:-1] + responses) if last_user else ""
        answer = "Your favourite book is Dune." if "Dune" in context else ("Noted." if not last_user else "I don't know.")
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part.from_text(text=answer)]))


async def run_turn(runner: Runner, session_id: str, message: str) -> str:
    final = ""
    async for event in runner.run_async(
        user_id=USER, session_id=session_id, new_message=types.Content(role="user", parts=[types.Part.from_text(text=message)])
    ):
        if event.content and event.content.parts and event.content.parts[0].text:
            final = event.content.parts[0].text
    return final


@pytest.mark.parametrize("use_tool", [False, True], ids=["preload_memory", "load_memory"])
async def test_fact_from_an_earlier_session_is_recalled_in_a_new_one(engine_db, use_tool):
    sessions = OceanBaseSessionService(database=engine_db)
    memory = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), settings=MemorySettings(bump_access=False))
    llm = RecallLlm(use_tool=use_tool)
    agent = LlmAgent(name="assistant", model=llm, instruction="Be helpful.",
                     tools=[load_memory_tool if use_tool else preload_memory_tool])
    runner = Runner(app_name=APP, agent=agent, session_service=sessions, memory_service=memory)
    try:
        s1 = await sessions.create_session(app_name=APP, user_id=USER)
        assert await run_turn(runner, s1.id, FACT) == "Noted."
        # Before anything was remembered, a new session cannot know it.
        s0 = await sessions.create_session(app_name=APP, user_id=USER)
        assert await run_turn(runner, s0.id, "What is my favourite book?") == "I don't know."

        done = await sessions.get_session(app_name=APP, user_id=USER, session_id=s1.id)
        await memory.add_session_to_memory(done)
        await memory.flush()

        s2 = await sessions.create_session(app_name=APP, user_id=USER)
        assert await run_turn(runner, s2.id, "What is my favourite book?") == "Your favourite book is Dune."
        assert FACT in llm.seen[-1]
        if use_tool:
            s2_done = await sessions.get_session(app_name=APP, user_id=USER, session_id=s2.id)
            calls = [p.function_call.name for e in s2_done.events for p in e.content.parts or [] if p.function_call]
            assert calls == ["load_memory"]
    finally:
        await runner.close()
        await memory.close()
        await sessions.close()
