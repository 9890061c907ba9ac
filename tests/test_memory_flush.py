"""``flush()`` waits for rows merged while their first embedding round was running (issue #24).

A greeting said in two sessions: the second merge sets the row back to
``pending`` (its embedded text now has the newer date) and clears the claim
of the round embedding the first occurrence, so that round stores nothing;
the re-submission was dropped because the key was still in flight, and the
row stayed ``pending`` with 0 attempts until the periodic sweep (~75 s).
The embedder below holds its first round until the merge is committed, so
the race happens every time.
"""

from __future__ import annotations

import asyncio
import threading
from datetime import datetime, timezone

import pytest
from google.adk.events.event import Event
from google.genai import types
from sqlalchemy import text

from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService

APP, USER = "app", "u1"


class HeldEmbedder(HashEmbedder):
    """Blocks its first call until ``release`` is set; ``started`` says the round has begun."""

    def __init__(self) -> None:
        super().__init__()
        self.started, self.release = threading.Event(), threading.Event()

    def embed(self, texts):
        self.started.set()
        if not self.release.wait(120):
            raise TimeoutError("the test never released the embedder")
        return super().embed(texts)


def ev(txt: str, ts: float) -> Event:
    return Event(id=Event.new_id(), invocation_id="i", author="user", timestamp=ts,
                 content=types.Content(role="user", parts=[types.Part.from_text(text=txt)]))


@pytest.fixture(params=["database", "mariadb_database"])
def db(request):
    return request.getfixturevalue(request.param)


async def test_a_repeat_merged_during_its_first_round_is_embedded_by_flush(db):
    embedder = HeldEmbedder()
    memory = OceanBaseMemoryService(
        database=db, embedder=embedder, settings=MemorySettings(retry_base_s=0.01, batch_wait_s=0.0, bump_access=False)
    )
    day1 = datetime(2025, 3, 1, 9, tzinfo=timezone.utc).timestamp()
    try:
        await memory.add_events_to_memory(
            app_name=APP, user_id=USER, events=[ev("Good morning, how are you today?", day1)], session_id="s1"
        )
        assert await asyncio.to_thread(embedder.started.wait, 120)  # the first round holds the row's claim
        await memory.add_events_to_memory(
            app_name=APP, user_id=USER, events=[ev("Good morning, how are you today?", day1 + 86400)], session_id="s2"
        )
        embedder.release.set()
        await memory.flush()
        async with db.engine.connect() as conn:
            (status, occurrences, has_vector), = (
                await conn.execute(text("SELECT embed_status, occurrences, embedding IS NOT NULL FROM agent_memories"))
            ).all()
        assert (status, occurrences, bool(has_vector)) == ("ready", 2, True)
    finally:
        embedder.release.set()
        await memory.close()
