"""Background vectorization: non-blocking ingest, retries, backpressure, no row ever lost, model checks."""

from __future__ import annotations

import asyncio
import threading

import pytest
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types
from sqlalchemy import text

from adk_oceanbase.errors import EmbeddingModelMismatchError
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService

APP, USER = "app", "u1"
FAST = dict(retry_base_s=0.01, batch_wait_s=0.0, bump_access=False)


def entries(n: int, prefix: str = "fact") -> list[MemoryEntry]:
    return [MemoryEntry(content=types.Content(parts=[types.Part.from_text(text=f"{prefix} number {i} about topic {i * 7}")])) for i in range(n)]


class FlakyEmbedder(HashEmbedder):
    """Fails the first ``failures`` calls, then works; can be switched off entirely."""

    def __init__(self, failures: int = 0):
        super().__init__()
        self.failures = failures
        self.calls = 0
        self.broken = False
        self.threads: set[int] = set()

    def embed(self, texts):
        self.calls += 1
        self.threads.add(threading.get_ident())
        if self.broken or self.calls <= self.failures:
            raise ConnectionError("embedding backend unavailable")
        return super().embed(texts)


async def statuses(engine_db) -> dict[str, int]:
    async with engine_db.engine.connect() as conn:
        return dict((await conn.execute(text("SELECT embed_status, COUNT(*) FROM agent_memories GROUP BY embed_status"))).all())


async def test_failed_embedding_is_retried_then_stored(engine_db):
    emb = FlakyEmbedder(failures=2)
    svc = OceanBaseMemoryService(database=engine_db, embedder=emb, settings=MemorySettings(max_attempts=4, **FAST))
    try:
        await svc.add_memory(app_name=APP, user_id=USER, memories=entries(5))
        await svc.flush()
        assert await statuses(engine_db) == {"ready": 5}
        assert svc.vectorizer.stats["failed_attempts"] == 2
        assert threading.get_ident() not in emb.threads  # the model never ran on the event loop thread
        assert len(await svc.search(APP, USER, "fact number 3")) > 0
    finally:
        await svc.close()


async def until_statuses(engine_db, want: dict[str, int]) -> None:
    """Waits for the rows to reach ``want``: an event the worker causes, not a time it must meet.

    The 120 s bound only turns a worker that never gets there into a failure that names it,
    before the per-test timeout would.
    """
    async def reached() -> None:
        while await statuses(engine_db) != want:
            await asyncio.sleep(0.05)

    try:
        await asyncio.wait_for(reached(), 120)
    except TimeoutError:
        pytest.fail(f"rows never reached {want}: {await statuses(engine_db)}")


async def test_rows_are_never_lost_when_the_embedder_is_down(engine_db):
    emb = FlakyEmbedder()
    emb.broken = True
    # A failed round's rows wait retry_interval_s: an hour, so no second round can run (and count a
    # second attempt) while the checks below run, however slow the machine; the test then moves
    # the rows' clock back instead of waiting.
    settings = MemorySettings(max_attempts=2, sweep_interval_s=0.2, retry_interval_s=3600.0, **FAST)
    svc = OceanBaseMemoryService(database=engine_db, embedder=emb, settings=settings)
    try:
        await svc.add_memory(app_name=APP, user_id=USER, memories=entries(3))
        await svc.flush()
        assert await statuses(engine_db) == {"pending": 3}  # a round failed; the next waits retry_interval_s
        # Full-text still finds them, but never through a half-made vector.
        hits = await svc.search(APP, USER, "fact number")
        assert hits and all(h.signals.semantic == 0 for h in hits)
        async with engine_db.engine.connect() as conn:
            assert {r[0] for r in await conn.execute(text("SELECT embed_attempts FROM agent_memories"))} == {1}
        calls = emb.calls
        emb.broken = False  # the backend recovers; the periodic sweep picks the rows up once their pause is over
        async with engine_db.engine.begin() as conn:  # as if retry_interval_s had passed
            await conn.execute(text("UPDATE agent_memories SET updated_at = updated_at - INTERVAL 2 HOUR"))
        await until_statuses(engine_db, {"ready": 3})
        assert emb.calls > calls  # embedded by the sweep's round, after the recovery
        async with engine_db.engine.connect() as conn:
            attempts = {r[0] for r in (await conn.execute(text("SELECT embed_attempts FROM agent_memories"))).all()}
        assert attempts == {1}
    finally:
        await svc.close()


