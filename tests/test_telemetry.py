"""OpenTelemetry: a span per service call with db attributes and errors, latency histograms, queue depth; nothing without a provider."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Iterator

import pytest
from google.adk.events.event import Event
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from adk_oceanbase import InvalidIdentifierError, OceanBaseSessionService, StaleSessionConflictError, telemetry
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService

sdk_trace = pytest.importorskip("opentelemetry.sdk.trace", reason="opentelemetry-sdk not installed")
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import SpanKind, StatusCode  # noqa: E402

DB_SYSTEM = {"seekdb": "oceanbase", "mariadb": "mysql"}  # seekdb is OceanBase's engine; MariaDB speaks MySQL


class Recorded:
    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.tracer_provider = sdk_trace.TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.metrics = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.metrics])

    def span(self, name: str) -> Any:
        found = [s for s in self.spans.get_finished_spans() if s.name == name]
        assert len(found) == 1, [s.name for s in self.spans.get_finished_spans()]
        return found[0]

    def points(self, metric: str) -> list[Any]:
        data = self.metrics.get_metrics_data()
        return [
            p
            for rm in (data.resource_metrics if data else [])
            for sm in rm.scope_metrics
            for m in sm.metrics
            if m.name == metric
            for p in m.data.data_points
        ]


@pytest.fixture
def otel() -> Iterator[Recorded]:
    rec = Recorded()
    telemetry.set_providers(tracer_provider=rec.tracer_provider, meter_provider=rec.meter_provider)
    yield rec
    telemetry.set_providers()
    rec.tracer_provider.shutdown()
    rec.meter_provider.shutdown()


def said(text: str, n: int) -> Event:
    return Event(invocation_id=f"i{n}", author="user", content=types.Content(role="user", parts=[types.Part(text=text)]))


async def test_session_calls_are_spans_with_db_attributes(engine_db, engine, otel):
    svc = OceanBaseSessionService(database=engine_db)
    s = await svc.create_session(app_name="tel", user_id="u", state={"k": 1})
    for n in range(3):
        await svc.append_event(s, said(f"hello {n}", n))
    await svc.get_session(app_name="tel", user_id="u", session_id=s.id)
    await svc.list_sessions(app_name="tel")

    create = otel.span("adk_oceanbase.create_session")
    assert create.kind == SpanKind.CLIENT
    assert create.attributes["db.system"] == DB_SYSTEM[engine]
    assert create.attributes["db.name"] == engine_db.config.database
    assert create.attributes["adk.app_name"] == "tel"
    appends = [x for x in otel.spans.get_finished_spans() if x.name == "adk_oceanbase.append_event"]
    assert len(appends) == 3 and all(x.attributes["adk_oceanbase.rows_written"] == 1 for x in appends)
    assert appends[0].attributes["adk.app_name"] == "tel"  # taken from the session argument
    assert otel.span("adk_oceanbase.get_session").attributes["db.response.returned_rows"] == 3
    assert otel.span("adk_oceanbase.list_sessions").attributes["db.response.returned_rows"] == 1
    assert all(x.status.status_code == StatusCode.UNSET for x in otel.spans.get_finished_spans())

    (point,) = otel.points("adk_oceanbase.append_event.duration")
    assert point.count == 3 and point.sum > 0 and point.attributes == {"db.system": DB_SYSTEM[engine]}


async def test_failures_are_error_spans(engine_db, engine, otel):
    svc = OceanBaseSessionService(database=engine_db)
    with pytest.raises(InvalidIdentifierError):
        await svc.get_session(app_name="tel", user_id=" ", session_id="s")
    span = otel.span("adk_oceanbase.get_session")
    assert span.status.status_code == StatusCode.ERROR
    assert span.attributes["error.type"] == "InvalidIdentifierError"
    assert [e.name for e in span.events] == ["exception"]

    s = await svc.create_session(app_name="tel", user_id="u")
    stale = s.model_copy(deep=True)
    await svc.append_event(s, said("first", 1))
    with pytest.raises(StaleSessionConflictError):
        await svc.append_event(stale, said("second", 2))
    failed = [x for x in otel.spans.get_finished_spans() if x.attributes.get("error.type") == "StaleSessionConflictError"]
    assert len(failed) == 1 and failed[0].name == "adk_oceanbase.append_event"
    points = {tuple(sorted(p.attributes.items())): p.count for p in otel.points("adk_oceanbase.append_event.duration")}
    system = ("db.system", DB_SYSTEM[engine])
    assert points == {(system,): 1, (system, ("error.type", "StaleSessionConflictError")): 1}


async def test_spans_nest_under_the_callers_span(engine_db, otel):
    svc = OceanBaseSessionService(database=engine_db)
    with otel.tracer_provider.get_tracer("app").start_as_current_span("invoke_agent") as parent:
        await svc.create_session(app_name="tel", user_id="u")
    assert otel.span("adk_oceanbase.create_session").parent.span_id == parent.get_span_context().span_id


class GatedEmbedder(HashEmbedder):
    """Blocks in its worker thread until released, so submitted rows wait in the vectorizer's queue."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def embed(self, texts):
        self.gate.wait(30)
        return super().embed(texts)


async def test_memory_search_latency_and_queue_depth(engine_db, otel):
    embedder = GatedEmbedder()
    mem = OceanBaseMemoryService(database=engine_db, embedder=embedder, settings=MemorySettings(batch_size=1, batch_wait_s=0.0))
    try:
        await mem.add_memory(
            app_name="tel", user_id="u",
            memories=[MemoryEntry(content=types.Content(parts=[types.Part(text=f"fact number {i}")])) for i in range(5)],
        )
        while mem.vectorizer.queue_depth > 4:  # the worker holds one row at the gate
            await asyncio.sleep(0.01)
        (depth,) = otel.points("adk_oceanbase.vectorizer.queue_depth")
        assert depth.value == 4 and depth.attributes == {"db.name": engine_db.config.database}
        embedder.gate.set()
        await mem.flush()
        (depth,) = otel.points("adk_oceanbase.vectorizer.queue_depth")
        assert depth.value == 0

        hits = (await mem.search_memory(app_name="tel", user_id="u", query="fact number 3")).memories
        outer, inner = otel.span("adk_oceanbase.search_memory"), otel.span("adk_oceanbase.search")
        assert inner.parent.span_id == outer.context.span_id
        assert outer.attributes["db.response.returned_rows"] == len(hits) > 0
        assert otel.span("adk_oceanbase.add_memory").attributes["adk.app_name"] == "tel"
        (point,) = otel.points("adk_oceanbase.search.duration")
        assert point.count == 1  # search_memory's inner search, counted once
    finally:
        embedder.gate.set()
        await mem.close()


async def test_nothing_is_recorded_without_a_provider(engine_db, otel):
    telemetry.set_providers()  # back to the global providers, which no test configures
    svc = OceanBaseSessionService(database=engine_db)
    s = await svc.create_session(app_name="tel", user_id="u")
    await svc.append_event(s, said("unseen", 1))
    assert telemetry._instruments() is None
    assert otel.spans.get_finished_spans() == ()
    assert otel.points("adk_oceanbase.append_event.duration") == []
