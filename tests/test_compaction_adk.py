"""ADK's own compaction through a real Runner on our service: stored, archived, and the same LLM requests.

Every scenario runs twice with the same scripted model: once on ADK's
``InMemorySessionService`` (full history, ADK's reference behaviour) and once
on ours (default load skips archived events). The model records each request
it receives; the two request streams must be identical, which proves the
Runner builds the same prompt from our compacted load as from the full one.
"""

from __future__ import annotations

from typing import Any, AsyncGenerator

import pytest
from google.adk.agents.llm_agent import LlmAgent
from google.adk.apps.app import App, EventsCompactionConfig
from google.adk.events.event import Event
from google.adk.flows.llm_flows.contents import _get_contents
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions.base_session_service import GetSessionConfig
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.genai import types
from pydantic import PrivateAttr
from sqlalchemy import text

from adk_oceanbase import OceanBaseSessionService
from adk_oceanbase.compaction import ExtractiveSummarizer

APP = "cmp_app"
TURNS = [
    "hello, I plan a trip",
    "what is the weather in Hangzhou?",
    "and in 北京?",
    "book a hotel near the lake",
    "what is the weather in Paris?",
    "thanks, summarise my plans",
    "one more: the weather in Oslo?",
    "bye",
]


def get_weather(city: str) -> dict:
    """Returns the weather for a city."""
    return {"city": city, "forecast": f"sunny in {city}"}