async def test_rows_left_by_a_dead_process_are_picked_up_by_the_next(engine_db):
    svc1 = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), settings=MemorySettings(**FAST))
    await svc1.add_memory(app_name=APP, user_id=USER, memories=entries(4))
    await svc1.close()
    async with engine_db.engine.begin() as conn:  # as if the process died: two rows claimed long ago, two pending
        await conn.execute(text("UPDATE agent_memories SET embed_status = 'pending', embedding = NULL"))
        await conn.execute(text(
            "UPDATE agent_memories SET embed_status = 'embedding', embed_claim = 'dead', "
            "embed_claimed_at = '2020-01-01' WHERE memory_id IN "
            "(SELECT memory_id FROM (SELECT memory_id FROM agent_memories ORDER BY memory_id LIMIT 2) x)"))
    svc2 = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), settings=MemorySettings(**FAST))
    try:
        await svc2.flush()
        assert await statuses(engine_db) == {"ready": 4}
    finally:
        await svc2.close()


async def test_backpressure_overflow_stays_pending_until_swept(engine_db):
    svc = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), settings=MemorySettings(queue_size=3, batch_size=2, **FAST))
    try:
        await svc.add_memory(app_name=APP, user_id=USER, memories=entries(25))
        assert svc.vectorizer.stats["dropped_to_backlog"] > 0
        await svc.flush()
        assert await statuses(engine_db) == {"ready": 25}
        assert svc.vectorizer.stats["embedded"] == 25
    finally:
        await svc.close()


class GatedEmbedder(HashEmbedder):
    """Once armed, each call says it started and then waits for the test to release it."""

    def __init__(self):
        super().__init__()
        self.armed = False
        self.started = threading.Event()
        self.release = threading.Event()
        self.threads: set[int] = set()

    def embed(self, texts):
        self.threads.add(threading.get_ident())
        if self.armed:
            self.started.set()
            if not self.release.wait(timeout=120):
                raise TimeoutError("the test never released the model")
        return super().embed(texts)


async def test_ingest_does_not_wait_for_a_slow_model_and_close_drains(engine_db):
    """Gated on events, not the clock: the model is held mid-call until the test has seen ingest
    return and the event loop serve a query; a regression makes ``add_memory`` wait for the release."""
    emb = GatedEmbedder()
    svc = OceanBaseMemoryService(database=engine_db, embedder=emb, settings=MemorySettings(batch_size=64, **FAST))
    await svc.add_memory(app_name=APP, user_id=USER, memories=entries(1, "warm"))  # schema check, worker start
    await svc.flush()
    emb.armed = True
    try:
        # Would never return if ingest waited for the model: the bound turns that hang into a failure.
        await asyncio.wait_for(svc.add_memory(app_name=APP, user_id=USER, memories=entries(10)), 120)
        assert not emb.release.is_set()
        assert await asyncio.to_thread(emb.started.wait, 120), "the worker never called the model"
        # The model is mid-call now; the event loop still serves a query meanwhile.
        during = await statuses(engine_db)
        assert during.get("ready") == 1 and sum(during.values()) == 11, during
        assert threading.get_ident() not in emb.threads  # the model never ran on the event loop thread
        emb.release.set()
        await svc.close()  # drains: everything embedded before close returns
        assert await statuses(engine_db) == {"ready": 11}
    finally:
        emb.release.set()
        await svc.close()


async def test_mixing_embedding_models_is_refused_until_reembedded(engine_db):
    a = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(model_name="model-a"), settings=MemorySettings(**FAST))
    await a.add_memory(app_name=APP, user_id=USER, memories=entries(3))
    await a.close()
    b = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(model_name="model-b"), settings=MemorySettings(**FAST))
    try:
        with pytest.raises(EmbeddingModelMismatchError, match="model-a"):
            await b.search(APP, USER, "fact")
        assert await b.reembed() == 3
        await b.flush()
        async with engine_db.engine.connect() as conn:
            models = {r[0] for r in (await conn.execute(text("SELECT embedding_model FROM agent_memories"))).all()}
        assert models == {"model-b"}
        assert await b.search(APP, USER, "fact number 1")
    finally:
        await b.close()
    with pytest.raises(EmbeddingModelMismatchError, match="384"):
        wrong = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(dim=64))
        await wrong.search(APP, USER, "x")


