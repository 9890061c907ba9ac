"""What becomes a memory: the turn policy (pure) and LLM extraction driven by a scripted ADK model."""

from __future__ import annotations

import json
import re
import time
from datetime import datetime
from typing import AsyncGenerator, Callable

import pytest
from google.adk.events.event import Event
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from sqlalchemy import text

from adk_oceanbase.memory import HashEmbedder, LlmExtractor, MemorySettings, OceanBaseMemoryService, embedding_text, is_trivial
from adk_oceanbase.memory.extraction import group_exchanges, turn_drafts

APP, USER = "app", "u1"


def ev(author: str, txt: str, ts: float = 1_700_000_000.0, thought: bool = False) -> Event:
    parts = [types.Part(text=txt, thought=True)] if thought else [types.Part.from_text(text=txt)]
    return Event(id=Event.new_id(), invocation_id="i", author=author, timestamp=ts, content=types.Content(role="user", parts=parts))


class ScriptedLlm(BaseLlm):
    """A fake ADK model: each call's answer comes from ``script(prompt)``; prompts are recorded."""

    model: str = "scripted"
    script: Callable[[str], str]
    prompts: list[str] = []

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        prompt = "\n".join(p.text for c in llm_request.contents for p in c.parts or [] if p.text)
        self.prompts.append(prompt)
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part.from_text(text=self.script(prompt))]))


@pytest.mark.parametrize("txt", ["ok", "OK!", "Thanks", "thank you.", "got it", "好的", "谢谢", "明白了", "嗯嗯", "hi :)", "yes", "abc"])
def test_trivial_turns(txt):
    assert is_trivial(txt)


@pytest.mark.parametrize("txt", ["I moved to Oslo in 2021.", "我叫李雷", "My cat is Tom", "明天下午三点开会"])
def test_meaningful_turns(txt):
    assert not is_trivial(txt)


def test_embedding_text_carries_speaker_and_date():
    assert embedding_text("Caroline", datetime(2023, 5, 8, 13, 56), "I went to a support group.") == \
        "8 May 2023, Caroline: I went to a support group."
    assert embedding_text(None, datetime(2023, 5, 8), "x") == "8 May 2023: x"


def test_turn_drafts_policy():
    events = [ev("user", "I work as a marine biologist in Perth."), ev("agent", "thinking about it", thought=True),
              ev("agent", "That sounds like a fascinating job!"), ev("user", "thanks")]
    drafts = turn_drafts(APP, USER, "s1", events, MemorySettings())
    assert [d.author for d in drafts] == ["user", "agent"]
    assert drafts[0].event_ids == [events[0].id] and drafts[0].extractor == "turn:v1"
    assert drafts[0].memory_id == turn_drafts(APP, USER, "s1", events, MemorySettings())[0].memory_id
    only_user = turn_drafts(APP, USER, "s1", events, MemorySettings(memory_authors=("user",)))
    assert [d.content for d in only_user] == ["I work as a marine biologist in Perth."]


def test_group_exchanges():
    events = [ev("user", "a1"), ev("agent", "b1"), ev("agent", "b2"), ev("user", "a2"), ev("agent", "b3")]
    assert [[e.content.parts[0].text for e in g] for g in group_exchanges(events)] == [["a1", "b1", "b2"], ["a2", "b3"]]


def test_parse_is_defensive():
    ex = LlmExtractor(ScriptedLlm(script=lambda p: ""), max_facts=2)
    raw = '```json\n{"facts": [{"text": "A", "importance": 7, "topics": ["X", " y "], "supersedes": ["m1", "zz"]},' \
          ' {"text": ""}, {"text": "B", "importance": "high"}, {"text": "C"}]}\n```'
    facts = ex.parse(raw, known_ids={"m1"})
    assert [f.text for f in facts] == ["A"]  # max_facts=2 cuts after the second item, the empty one is dropped
    assert facts[0].importance == 1.0 and facts[0].topics == ("x", "y") and facts[0].supersedes == ("m1",)
    assert [f.importance for f in LlmExtractor(ScriptedLlm(script=lambda p: ""), max_facts=3).parse(raw)[1:]] == [0.5]
    assert ex.parse("sorry, I cannot do that") == []


def facts(*items: dict) -> str:
    return json.dumps({"facts": list(items)})


async def test_llm_extraction_stores_facts_with_provenance_and_is_idempotent(engine_db):
    llm = ScriptedLlm(script=lambda p: facts(
        {"text": "The user is vegetarian.", "importance": 0.9, "topics": ["diet"]},
        {"text": "The user is training for the Berlin marathon.", "importance": 0.6, "topics": ["sport", "travel"]},
    ))
    svc = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), pipeline=False, extractor=LlmExtractor(llm),
                                 settings=MemorySettings(bump_access=False))
    try:
        now = time.time()
        exchange = [ev("user", "I'm vegetarian and I'm training for Berlin.", now), ev("agent", "Great, noted!", now + 1)]
        await svc.add_events_to_memory(app_name=APP, user_id=USER, events=exchange, session_id="s1")
        await svc.add_events_to_memory(app_name=APP, user_id=USER, events=exchange, session_id="s1")
        assert len(llm.prompts) == 1, "an extracted exchange must not be sent to the model again"
        assert "user: I'm vegetarian" in llm.prompts[0] and "agent: Great, noted!" in llm.prompts[0]
        await svc.flush()
        hits = await svc.search(APP, USER, "what does the user eat", filters={"topics": ["diet"]})
        assert [h.entry.content.parts[0].text for h in hits] == ["The user is vegetarian."]
        meta = hits[0].entry.custom_metadata
        assert meta["extractor"] == "llm:v1" and meta["importance"] == pytest.approx(0.9)
        assert meta["event_ids"] == [e.id for e in exchange] and meta["session_id"] == "s1"
        assert hits[0].signals.importance == pytest.approx(0.9)
    finally:
        await svc.close()


async def test_llm_contradiction_supersedes_the_old_fact(engine_db):
    def script(prompt: str) -> str:
        if "moved to Munich" in prompt:
            old = re.search(r"^(\w+): The user lives in Hamburg\.$", prompt, re.M)
            return facts({"text": "The user lives in Munich.", "importance": 0.8, "topics": ["home"],
                          "supersedes": [old.group(1)] if old else []})
        return facts({"text": "The user lives in Hamburg.", "importance": 0.8, "topics": ["home"]})

    llm = ScriptedLlm(script=script)
    svc = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), pipeline=False, extractor=LlmExtractor(llm),
                                 settings=MemorySettings(bump_access=False))
    try:
        now = time.time()
        await svc.add_events_to_memory(app_name=APP, user_id=USER, events=[ev("user", "I live in Hamburg, by the harbour.", now - 86400)], session_id="s1")
        await svc.flush()
        await svc.add_events_to_memory(app_name=APP, user_id=USER, events=[ev("user", "Big news: I moved to Munich last week!", now)], session_id="s2")
        await svc.flush()
        assert "The user lives in Hamburg." in llm.prompts[1]  # existing memories were shown to the model
        hits = await svc.search(APP, USER, "where does the user live")
        assert [h.entry.content.parts[0].text for h in hits] == ["The user lives in Munich."]
        async with engine_db.engine.connect() as conn:
            rows = dict((await conn.execute(text("SELECT content, superseded_by FROM agent_memories"))).all())
        assert rows["The user lives in Hamburg."] == hits[0].memory_id  # kept, marked superseded
    finally:
        await svc.close()
