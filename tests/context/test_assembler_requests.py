"""The assembler on real ADK requests (issue #30): the whole request fits, calls keep their responses, reports are per request."""

from __future__ import annotations

import asyncio
from typing import AsyncGenerator

from google.adk.agents.llm_agent import LlmAgent
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.genai import types
from pydantic import PrivateAttr

from adk_oceanbase import OceanBaseSessionService
from adk_oceanbase.compaction import ContextAssembler
from adk_oceanbase.context.memories import memory_blocks
from adk_oceanbase.context.requests import content_text, request_parts
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService
from adk_oceanbase.tokens import EstimatingTokenCounter

APP, USER = "ctx_asm", "u1"
INSTRUCTION = "You are a weather assistant. " + "Answer in one short sentence and cite the tool result. " * 8


def lookup_weather(city: str) -> dict:
    """Looks up the weather of a city."""
    return {"city": city, "report": f"{city} forecast " + "sunny with light wind " * 120}


class ToolLlm(BaseLlm):
    """Calls the tool after each user turn, then answers; records every request as sent."""

    model: str = "tool-llm"
    _requests: list[LlmRequest] = PrivateAttr(default_factory=list)

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        await asyncio.sleep(0)  # let concurrent sessions interleave
        self._requests.append(llm_request.model_copy(deep=True))
        last = llm_request.contents[-1]
        if any(p.function_response for p in last.parts or []):
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="It is sunny.")]))
        else:
            city = (last.parts[0].text or "x").split()[-1]
            call = types.FunctionCall(name="lookup_weather", args={"city": city})
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))


def sent_tokens(request: LlmRequest) -> int:
    counter = EstimatingTokenCounter()
    instruction, tools = request_parts(request)
    return counter.count(instruction) + counter.count(tools) + sum(counter.count(content_text(c)) for c in request.contents)


async def run(svc, agent, session_id: str, turns: list[str]) -> None:
    runner = Runner(app_name=APP, agent=agent, session_service=svc)
    for turn in turns:
        async for _ in runner.run_async(user_id=USER, session_id=session_id, new_message=types.Content(role="user", parts=[types.Part(text=turn)])):
            pass


async def test_the_sent_request_fits_with_instruction_tools_and_reply_reserve(engine_db):
    svc = OceanBaseSessionService(database=engine_db)
    reports = []
    asm = ContextAssembler(max_tokens=1600, reserve_for_reply=200, on_report=reports.append)
    llm = ToolLlm()
    agent = LlmAgent(name="weather", model=llm, instruction=INSTRUCTION, tools=[lookup_weather], before_model_callback=asm.before_model_callback())
    s = await svc.create_session(app_name=APP, user_id=USER)
    await run(svc, agent, s.id, [f"weather in city{i}" for i in range(6)])
    assert len(llm._requests) == 12 and len(reports) == 12
    for request, out in zip(llm._requests, reports):
        assert sent_tokens(request) <= 1400  # everything the model reads, counted independently
        assert out.used_tokens <= 1400
        kinds = {d.block.kind: d.action for d in out.report.decisions}
        assert kinds["instruction"] == kinds["tools"] == "kept"
        calls = set()
        for c in request.contents:  # never a response without its call, never a call without its response (but the newest)
            calls |= {p.function_call.id for p in c.parts or [] if p.function_call}
            assert all(p.function_response.id in calls for p in c.parts or [] if p.function_response)
    last = reports[-1]
    assert last.dropped and {d.reason for d in last.dropped} & {"older than the budget cut"}
    assert any(d.action == "degraded" for d in last.report.decisions)  # a long tool result clipped, not dropped
    clipped = [p.function_response.response for c in llm._requests[-1].contents for p in c.parts or [] if p.function_response]
    assert any("clipped_result" in r for r in clipped) and not all("clipped_result" in r for r in clipped)


async def test_reports_belong_to_their_request_under_concurrent_sessions(engine_db):
    svc = OceanBaseSessionService(database=engine_db)
    asm = ContextAssembler(max_tokens=4000)
    agent = LlmAgent(name="weather", model=ToolLlm(), instruction="Be brief.", tools=[lookup_weather], before_model_callback=asm.before_model_callback())
    a = await svc.create_session(app_name=APP, user_id=USER)
    b = await svc.create_session(app_name=APP, user_id=USER)
    await asyncio.gather(run(svc, agent, a.id, ["weather in alpha"] * 3), run(svc, agent, b.id, ["weather in beta"] * 3))
    for sid, mine, theirs in ((a.id, "alpha", "beta"), (b.id, "beta", "alpha")):
        session = await svc.get_session(app_name=APP, user_id=USER, session_id=sid)
        invocations = {e.invocation_id for e in session.events}
        assert len(invocations) == 3
        for inv in invocations:
            reports = asm.reports_for(inv)
            assert len(reports) == 2 and all(r.invocation_id == inv for r in reports)  # the call, then the answer
            texts = " ".join(d.block.text for r in reports for d in r.report.decisions)
            assert mine in texts and theirs not in texts


async def test_memories_are_cited_with_their_source_session(engine_db):
    memory = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), settings=MemorySettings(bump_access=False))
    try:
        await memory.add_memory(app_name=APP, user_id=USER, memories=[MemoryEntry(
            author="user", timestamp="2025-03-02T10:00:00+00:00", content=types.Content(parts=[types.Part(text="I live in Hangzhou and like tea")]),
            custom_metadata={"confidence": 0.8, "session_id": "trip-1"})])
        await memory.flush()
        asm = ContextAssembler(memory, max_tokens=2000)
        out = await asm.assemble(app_name=APP, user_id=USER, query="Hangzhou tea")
        assert "[2025-03-02, user, session trip-1, confidence 0.80] I live in Hangzhou and like tea" in out.memory_block()
        assert [i.kind for i in out.kept] == ["memory"] and out.kept[0].label == "2025-03-02, user, session trip-1, confidence 0.80"
    finally:
        await memory.close()


def test_memories_are_ordered_by_relevance_times_confidence() -> None:
    def entry(text: str, confidence: float) -> MemoryEntry:
        return MemoryEntry(author="user", content=types.Content(parts=[types.Part(text=text)]), custom_metadata={"confidence": confidence})

    found = [entry("guess", 0.2), entry("sure", 0.9), entry("fair", 0.75)]  # search order: relevance 1, 1/2, 1/3
    blocks, refused = memory_blocks(found, EstimatingTokenCounter(), top_k=3)
    assert [b.text for b in blocks] == ["sure", "fair", "guess"]  # 0.45, 0.25, 0.2
    assert refused == []
    blocks, refused = memory_blocks(found, EstimatingTokenCounter(), top_k=1)
    assert [b.text for b in blocks] == ["guess"] and [why for _, why in refused] == ["rank 2 > top_k 1", "rank 3 > top_k 1"]