async def test_a_vectorizer_embeds_only_the_rows_meant_for_its_model(engine_db):
    """Two services with different models on one database never embed each other's rows.

    Seen in CI: a LangGraph store (its own ``embed``) left open kept its
    vectorizer running; its sweep took a later service's pending rows and
    stored vectors of the wrong model, which that service then refused.
    """
    b = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(model_name="model-b"), settings=MemorySettings(**FAST))
    await b.add_memory(app_name=APP, user_id=USER, memories=entries(4))
    await b.close()
    async with engine_db.engine.begin() as conn:  # as if b's process died before embedding them
        await conn.execute(text("UPDATE agent_memories SET embed_status = 'pending', embedding = NULL"))
    a = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(model_name="model-a"), settings=MemorySettings(**FAST))
    try:
        await a.vectorizer.flush()  # its first sweep: finds no row meant for model-a
        async with engine_db.engine.connect() as conn:
            rows = set((await conn.execute(text("SELECT embed_status, embedding_model FROM agent_memories"))).all())
        assert rows == {("pending", "model-b")}
    finally:
        await a.close()
    b = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(model_name="model-b"), settings=MemorySettings(**FAST))
    try:
        await b.flush()
        assert await statuses(engine_db) == {"ready": 4}
        assert await b.search(APP, USER, "fact number 2")
    finally:
        await b.close()


class RecordingEmbedder(HashEmbedder):
    """Remembers the vector it made for each text."""

    def __init__(self):
        super().__init__()
        self.made: dict[str, object] = {}

    def embed(self, texts):
        vecs = super().embed(texts)
        self.made.update(zip(texts, vecs))
        return vecs


async def test_a_claimed_batch_is_stored_in_one_update_per_user_and_chunk(engine_db):
    """Each row gets its own vector; the claimed rows are stored by UPDATEs of up to 64 rows each, not one per row."""
    import numpy as np
    from sqlalchemy import event

    from adk_oceanbase.memory import vector_queries as vq

    emb = RecordingEmbedder()
    # batch_wait_s > 0: a wait of 0 takes one queued row per claim (asyncio.wait_for with no time left)
    svc = OceanBaseMemoryService(database=engine_db, embedder=emb, settings=MemorySettings(
        batch_size=256, consolidate=False, **dict(FAST, batch_wait_s=0.2)))
    updates: list[tuple[bool, int]] = []

    def seen(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith("UPDATE") and "SET embedding = CASE" in statement:
            updates.append((executemany, statement.count(" THEN ")))
        elif statement.lstrip().upper().startswith("UPDATE") and "SET embedding =" in statement:
            updates.append((executemany, -1))  # the row-by-row form

    event.listen(engine_db.engine.sync_engine, "before_cursor_execute", seen)
    try:
        await svc.add_memory(app_name=APP, user_id="ua", memories=entries(100, "alpha"))
        await svc.add_memory(app_name=APP, user_id="ub", memories=entries(50, "beta"))
        await svc.flush()
        assert await statuses(engine_db) == {"ready": 150}
        # how the worker cuts claims depends on timing; each claim's rows go in UPDATEs of at most 64
        assert vq.EMBEDDINGS_PER_UPDATE == 64
        assert sum(n for _, n in updates) == 150 and all(1 <= n <= 64 for _, n in updates), updates
        assert len(updates) <= 8 and not any(many for many, _ in updates), updates
        stmt = text("SELECT content, embedding FROM agent_memories").columns(embedding=engine_db.dialect.vector_type())
        async with engine_db.engine.connect() as conn:
            rows = (await conn.execute(stmt)).all()
        for content, vec in rows:
            made = [v for t, v in emb.made.items() if t.endswith(content)]
            assert len(made) == 1 and np.allclose(np.asarray(vec, dtype=np.float32), made[0], atol=1e-5), content
    finally:
        event.remove(engine_db.engine.sync_engine, "before_cursor_execute", seen)
        await svc.close()
