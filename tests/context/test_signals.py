"""Metrics an operator alerts on (issue #30): pruner decisions, silent supersessions, embedding failures,
compaction results, snapshot latency, recorded on the configured meter provider."""

from __future__ import annotations

import json
import time

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from adk_oceanbase import OceanBaseSessionService, telemetry
from adk_oceanbase.compaction import ContextAssembler, KeepLastN, compact_session
from adk_oceanbase.context.turns import turn_snapshot
from adk_oceanbase.memory import HashEmbedder, LlmExtractor, MemorySettings, OceanBaseMemoryService

from ..fakes import ScriptedLlm, last_user_text, text_reply

pytest.importorskip("opentelemetry.sdk.metrics", reason="opentelemetry-sdk not installed")
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402

APP, USER = "sig_app", "u1"
FAST = dict(retry_base_s=0.01, batch_wait_s=0.0, bump_access=False, max_row_attempts=1)


@pytest.fixture
def reader():
    reader = InMemoryMetricReader()
    telemetry.set_providers(meter_provider=MeterProvider(metric_readers=[reader]))
    yield reader
    telemetry.set_providers()


def points(reader, name: str) -> list:
    data = reader.get_metrics_data()
    found = []
    for rm in data.resource_metrics if data else []:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                if m.name == name:
                    found.extend(m.data.data_points)
    return found


def total(reader, name: str, **attrs) -> float:
    return sum(p.value for p in points(reader, name) if all(p.attributes.get(k) == v for k, v in attrs.items()))


def ev(text: str, ts: float, inv: str = "i", delta: dict | None = None) -> Event:
    return Event(author="user", invocation_id=inv, timestamp=ts, actions=EventActions(state_delta=delta or {}),
                 content=types.Content(role="user", parts=[types.Part(text=text)]))


async def test_context_compaction_and_snapshot_metrics(engine_db, reader):
    svc = OceanBaseSessionService(database=engine_db, compaction_overlap=0)
    s = await svc.create_session(app_name=APP, user_id=USER)
    for i in range(30):
        await svc.append_event(s, ev(f"message {i} " + "words " * 10, 1_740_000_000.0 + i, inv=f"i{i}", delta={"n": i}))
    live = (await svc.get_session(app_name=APP, user_id=USER, session_id=s.id)).events
    await ContextAssembler(max_tokens=100).assemble(app_name=APP, user_id=USER, query="", events=live)
    assert total(reader, "adk_oceanbase.context.blocks", kind="event", action="dropped") > 0
    assert total(reader, "adk_oceanbase.context.blocks", kind="event", action="kept") > 0
    assert [p.count for p in points(reader, "adk_oceanbase.context.budget_used")] == [1]

    await compact_session(svc, app_name=APP, user_id=USER, session_id=s.id, policy=KeepLastN(keep_last=5, min_batch=1))
    await compact_session(svc, app_name=APP, user_id=USER, session_id=s.id, policy=KeepLastN(keep_last=50, min_batch=1))
    assert total(reader, "adk_oceanbase.compaction.runs", outcome="compacted") == 1
    assert total(reader, "adk_oceanbase.compaction.runs", outcome="skipped") == 1
    assert total(reader, "adk_oceanbase.compaction.events") >= 25

    await turn_snapshot(svc, app_name=APP, user_id=USER, session_id=s.id, turn=3)
    (snap,) = [p for p in points(reader, "adk_oceanbase.replay.duration") if p.attributes["operation"] == "snapshot"]
    assert snap.count == 1 and snap.sum > 0


def echo_facts() -> LlmExtractor:
    def script(request):
        convo = last_user_text(request).split("CONVERSATION", 1)[1]
        said = [line[len("user: "):] for line in convo.splitlines() if line.startswith("user: ")]
        return text_reply(json.dumps({"facts": [{"text": t, "importance": 0.6} for t in said]}))

    return LlmExtractor(ScriptedLlm(script=script), max_facts=3)


class BrokenEmbedder(HashEmbedder):
    def embed(self, texts):
        raise ConnectionError("model server down")


async def test_memory_supersession_and_embedding_failure_metrics(engine_db, reader):
    memory = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), pipeline=False, extractor=echo_facts(), settings=MemorySettings(**FAST))
    try:
        now = time.time()
        old, new = "My flight to Tokyo leaves on the 5th of May at 9am", "My flight to Tokyo leaves on the 5th of May at 9am!!"
        await memory.add_events_to_memory(app_name=APP, user_id=USER, events=[ev(old, now - 3600)], session_id="s1")
        await memory.flush()
        await memory.add_events_to_memory(app_name=APP, user_id=USER, events=[ev(new, now - 60)], session_id="s2")
        await memory.flush()
    finally:
        await memory.close()
    assert total(reader, "adk_oceanbase.memory.supersessions", reason="near_duplicate") == 1

    broken = OceanBaseMemoryService(database=engine_db, embedder=BrokenEmbedder(), settings=MemorySettings(**FAST))
    try:
        from google.adk.memory.memory_entry import MemoryEntry

        await broken.add_memory(app_name=APP, user_id="u2", memories=[MemoryEntry(author="user", content=types.Content(parts=[types.Part(text="I like tea")]))])
        await broken.flush()
    finally:
        await broken.close()
    assert total(reader, "adk_oceanbase.memory.embedding_failures", **{"error.type": "ConnectionError"}) >= 1
