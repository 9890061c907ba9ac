"""OceanBaseMemoryService: ADK memory API on a real seekdb (ingest, idempotency, delete, search, filters)."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pymysql
import pytest
from google.adk.events.event import Event
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session
from google.genai import types
from sqlalchemy import text

from adk_oceanbase.errors import InvalidIdentifierError
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService, SearchFilters
from .engines import seekdb_only

APP, USER = "app", "u1"


def ev(author: str, txt: str, ts: float, eid: str | None = None) -> Event:
    return Event(
        id=eid or Event.new_id(),
        invocation_id="inv",
        author=author,
        timestamp=ts,
        content=types.Content(role="user" if author == "user" else "model", parts=[types.Part.from_text(text=txt)]),
    )


@pytest.fixture
async def memory(engine_db):
    svc = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), settings=MemorySettings(bump_access=False))
    yield svc
    await svc.close()


async def count_rows(engine_db, where: str = "1=1") -> int:
    async with engine_db.engine.connect() as conn:
        return (await conn.execute(text(f"SELECT COUNT(*) FROM agent_memories WHERE {where}"))).scalar_one()


async def test_session_turns_become_memories_and_trivial_turns_do_not(memory, engine_db):
    now = time.time()
    session = Session(
        id="s1", app_name=APP, user_id=USER, last_update_time=now,
        events=[
            ev("user", "My sister Anna lives in Lisbon and works as a nurse.", now - 50),
            ev("agent", "Good to know that Anna lives in Lisbon.", now - 40),
            ev("user", "ok", now - 30),
            ev("user", "谢谢", now - 20),
            ev("user", "我最喜欢的水果是苹果", now - 10),
        ],
    )
    await memory.add_session_to_memory(session)
    assert await count_rows(engine_db) == 3
    await memory.flush()
    assert await count_rows(engine_db, "embed_status = 'ready'") == 3

    res = await memory.search_memory(app_name=APP, user_id=USER, query="Where does Anna live?")
    assert res.memories, "expected a hit"
    top = res.memories[0]
    assert "Lisbon" in top.content.parts[0].text
    assert top.author in ("user", "agent")
    assert top.timestamp and top.timestamp.endswith("+00:00")
    scores = top.custom_metadata["scores"]
    assert set(scores) == {"semantic", "recency", "frequency", "fulltext", "importance", "context", "version", "score",
                           "ft_cov", "author"}  # ft_cov: also the relevance gate's lexical evidence
    assert top.custom_metadata["session_id"] == "s1"
    assert len(top.custom_metadata["event_ids"]) == 1

    zh = await memory.search(APP, USER, "苹果")
    assert zh and "苹果" in zh[0].entry.content.parts[0].text
    assert zh[0].signals.fulltext == pytest.approx(1.0)


async def test_add_events_is_idempotent_per_event_id(memory, engine_db):
    now = time.time()
    events = [ev("user", "I am allergic to peanuts and shellfish.", now, "e1"), ev("agent", "Noted your allergies.", now + 1, "e2")]
    for _ in range(3):
        await memory.add_events_to_memory(app_name=APP, user_id=USER, events=events, session_id="s1")
    assert await count_rows(engine_db) == 2
    # A later delta with one old and one new event adds only the new one.
    more = events[:1] + [ev("user", "My blood type is O negative.", now + 2, "e3")]
    await memory.add_events_to_memory(app_name=APP, user_id=USER, events=more, session_id="s1")
    assert await count_rows(engine_db) == 3


async def test_add_memory_and_delete_keeps_a_tombstone(memory, engine_db):
    await memory.add_memory(
        app_name=APP, user_id=USER,
        memories=[
            MemoryEntry(id="m1", author="user", content=types.Content(parts=[types.Part.from_text(text="The user's dog is called Biscuit.")]),
                        timestamp="2024-03-01T10:00:00+00:00", custom_metadata={"topics": ["pets"], "importance": 0.9}),
            MemoryEntry(content=types.Content(parts=[types.Part.from_text(text="The user prefers window seats on flights.")])),
        ],
        custom_metadata={"source": "import"},
    )
    await memory.flush()
    hits = await memory.search(APP, USER, "what is the dog called")
    assert hits[0].memory_id == "m1"
    meta = hits[0].entry.custom_metadata
    assert meta["topics"] == ["pets"] and meta["importance"] == pytest.approx(0.9) and meta["source"] == "import"
    assert hits[0].entry.timestamp.startswith("2024-03-01T10:00:00")

    await memory.delete_memory(app_name=APP, user_id=USER, memory_id="m1")
    assert all(h.memory_id != "m1" for h in await memory.search(APP, USER, "dog Biscuit"))
    async with engine_db.engine.connect() as conn:
        row = (await conn.execute(text("SELECT content, embedding, embed_status FROM agent_memories WHERE memory_id='m1'"))).one()
    assert row == ("", None, "deleted")
    # Adding the same entry again does not resurrect the deleted memory.
    await memory.add_memory(app_name=APP, user_id=USER, memories=[
        MemoryEntry(id="m1", content=types.Content(parts=[types.Part.from_text(text="The user's dog is called Biscuit.")]))])
    assert await count_rows(engine_db, "embed_status = 'deleted'") == 1


async def test_deleted_turn_is_not_reingested_with_its_session(memory, engine_db):
    now = time.time()
    session = Session(id="s1", app_name=APP, user_id=USER, last_update_time=now,
                      events=[ev("user", "My locker code is 4471, please remember.", now, "e1")])
    await memory.add_session_to_memory(session)
    await memory.flush()
    hit = (await memory.search(APP, USER, "locker code"))[0]
    await memory.delete_memory(app_name=APP, user_id=USER, memory_id=hit.memory_id)
    await memory.add_session_to_memory(session)
    await memory.flush()
    assert await memory.search(APP, USER, "locker code") == []


async def test_tenants_are_isolated(memory):
    now = time.time()
    await memory.add_events_to_memory(app_name=APP, user_id="alice", events=[ev("user", "Alice's passport number is X123.", now)])
    await memory.add_events_to_memory(app_name="other", user_id=USER, events=[ev("user", "Other app passport is Y999.", now)])
    await memory.flush()
    assert await memory.search(APP, USER, "passport number") == []
    assert [h.entry.content.parts[0].text for h in await memory.search(APP, "alice", "passport number")] == ["Alice's passport number is X123."]
    with pytest.raises(InvalidIdentifierError):
        await memory.search("", USER, "x")


async def test_filters_topics_author_session_time(memory):
    base = datetime(2024, 1, 1, tzinfo=timezone.utc)
    entries = [
        ("t1", "user", "s1", base, ["travel"], "Trip to Kyoto planned for April."),
        ("t2", "agent", "s1", base + timedelta(days=10), ["travel", "food"], "Recommended ramen shops in Kyoto."),
        ("t3", "user", "s2", base + timedelta(days=20), ["food"], "User loves spicy ramen in Kyoto."),
    ]
    await memory.add_memory(app_name=APP, user_id=USER, memories=[
        MemoryEntry(id=i, author=a, timestamp=t.isoformat(), content=types.Content(parts=[types.Part.from_text(text=c)]),
                    custom_metadata={"topics": tp, "session_id": s})
        for i, a, s, t, tp, c in entries
    ])
    await memory.flush()

    async def ids(**f):
        return sorted(h.memory_id for h in await memory.search(APP, USER, "Kyoto", filters=SearchFilters(**f)))

    assert await ids() == ["t1", "t2", "t3"]
    assert await ids(topics=["food"]) == ["t2", "t3"]
    assert await ids(author="user") == ["t1", "t3"]
    assert await ids(session_id="s1") == ["t1", "t2"]
    assert await ids(since=base + timedelta(days=5), until=base + timedelta(days=15)) == ["t2"]
    assert sorted(h.memory_id for h in await memory.search(APP, USER, "Kyoto", filters={"topics": ["travel"], "author": "agent"})) == ["t2"]


async def test_access_count_bumped_in_one_statement_and_frequency_signal(engine_db):
    svc = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder())
    try:
        now = time.time()
        await svc.add_events_to_memory(app_name=APP, user_id=USER, events=[
            ev("user", "The wifi password at home is sunflower42.", now), ev("user", "The garage door code is 1234.", now)])
        await svc.flush()
        for _ in range(3):
            hits = await svc.search(APP, USER, "wifi password", top_k=1)
        assert hits[0].entry.custom_metadata["access_count"] == 2  # read before this search's bump
        assert hits[0].signals.frequency > 0
        async with engine_db.engine.connect() as conn:
            rows = dict((await conn.execute(text("SELECT content, access_count FROM agent_memories"))).all())
        assert rows["The wifi password at home is sunflower42."] == 3
        assert rows["The garage door code is 1234."] == 0
        no_bump = await svc.search(APP, USER, "wifi password", top_k=1, bump_access=False)
        assert no_bump[0].entry.custom_metadata["access_count"] == 3
        assert (await svc.search(APP, USER, "wifi password", top_k=1, bump_access=False))[0].entry.custom_metadata["access_count"] == 3
    finally:
        await svc.close()


async def test_min_score_and_weights_change_the_ranking(memory):
    old = datetime(2020, 1, 1, tzinfo=timezone.utc)
    new = datetime.now(timezone.utc) - timedelta(hours=1)
    await memory.add_memory(app_name=APP, user_id=USER, memories=[
        MemoryEntry(id="old", timestamp=old.isoformat(), content=types.Content(parts=[types.Part.from_text(text="User's favourite colour is green.")])),
        MemoryEntry(id="new", timestamp=new.isoformat(), content=types.Content(parts=[types.Part.from_text(text="User's favourite colour is now purple.")])),
    ])
    await memory.flush()
    lexical = await memory.search(APP, USER, "favourite colour green", weights={"recency": 0.0})
    assert lexical[0].memory_id == "old"
    recent = await memory.search(APP, USER, "favourite colour green", weights={"recency": 2.0})
    assert recent[0].memory_id == "new"
    assert recent[0].signals.recency > 0.99 and recent[1].signals.recency < 0.01
    best = recent[0].score
    assert [h.memory_id for h in await memory.search(APP, USER, "favourite colour green", weights={"recency": 2.0}, min_score=best - 1e-6)] == ["new"]


async def test_add_session_to_memory_reads_turns_that_compaction_archived(memory, engine_db):
    """The default get_session leaves archived events out; the memory still gets every turn."""
    from adk_oceanbase import OceanBaseSessionService
    from adk_oceanbase.compaction import KeepLastN, compact_session

    sessions = OceanBaseSessionService(database=engine_db)
    s = await sessions.create_session(app_name=APP, user_id=USER)
    t0 = time.time() - 3600
    turns = [f"Fact number {i}: my locker code at the gym is {1000 + i}" for i in range(30)]
    for i, body in enumerate(turns):
        await sessions.append_event(s, ev("user" if i % 2 == 0 else "assistant", body, t0 + i))
    res = await compact_session(sessions, app_name=APP, user_id=USER, session_id=s.id,
                                policy=KeepLastN(keep_last=6, min_batch=1))
    assert res.compacted
    loaded = await sessions.get_session(app_name=APP, user_id=USER, session_id=s.id)
    seen = {e.content.parts[0].text for e in loaded.events if e.content and e.content.parts and e.content.parts[0].text}
    assert turns[0] not in seen  # the premise: the first turns were archived
    await memory.add_session_to_memory(loaded)
    async with engine_db.engine.connect() as conn:
        stored = {r[0] for r in await conn.execute(text("SELECT content FROM agent_memories WHERE session_id = :s"), {"s": s.id})}
    assert set(turns) <= stored
    # A session this database does not hold falls back to session.events.
    other = Session(id="elsewhere", app_name=APP, user_id=USER, last_update_time=t0,
                    events=[ev("user", "I keep my passport in the blue drawer.", t0)])
    await memory.add_session_to_memory(other)
    assert await count_rows(engine_db, "session_id = 'elsewhere'") == 1


async def test_rebuild_vector_index_keeps_search_working(memory, engine):
    """OceanBase/seekdb rebuild their HNSW index; MySQL/MariaDB have none and say so (``False``)."""
    await memory.add_memory(app_name=APP, user_id=USER, memories=[
        MemoryEntry(author="user", content=types.Content(parts=[types.Part.from_text(text=t)]))
        for t in ("I keep bees on the roof", "My car is a blue Volvo", "I teach piano on Sundays")])
    await memory.flush()
    assert await memory.rebuild_vector_index() is (engine == "seekdb")
    hits = await memory.search(APP, USER, "what car do I drive?", top_k=1)
    assert hits[0].entry.content.parts[0].text == "My car is a blue Volvo"


async def test_search_memory_size_and_access_counting_come_from_settings(engine_db):
    """ADK's tools call search_memory: how many it returns and whether that is an access are settings."""
    texts = [f"The locker number {i} belongs to the swimming club." for i in range(6)]

    async def access_counts() -> list[int]:
        async with engine_db.engine.connect() as conn:
            return sorted((await conn.execute(text("SELECT access_count FROM agent_memories"))).scalars())

    quiet = OceanBaseMemoryService(
        database=engine_db, embedder=HashEmbedder(),
        settings=MemorySettings(top_k=5, search_memory_top_k=2, search_memory_counts_access=False),
    )
    counting = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), settings=MemorySettings(top_k=5))
    try:
        now = time.time()
        await quiet.add_events_to_memory(app_name=APP, user_id=USER, events=[ev("user", t, now - i) for i, t in enumerate(texts)])
        await quiet.flush()
        res = await quiet.search_memory(app_name=APP, user_id=USER, query="swimming club locker")
        assert len(res.memories) == 2
        assert await access_counts() == [0] * 6  # not an access
        assert len(await quiet.search(APP, USER, "swimming club locker")) == 5  # search keeps top_k
        assert await access_counts() == [0] + [1] * 5  # and bump_access (default True)

        res = await counting.search_memory(app_name=APP, user_id=USER, query="swimming club locker")
        assert len(res.memories) == 5  # search_memory_top_k unset: top_k
        assert sum(await access_counts()) == 10  # counted as an access: bump_access
    finally:
        await quiet.close()
        await counting.close()


