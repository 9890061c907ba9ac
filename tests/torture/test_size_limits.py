"""Size limits enforced before any write, with typed errors (issue #9, item 6).

An append sends the event JSON and its state delta again as state rows, both
escaped (``"`` becomes ``\\"`` in JSON, then ``\\\\\\"`` in SQL), in one
packet: an event under ``Config.max_event_bytes`` could still break the
server's ``max_allowed_packet`` (raw error 1153).  ``create_session`` state
and memory content had no limit at all.
"""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types
from sqlalchemy import text

from adk_oceanbase import EventTooLargeError, OceanBaseSessionService, ValidationError
from adk_oceanbase.errors import MemoryTooLongError, StateTooLargeError
from adk_oceanbase.engine import Database
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService

from ..conftest import OUR_TABLES


@pytest.fixture(params=["seekdb", "mariadb"])
def db(request: pytest.FixtureRequest) -> Database:
    return request.getfixturevalue("database" if request.param == "seekdb" else "mariadb_database")


async def counts(db: Database) -> dict[str, int]:
    async with db.engine.connect() as conn:
        return {t: (await conn.execute(text(f"SELECT COUNT(*) FROM {t}"))).scalar() for t in OUR_TABLES}


def delta_event(**delta: Any) -> Event:
    return Event(author="agent", invocation_id="inv", actions=EventActions(state_delta=delta))


async def test_an_event_under_max_event_bytes_never_breaks_max_allowed_packet(db: Database) -> None:
    svc = OceanBaseSessionService(database=db)
    s = await svc.create_session(app_name="big", user_id="u")
    limit = db.config.max_event_bytes
    # Quotes double in the event JSON and double again in SQL, in the event and in its state row.
    quotes = delta_event(big='"' * (limit // 2 - 2_000))
    before = await counts(db)
    with pytest.raises(EventTooLargeError) as info:
        await svc.append_event(s, quotes)
    assert "max_allowed_packet" in str(info.value)
    assert await counts(db) == before and s.events == []
    # Plain text whose event and state row (each about n bytes, nothing to escape) fit the packet
    # with 64 KB to spare: stored whole.  Just under max_event_bytes itself the outcome hangs on
    # a few hundred bytes of SQL around the values, so the test stays clear of that edge.
    assert db.max_packet > 0
    n = min(limit, db.max_packet // 2) - 64_000
    await svc.append_event(s, delta_event(big="x" * n))
    got = await svc.get_session(app_name="big", user_id="u", session_id=s.id)
    assert len(got.state["big"]) == n and len(got.events) == 1
    # The session still takes ordinary appends.
    await svc.append_event(s, delta_event(small=1))


async def test_create_session_state_is_limited_like_an_event(db: Database) -> None:
    svc = OceanBaseSessionService(database=db)
    limit = db.config.max_event_bytes
    before = await counts(db)
    with pytest.raises(StateTooLargeError) as info:
        await svc.create_session(app_name="big", user_id="u", state={"big": "x" * limit})
    assert "max_event_bytes" in str(info.value)
    with pytest.raises(StateTooLargeError) as info:  # under max_event_bytes, over the packet once escaped
        await svc.create_session(app_name="big", user_id="u", state={"big": '"' * (limit // 2 - 2_000)})
    assert "max_allowed_packet" in str(info.value)
    assert await counts(db) == before
    assert issubclass(StateTooLargeError, ValidationError)


async def test_memory_content_has_a_maximum(db: Database) -> None:
    settings = MemorySettings(max_content_chars=1_000)
    mem = OceanBaseMemoryService(database=db, embedder=HashEmbedder(), settings=settings)
    try:
        long = MemoryEntry(author="user", content=types.Content(role="user", parts=[types.Part(text="word " * 300)]))
        before = await counts(db)
        with pytest.raises(MemoryTooLongError) as info:
            await mem.add_memory(app_name="m", user_id="u", memories=[long])
        assert "max_content_chars" in str(info.value) and "1000" in str(info.value).replace(",", "")
        assert await counts(db) == before
        # A turn ingested from a session is kept, cut at the limit on a word boundary.
        turn = Event(author="user", content=types.Content(role="user", parts=[types.Part(text="garden " * 300)]))
        await mem.add_events_to_memory(app_name="m", user_id="u", events=[turn])
        async with db.engine.connect() as conn:
            stored = (await conn.execute(text("SELECT content FROM agent_memories"))).scalar_one()
        assert 900 < len(stored) <= 1_000 and stored.endswith("garden")
    finally:
        await mem.close()