class ScriptedLlm(BaseLlm):
    """Deterministic model: calls ``get_weather`` when asked about weather, else answers; records requests."""

    model: str = "scripted"
    _requests: list[list[dict]] = PrivateAttr(default_factory=list)

    @staticmethod
    def _shape(contents: list[types.Content]) -> list[dict]:
        out = []
        for c in contents:
            d = c.model_dump(exclude_none=True, mode="json")
            for p in d.get("parts", []):  # call ids are random per run; everything else must match
                for k in ("function_call", "function_response"):
                    if k in p:
                        p[k].pop("id", None)
            out.append(d)
        return out

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        self._requests.append(self._shape(llm_request.contents))
        last = llm_request.contents[-1]
        chars = sum(len(p.text or "") + len(str(p.function_response or "")) for c in llm_request.contents for p in c.parts or [])
        usage = types.GenerateContentResponseUsageMetadata(prompt_token_count=chars // 4, candidates_token_count=5)
        part = last.parts[0] if last.parts else types.Part(text="")
        if last.role == "user" and part.text and "weather in" in part.text:
            city = part.text.rsplit("weather in", 1)[1].strip(" ?")
            reply = types.Part(function_call=types.FunctionCall(name="get_weather", args={"city": city}))
        elif part.function_response is not None:
            reply = types.Part(text=f"It is {part.function_response.response.get('forecast')}.")
        else:
            reply = types.Part(text=f"Noted ({len(llm_request.contents)} messages so far): {part.text}")
        yield LlmResponse(content=types.Content(role="model", parts=[reply]), usage_metadata=usage)


class RecordingService(OceanBaseSessionService):
    """Ours, keeping a deep copy of every event handed to ``append_event`` (for exact round-trip checks)."""

    def __init__(self, **kw: Any):
        super().__init__(**kw)
        self.appended: list[Event] = []

    async def append_event(self, session, event):
        if not event.partial:
            self.appended.append(event.model_copy(deep=True))
        return await super().append_event(session, event)


def make_app(config: EventsCompactionConfig) -> tuple[App, ScriptedLlm]:
    llm = ScriptedLlm()
    agent = LlmAgent(name="assistant", model=llm, instruction="Be brief.", tools=[get_weather])
    return App(name=APP, root_agent=agent, events_compaction_config=config), llm


async def drive(service, config: EventsCompactionConfig) -> tuple[list, str]:
    app, llm = make_app(config)
    runner = Runner(app=app, session_service=service)
    session = await service.create_session(app_name=APP, user_id="u1")
    for turn in TURNS:
        msg = types.Content(role="user", parts=[types.Part(text=turn)])
        async for _ in runner.run_async(user_id="u1", session_id=session.id, new_message=msg):
            pass
    return llm._requests, session.id


CONFIGS = {
    "sliding_window": lambda: EventsCompactionConfig(
        compaction_interval=2, overlap_size=1, summarizer=ExtractiveSummarizer(max_chars=600)
    ),
    "token_threshold": lambda: EventsCompactionConfig(
        token_threshold=60, event_retention_size=2, summarizer=ExtractiveSummarizer(max_chars=600)
    ),
}


@pytest.mark.parametrize("kind", sorted(CONFIGS))
async def test_runner_requests_match_adk_full_history(engine_db, kind):
    ours = RecordingService(database=engine_db)
    ours_requests, sid = await drive(ours, CONFIGS[kind]())
    ref_requests, _ = await drive(InMemorySessionService(), CONFIGS[kind]())
    assert len(ours_requests) == len(ref_requests) > len(TURNS)
    for i, (a, b) in enumerate(zip(ours_requests, ref_requests)):
        assert a == b, f"request {i} differs"

    full = await ours.get_session(app_name=APP, user_id="u1", session_id=sid, include_compacted=True)
    live = await ours.get_session(app_name=APP, user_id="u1", session_id=sid)
    # every event, compaction events included, round-trips exactly
    assert full.events == ours.appended
    compactions = [e for e in full.events if e.actions.compaction]
    assert compactions, "the scenario must trigger ADK compaction"
    assert len(live.events) < len(full.events)
    assert compactions[-1] in live.events  # older ones may be subsumed (rolling summaries) and archived
    # the prompt ADK builds from our compacted load equals the one from the full load
    assert _get_contents(None, live.events, "assistant") == _get_contents(None, full.events, "assistant")


async def test_archived_rows_point_at_their_compaction(engine_db):
    svc = OceanBaseSessionService(database=engine_db)
    _, sid = await drive(svc, CONFIGS["sliding_window"]())
    async with engine_db.engine.connect() as conn:
        rows = (await conn.execute(text(
            "SELECT e.seq, e.compacted_by, c.event_type AS by_type FROM session_events e"
            " LEFT JOIN session_events c ON c.app_name = e.app_name AND c.user_id = e.user_id"
            " AND c.session_id = e.session_id AND c.seq = e.compacted_by WHERE e.session_id = :s"
        ), {"s": sid})).all()
    archived = [r for r in rows if r.compacted_by is not None]
    assert archived and all(r.by_type == "compaction" and r.compacted_by > r.seq for r in archived)


async def test_windows_match_full_load_semantics(engine_db):
    """num_recent_events / after_timestamp pick the same window as a full load; only covered rows leave it."""
    svc = OceanBaseSessionService(database=engine_db)
    _, sid = await drive(svc, CONFIGS["token_threshold"]())
    full = (await svc.get_session(app_name=APP, user_id="u1", session_id=sid, include_compacted=True)).events
    for n in (1, 3, 5, 8, 13, len(full), len(full) + 5):
        cfg = GetSessionConfig(num_recent_events=n)
        window = (await svc.get_session(app_name=APP, user_id="u1", session_id=sid, config=cfg, include_compacted=True)).events
        live = (await svc.get_session(app_name=APP, user_id="u1", session_id=sid, config=cfg)).events
        assert window == full[-n:]
        assert set(e.id for e in live) <= set(e.id for e in window)
        assert _get_contents(None, live, "assistant") == _get_contents(None, window, "assistant")
    for e in full[:: max(1, len(full) // 6)]:
        cfg = GetSessionConfig(after_timestamp=e.timestamp)
        window = (await svc.get_session(app_name=APP, user_id="u1", session_id=sid, config=cfg, include_compacted=True)).events
        live = (await svc.get_session(app_name=APP, user_id="u1", session_id=sid, config=cfg)).events
        assert _get_contents(None, live, "assistant") == _get_contents(None, window, "assistant")
