"""Budgeted context assembly: memories, summary, recent events in priority order, with kept/dropped reasons."""

from __future__ import annotations

from typing import AsyncGenerator

from google.adk.agents.llm_agent import LlmAgent
from google.adk.events.event import Event
from google.adk.memory.in_memory_memory_service import InMemoryMemoryService
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.genai import types
from pydantic import PrivateAttr

from adk_oceanbase import OceanBaseSessionService
from adk_oceanbase.compaction import ContextAssembler, ExtractiveSummarizer, KeepLastN, compact_session

APP = "asm_app"


def ev(i: int, text: str, author: str = "user") -> Event:
    return Event(author=author, invocation_id=f"i{i}", timestamp=1_740_000_000.0 + i,
                 content=types.Content(role="user" if author == "user" else "model", parts=[types.Part(text=text)]))


async def memory_with_facts() -> InMemoryMemoryService:
    mem = InMemoryMemoryService()
    from google.adk.sessions.session import Session

    past = Session(id="past", app_name=APP, user_id="u", events=[
        ev(1, "My favourite city is Hangzhou and I love tea"),
        ev(2, "Hangzhou West Lake trip was great", author="assistant"),
    ])
    await mem.add_session_to_memory(past)
    return mem


async def test_priority_order_budget_and_reasons(engine_db):
    svc = OceanBaseSessionService(database=engine_db, compaction_overlap=0)
    s = await svc.create_session(app_name=APP, user_id="u")
    for i in range(40):
        await svc.append_event(s, ev(i, f"message {i} " + "words " * 10, "user" if i % 2 == 0 else "assistant"))
    await compact_session(svc, app_name=APP, user_id="u", session_id=s.id, policy=KeepLastN(keep_last=10, min_batch=1),
                         summarizer=ExtractiveSummarizer(max_chars=300))
    live = (await svc.get_session(app_name=APP, user_id="u", session_id=s.id)).events
    asm = ContextAssembler(await memory_with_facts(), max_tokens=400, memory_top_k=1)
    out = await asm.assemble(app_name=APP, user_id="u", query="Hangzhou", events=live)
    kinds = [i.kind for i in out.kept]
    assert kinds[0] == "memory" and "summary" in kinds and kinds[-1] == "event"
    assert kinds.index("summary") < kinds.index("event")
    assert out.used_tokens <= 400
    assert any(d.kind == "memory" and "top_k" in d.reason for d in out.dropped)  # two matches, top_k=1
    dropped_events = [d for d in out.dropped if d.kind == "event"]
    kept_events = [e for e in out.events if not e.actions.compaction]
    assert kept_events == live[len(live) - 1 - len(kept_events) : len(live) - 1]  # newest, contiguous (summary is last by seq)
    assert len(kept_events) + len(dropped_events) == 10
    # a budget too small for anything but the newest event: everything else dropped with a reason
    tiny = await asm.assemble(app_name=APP, user_id="u", query="nothing matches", events=live, max_tokens=20)
    assert [i.kind for i in tiny.kept] == ["event"] and all(d.reason for d in tiny.dropped)


class RecordingLlm(BaseLlm):
    model: str = "recording"
    _requests: list[LlmRequest] = PrivateAttr(default_factory=list)

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        self._requests.append(llm_request.model_copy(deep=True))
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="ok " * 30)]))


async def test_before_model_callback_injects_memories_within_budget(engine_db):
    svc = OceanBaseSessionService(database=engine_db)
    seen = []
    asm = ContextAssembler(await memory_with_facts(), max_tokens=120, memory_top_k=2, memory_max_tokens=40, on_report=seen.append)
    llm = RecordingLlm()
    agent = LlmAgent(name="assistant", model=llm, instruction="Be brief.", before_model_callback=asm.before_model_callback())
    runner = Runner(app_name=APP, agent=agent, session_service=svc)
    s = await svc.create_session(app_name=APP, user_id="u")
    for turn in ["tell me about Hangzhou " + "please " * 10] * 5:
        async for _ in runner.run_async(user_id="u", session_id=s.id, new_message=types.Content(role="user", parts=[types.Part(text=turn)])):
            pass
    last = llm._requests[-1]
    memories = last.contents[-2].parts[0].text  # a data section before the latest turn, not the system instruction
    assert "<RECALLED_MEMORIES>" in memories and "Hangzhou" in memories
    assert "Hangzhou" not in last.config.system_instruction
    assert len(seen) == 5 and all(r.used_tokens <= 120 for r in seen) and any(d.kind == "content" for d in seen[-1].dropped)
    assert asm.reports_for(seen[-1].invocation_id) == [seen[-1]]  # the report belongs to its invocation
    assert len(last.contents) < 9 and last.contents[-1].parts[0].text.startswith("tell me about Hangzhou")
