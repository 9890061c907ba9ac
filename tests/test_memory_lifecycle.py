"""Memory lifecycle (issue #9, item 9): tombstones stay dead, failing rows give up, claims are real, close is bounded."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter

import pytest
from google.adk.events.event import Event
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session
from google.genai import types
from sqlalchemy import text

from adk_oceanbase import Config
from adk_oceanbase.compaction import BackgroundCompactor, KeepLastN
from adk_oceanbase.engine import Database
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService
from adk_oceanbase.sessions.service import OceanBaseSessionService

APP, USER = "app", "u1"
FAST = dict(retry_base_s=0.0, batch_wait_s=0.0, bump_access=False)


def entries(*bodies: str, ids: bool = False) -> list[MemoryEntry]:
    return [
        MemoryEntry(id=f"m{i}" if ids else None, content=types.Content(parts=[types.Part.from_text(text=b)]))
        for i, b in enumerate(bodies)
    ]


class CountingEmbedder(HashEmbedder):
    """Counts how often each memory text was embedded; fails texts containing ``poison``; may wait on a gate."""

    def __init__(self, gate: threading.Event | None = None, model_name: str | None = None):
        super().__init__(model_name=model_name)
        self.gate = gate
        self.seen: Counter[str] = Counter()
        self._lock = threading.Lock()

    def embed(self, texts):
        if self.gate is not None:
            self.gate.wait()
        with self._lock:
            self.seen.update(t.split(": ", 1)[1] for t in texts)
        if any("poison" in t for t in texts):
            raise ValueError("the model cannot take this text")
        return super().embed(texts)


async def rows(engine_db) -> dict[str, tuple]:
    async with engine_db.engine.connect() as conn:
        result = await conn.execute(text(
            "SELECT content, embed_status, embed_attempts, embedding_model FROM agent_memories"))
        return {r[0]: tuple(r[1:]) for r in result.all()}


async def test_reembed_leaves_deleted_memories_deleted(engine_db):
    a = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(model_name="model-a"), settings=MemorySettings(**FAST))
    await a.add_memory(app_name=APP, user_id=USER, memories=entries("keeps bees", "sails boats", "reads maps", ids=True))
    await a.flush()
    await a.delete_memory(app_name=APP, user_id=USER, memory_id="m1")
    await a.close()
    b = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(model_name="model-b"), settings=MemorySettings(**FAST))
    try:
        await b.reembed()
        await b.flush()
        assert await rows(engine_db) == {
            "keeps bees": ("ready", 0, "model-b"),
            "reads maps": ("ready", 0, "model-b"),
            "": ("deleted", 0, None),
        }
        assert "m1" not in [h.memory_id for h in await b.search(APP, USER, "sails boats")]
    finally:
        await b.close()


async def test_a_row_that_never_embeds_gives_up_after_max_row_attempts(engine_db):
    emb = CountingEmbedder()
    settings = MemorySettings(max_attempts=2, max_row_attempts=3, retry_interval_s=0.0, **FAST)
    svc = OceanBaseMemoryService(database=engine_db, embedder=emb, settings=settings)
    try:
        await svc.add_memory(app_name=APP, user_id=USER, memories=entries("keeps bees", "poison pill", "sails boats"))
        await svc.flush()
        state = await rows(engine_db)
        assert state["poison pill"][:2] == ("failed", 3)
        assert state["keeps bees"][0] == state["sails boats"][0] == "ready"  # not dragged down by their batch-mate
        calls = emb.seen["poison pill"]
        assert calls >= 3 * settings.max_attempts
    finally:
        await svc.close()
    # Neither this process's sweeps nor a new process's start-up sweep try it again...
    again = OceanBaseMemoryService(database=engine_db, embedder=emb, settings=settings)
    try:
        await again.flush()
        assert emb.seen["poison pill"] == calls
        # ...until someone asks for it.
        assert await again.retry_failed_embeddings() == 1
        await again.flush()
        assert emb.seen["poison pill"] > calls
        assert (await rows(engine_db))["poison pill"][:2] == ("failed", 3)
    finally:
        await again.close()


async def test_two_vectorizers_embed_each_row_exactly_once(engine_db, engine_migrated_url):
    gate = threading.Event()
    first = CountingEmbedder(gate)
    a = OceanBaseMemoryService(database=engine_db, embedder=first, settings=MemorySettings(batch_size=4, **FAST))
    other_db = Database(Config.from_url(engine_migrated_url))  # its own pool: like a second process
    second = CountingEmbedder()
    b = OceanBaseMemoryService(database=other_db, embedder=second, settings=MemorySettings(batch_size=4, **FAST))
    bodies = [f"fact number {i} about topic {i * 7}" for i in range(20)]
    try:
        await a.add_memory(app_name=APP, user_id=USER, memories=entries(*bodies))
        for _ in range(1000):  # until a's worker has claimed its first batch and waits in the model
            if "embedding" in {s for s, *_ in (await rows(engine_db)).values()}:
                break
            await asyncio.sleep(0.01)
        else:
            pytest.fail("the first vectorizer never claimed a batch")
        await b.flush()  # b's start-up sweep finds every row a has not claimed, and embeds it
        gate.set()
        await a.flush()
        assert set((first.seen + second.seen).items()) == {(body, 1) for body in bodies}
        assert first.seen and second.seen
        assert {s for s, *_ in (await rows(engine_db)).values()} == {"ready"}
    finally:
        gate.set()
        await a.close()
        await b.close()
        await other_db.close()


async def test_close_returns_in_time_when_the_embedder_hangs(engine_db):
    gate = threading.Event()
    svc = OceanBaseMemoryService(
        database=engine_db, embedder=CountingEmbedder(gate), settings=MemorySettings(close_timeout_s=0.2, **FAST)
    )
    try:
        await svc.add_memory(app_name=APP, user_id=USER, memories=entries("keeps bees", "sails boats"))
        await asyncio.wait_for(svc.close(), 30)  # without a close timeout this waits for the model forever
    finally:
        gate.set()
    # the claim was given back: the next process embeds the rows at once, not after the lease
    assert {s for s, *_ in (await rows(engine_db)).values()} == {"pending"}


async def test_background_compactor_close_returns_when_the_summarizer_hangs(engine_db):
    class Hanging:
        async def maybe_summarize_events(self, *, events):
            await asyncio.Event().wait()

    sessions = OceanBaseSessionService(database=engine_db)
    s = await sessions.create_session(app_name=APP, user_id=USER)
    for i in range(8):
        s = await sessions.get_session(app_name=APP, user_id=USER, session_id=s.id)
        await sessions.append_event(s, Event(author="user", invocation_id=f"i{i}", timestamp=time.time(),
                                             content=types.Content(role="user", parts=[types.Part.from_text(text=f"turn {i}")])))
    bg = BackgroundCompactor(sessions, KeepLastN(keep_last=2, min_batch=2), Hanging(), close_timeout_s=0.2)
    bg.schedule(app_name=APP, user_id=USER, session_id=s.id)
    await asyncio.wait_for(bg.close(), 30)
    full = await sessions.get_session(app_name=APP, user_id=USER, session_id=s.id)
    assert len(full.events) == 8  # the cut-short compaction wrote nothing


async def test_concurrent_adds_of_overlapping_sessions(engine_db, engine_migrated_url):
    now = time.time()
    events = [
        Event(id=f"e{i}", invocation_id="inv", author="user" if i % 2 == 0 else "agent", timestamp=now - 100 + i,
              content=types.Content(parts=[types.Part.from_text(text=f"turn {i}: the weather in city {i} is mild")]))
        for i in range(30)
    ]
    other_db = Database(Config.from_url(engine_migrated_url))
    services = [OceanBaseMemoryService(database=d, embedder=HashEmbedder(), settings=MemorySettings(**FAST))
                for d in (engine_db, other_db)]
    try:
        # the same session at ten lengths (a Runner adding it after every turn), from two "processes"
        await asyncio.gather(*(
            services[n % 2].add_session_to_memory(
                Session(id="s1", app_name=APP, user_id=USER, last_update_time=now, events=events[: 12 + 2 * n]))
            for n in range(10)
        ))
        async with engine_db.engine.connect() as conn:
            stored = (await conn.execute(text("SELECT content FROM agent_memories"))).scalars().all()
        assert sorted(stored) == sorted(e.content.parts[0].text for e in events)
    finally:
        for svc in services:
            await svc.close()
        await other_db.close()