@seekdb_only("the one-round-trip batch is the SQL search path (cosine_distance); MySQL/MariaDB fetch and score in numpy")
async def test_search_is_one_round_trip_and_a_failed_read_runs_once_more(memory, engine_db, monkeypatch):
    """The SQL search sends its vector SET, statement and COMMIT together (``_read_batch``); a read
    failing with a listed server error (seekdb's rare 4016 on searches) runs once more, then raises."""
    from adk_oceanbase import gateway

    await memory.add_memory(app_name="app", user_id="u", memories=[MemoryEntry(
        author="user", content=types.Content(parts=[types.Part.from_text(text="my sister is a nurse in Lyon")]))])
    await memory.flush()
    opened = []
    real = gateway.raw_transaction

    def counting(*a, **kw):
        opened.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(gateway, "raw_transaction", counting)
    hits = await memory.search("app", "u", "where does the sister work", bump_access=False)
    assert [h.entry.custom_metadata["memory_id"] for h in hits] and len(opened) == 1

    opened.clear()
    missing = [(text("SELECT no_such_column FROM agent_memories"), {})]  # 1054
    with pytest.raises(pymysql.err.MySQLError) as failed:
        await memory._read_batch(missing, rerun_codes=frozenset({1054}))
    assert "no_such_column" in str(failed.value) and len(opened) == 2
    opened.clear()
    with pytest.raises(pymysql.err.MySQLError):
        await memory._read_batch(missing)  # not listed: no second run
    assert len(opened) == 1
