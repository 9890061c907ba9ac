"""The memory pipeline (issue #31): durable extraction queue, workers, filtering before the model, flush, sync mode."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Sequence

import pytest
from google.adk.events.event import Event
from google.adk.sessions.session import Session
from google.genai import types
from sqlalchemy import text

from adk_oceanbase.errors import ValidationError
from adk_oceanbase.governance.erasure import delete_user_data
from adk_oceanbase.memory import HashEmbedder, LlmExtractor, MemorySettings, OceanBaseMemoryService, PipelineSettings
from adk_oceanbase.memory.extraction import ExtractedFact, event_text

APP, USER = "app", "u1"
LONG = " and we also talked about the hiking trip to the Dolomites next summer with my sister Anna"


class ScriptedExtractor(LlmExtractor):
    """A deterministic extractor (no model): one fact per exchange; counts calls; can block on a gate or fail."""

    def __init__(self, *, gate: asyncio.Event | None = None, fail_on: Sequence[str] = ()):
        self.model, self.max_facts, self.version = None, 3, "scripted:v1"
        self.calls: Counter[str] = Counter()
        self.started = asyncio.Event()
        self.gate = gate
        self.fail_on = tuple(fail_on)

    async def extract(self, exchange, existing=()):
        self.calls[exchange[0].id] += 1
        self.started.set()
        if self.gate is not None:
            await self.gate.wait()
        body = " ".join(event_text(e) for e in exchange)
        if any(word in body for word in self.fail_on):
            raise RuntimeError("scripted extractor failure")
        return [ExtractedFact(text=f"Fact: {body.split(' and ')[0]}.")]


def turn(author: str, words: str, i: int) -> Event:
    return Event(id=f"e{i:03d}", invocation_id="i", author=author, timestamp=1_700_000_000.0 + i,
                 content=types.Content(role="user", parts=[types.Part(text=words)]))


def session(exchanges: Sequence[tuple[str, str]], sid: str = "s1", user: str = USER) -> Session:
    events = []
    for u, a in exchanges:
        events.append(turn("user", u, len(events)))
        events.append(turn("agent", a, len(events)))
    return Session(id=sid, app_name=APP, user_id=user, events=events, last_update_time=events[-1].timestamp)


def talk(n: int) -> list[tuple[str, str]]:
    """``n`` long exchanges (over the summarization threshold), each about a different topic."""
    return [(f"I told you about topic number {i}{LONG}", f"Noted, topic {i} is remembered{LONG}") for i in range(n)]


def service(db, extractor=None, **pipeline) -> OceanBaseMemoryService:
    return OceanBaseMemoryService(database=db, embedder=HashEmbedder(), extractor=extractor,
                                  settings=MemorySettings(bump_access=False), pipeline=PipelineSettings(**pipeline))


async def rows(db, sql: str) -> list[tuple]:
    async with db.engine.connect() as conn:
        return [tuple(r) for r in (await conn.execute(text(sql))).all()]


async def test_add_returns_before_extraction_and_flush_waits_for_it(engine_db):
    gate = asyncio.Event()
    ex = ScriptedExtractor(gate=gate)
    svc = service(engine_db, ex)
    try:
        await svc.add_session_to_memory(session(talk(3)))  # returns while the extractor is held at the gate
        await ex.started.wait()
        assert await rows(engine_db, "SELECT COUNT(*) FROM agent_memories") == [(0,)]
        assert sum((await svc.pipeline.counts(APP))[APP].values()) == 3
        flushing = asyncio.create_task(svc.flush())
        await asyncio.sleep(0)
        assert not flushing.done()
        gate.set()
        await flushing
        stored = await rows(engine_db, "SELECT content, condensed, original_length, compression_ratio, embed_status "
                                       "FROM agent_memories ORDER BY content")
        assert [r[0] for r in stored] == [f"Fact: I told you about topic number {i}." for i in range(3)]
        for content, condensed, original, ratio, status in stored:
            assert condensed == 1 and status == "ready"
            assert original > len(content) and ratio == pytest.approx(len(content) / original, abs=1e-3)
        assert await rows(engine_db, "SELECT status, payload FROM memory_extraction_jobs") == [("done", "")] * 3
    finally:
        await svc.close()


async def test_a_new_service_drains_what_a_dead_one_queued(engine_db):
    queuing = ScriptedExtractor()
    a = service(engine_db, queuing, workers=0)  # a front end that only queues
    await a.add_session_to_memory(session(talk(4)))
    await a.close()
    assert not queuing.calls
    assert await rows(engine_db, "SELECT COUNT(*) FROM memory_extraction_jobs WHERE status = 'pending'") == [(4,)]
    ex = ScriptedExtractor()
    b = service(engine_db, ex)
    try:
        await b.flush()
        assert sorted(ex.calls.values()) == [1, 1, 1, 1]
        assert await rows(engine_db, "SELECT COUNT(*) FROM agent_memories WHERE condensed = 1") == [(4,)]
    finally:
        await b.close()


async def test_a_claim_whose_lease_ran_out_is_taken_over(engine_db):
    stuck = ScriptedExtractor(gate=asyncio.Event())  # never opens: the process "hangs" mid-extraction
    a = service(engine_db, stuck, close_timeout_s=0.05)
    ex = ScriptedExtractor()
    b = service(engine_db, ex, claim_lease_s=0, workers=0)  # lease 0: only its flush may run, or it takes over itself
    try:
        await a.add_session_to_memory(session(talk(1)))
        await stuck.started.wait()
        await b.flush()
        assert list(ex.calls.values()) == [1]
        assert await rows(engine_db, "SELECT COUNT(*) FROM agent_memories") == [(1,)]
        assert await rows(engine_db, "SELECT status FROM memory_extraction_jobs") == [("done",)]
    finally:
        await a.close()
        await b.close()


async def test_two_workers_never_extract_one_item_twice(engine_db):
    front = service(engine_db, ScriptedExtractor(), workers=0)
    await front.add_session_to_memory(session(talk(12)))
    await front.close()
    one, two = ScriptedExtractor(), ScriptedExtractor()
    a, b = service(engine_db, one, workers=3), service(engine_db, two, workers=3)
    try:
        await asyncio.gather(a.flush(), b.flush())
        calls = one.calls + two.calls
        assert len(calls) == 12 and set(calls.values()) == {1}
        assert await rows(engine_db, "SELECT COUNT(*) FROM agent_memories") == [(12,)]
    finally:
        await a.close()
        await b.close()


@pytest.mark.parametrize("max_attempts", [1, 3])
async def test_a_failing_item_does_not_block_the_others(engine_db, max_attempts):
    ex = ScriptedExtractor(fail_on=("topic number 2",))
    svc = service(engine_db, ex, mode="sync", max_attempts=max_attempts, retry_base_s=3600)
    try:
        await svc.add_session_to_memory(session(talk(5)))  # sync: drained before it returns
        await svc.flush()  # the failed job waits out its backoff: flush does not wait for it
        contents = [r[0] for r in await rows(engine_db, "SELECT content FROM agent_memories ORDER BY content")]
        assert contents == [f"Fact: I told you about topic number {i}." for i in (0, 1, 3, 4)]
        jobs = await rows(engine_db, "SELECT status, attempts, last_error FROM memory_extraction_jobs "
                                     "WHERE status <> 'done'")
        assert jobs == [("failed" if max_attempts == 1 else "pending", 1, "RuntimeError")]
        assert svc.pipeline.stats["failed_attempts"] == 1
    finally:
        await svc.close()


async def test_trivial_turns_never_reach_the_extractor_and_short_ones_stay_raw(engine_db):
    ex = ScriptedExtractor()
    svc = service(engine_db, ex, mode="sync", summarization_threshold=120)
    try:
        s = session([("thanks", "ok"), ("I adopted a beagle called Rex", "好的"), *talk(1), ("好的谢谢", "no problem")])
        await svc.add_session_to_memory(s)
        assert len(ex.calls) == 1  # only the long exchange reached the model
        stored = await rows(engine_db, "SELECT content, condensed, compression_ratio, extractor FROM agent_memories "
                                       "ORDER BY condensed, content")
        assert stored == [("I adopted a beagle called Rex", 0, 1.0, "turn:v1"),
                          ("Fact: I told you about topic number 0.", 1, pytest.approx(stored[1][2]), "scripted:v1")]
        assert stored[1][2] < 0.5
        assert await rows(engine_db, "SELECT COUNT(*) FROM memory_extraction_jobs") == [(2,)]
    finally:
        await svc.close()


async def test_the_inline_path_skips_trivial_exchanges_too(engine_db):
    ex = ScriptedExtractor()
    svc = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), pipeline=False, extractor=ex)
    try:
        await svc.add_session_to_memory(session([("thanks!", "ok"), *talk(1)]))
        assert len(ex.calls) == 1
    finally:
        await svc.close()


async def test_with_an_extractor_the_pipeline_is_the_default_and_false_keeps_extraction_inline(engine_db):
    gate = asyncio.Event()
    ex = ScriptedExtractor(gate=gate)
    svc = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), extractor=ex)
    adding = asyncio.ensure_future(svc.add_session_to_memory(session(talk(1))))
    try:
        await ex.started.wait()
        assert adding.done() and svc.pipeline is not None  # inline, the call would still wait for the model
        assert await rows(engine_db, "SELECT COUNT(*) FROM agent_memories") == [(0,)]
        gate.set()
        await svc.flush()
        assert await rows(engine_db, "SELECT COUNT(*) FROM agent_memories") == [(1,)]
    finally:
        gate.set()
        await adding
        await svc.close()
    inline = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), extractor=ex, pipeline=False)
    plain = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder())
    assert inline.pipeline is None and plain.pipeline is None
    await inline.close()
    await plain.close()
    with pytest.raises(ValidationError):
        OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), pipeline="background")


async def test_adding_a_session_again_queues_nothing_new(engine_db):
    ex = ScriptedExtractor()
    svc = service(engine_db, ex, mode="sync")
    try:
        await svc.add_session_to_memory(session(talk(2)))
        await svc.add_session_to_memory(session(talk(3)))  # the same session, one exchange longer
        assert sorted(ex.calls.values()) == [1, 1, 1]
        assert await rows(engine_db, "SELECT COUNT(*) FROM memory_extraction_jobs") == [(3,)]
    finally:
        await svc.close()


async def test_erasure_deletes_queued_work_and_a_late_worker_stores_nothing(engine_db):
    front = service(engine_db, ScriptedExtractor(), workers=0)
    await front.add_session_to_memory(session(talk(2)))
    await front.add_session_to_memory(session(talk(1), sid="s9", user="u2"))
    await front.close()
    await delete_user_data(engine_db, APP, USER)
    assert await rows(engine_db, "SELECT user_id FROM memory_extraction_jobs") == [("u2",)]
    ex = ScriptedExtractor()
    svc = service(engine_db, ex)
    try:
        await svc.flush()
        assert await rows(engine_db, "SELECT user_id FROM agent_memories") == [("u2",)]
    finally:
        await svc.close()


async def test_a_job_of_an_erased_user_is_dropped_not_written(engine_db):
    gate = asyncio.Event()
    ex = ScriptedExtractor(gate=gate)
    svc = service(engine_db, ex)
    try:
        await svc.add_session_to_memory(session(talk(1)))
        await ex.started.wait()  # claimed and extracting
        await delete_user_data(engine_db, APP, USER)
        gate.set()
        await svc.flush()
        assert await rows(engine_db, "SELECT COUNT(*) FROM agent_memories") == [(0,)]
        assert svc.pipeline.stats["dropped"] == 1
    finally:
        await svc.close()


async def test_without_an_extractor_the_pipeline_stores_raw_turns(engine_db):
    svc = service(engine_db, None, mode="sync")
    try:
        await svc.add_session_to_memory(session([("I adopted a beagle called Rex", "ok")]))
        assert await rows(engine_db, "SELECT content, condensed, original_length FROM agent_memories") == \
            [("I adopted a beagle called Rex", 0, 29)]
    finally:
        await svc.close()


def test_settings_are_checked():
    with pytest.raises(ValidationError):
        PipelineSettings(mode="later")
    with pytest.raises(ValidationError):
        PipelineSettings(max_attempts=0)
    s = PipelineSettings(retry_base_s=2, retry_max_s=10)
    assert [1 <= s.backoff_s(1) <= 2, 2 <= s.backoff_s(2) <= 4, 5 <= s.backoff_s(9) <= 10] == [True] * 3


async def test_retention_removes_finished_jobs_and_keeps_pending_work(engine_db):
    from datetime import datetime, timedelta, timezone

    from adk_oceanbase.governance import Retention, RetentionPolicy, sweep

    ex = ScriptedExtractor(fail_on=("topic number 1",))
    svc = service(engine_db, ex, mode="sync", retry_base_s=3600)
    front = service(engine_db, ScriptedExtractor(), workers=0)
    try:
        await svc.add_session_to_memory(session(talk(3)))  # two done, one failed and waiting
        await front.add_session_to_memory(session(talk(1), sid="s2", user="u2"))  # pending
        later = datetime.now(timezone.utc) + timedelta(days=40)
        await sweep(engine_db, RetentionPolicy(Retention(memory_ttl="30d")), now=later)
        assert sorted(await rows(engine_db, "SELECT user_id, status FROM memory_extraction_jobs")) == \
            [("u1", "pending"), ("u2", "pending")]
    finally:
        await svc.close()
        await front.close()


async def test_the_queue_holds_redacted_text_only(engine_db):
    from adk_oceanbase import RedactionPolicy, RuleRedactor

    policy = RedactionPolicy(RuleRedactor(patterns={"EMPLOYEE_ID": r"EMP-\d{6}"}))
    front = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), extractor=ScriptedExtractor(),
                                   redaction=policy, pipeline=PipelineSettings(workers=0))
    ex = ScriptedExtractor()
    worker = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), extractor=ex, redaction=policy,
                                    pipeline=PipelineSettings())
    try:
        await front.add_session_to_memory(session([(f"My badge is EMP-123456{LONG}", f"Thanks, EMP-123456 noted{LONG}")]))
        (payload,) = (await rows(engine_db, "SELECT payload FROM memory_extraction_jobs"))[0]
        assert "EMP-123456" not in payload and "EMPLOYEE_ID" in payload
        await worker.flush()
        (content,) = (await rows(engine_db, "SELECT content FROM agent_memories"))[0]
        assert "EMP-123456" not in content
    finally:
        await front.close()
        await worker.close()
