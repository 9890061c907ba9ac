"""Consolidation: exact duplicates merge provenance, near duplicates merge (newer wins), others stay apart."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from google.adk.events.event import Event
from google.genai import types
from sqlalchemy import text

from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService, embedding_text
from adk_oceanbase.memory.consolidation import content_hash

APP, USER = "app", "u1"
FAST = dict(retry_base_s=0.01, batch_wait_s=0.0, bump_access=False)


def ev(txt: str, ts: float, author: str = "user") -> Event:
    return Event(id=Event.new_id(), invocation_id="i", author=author, timestamp=ts,
                 content=types.Content(role="user", parts=[types.Part.from_text(text=txt)]))


@pytest.fixture
async def memory(database):
    svc = OceanBaseMemoryService(database=database, embedder=HashEmbedder(), settings=MemorySettings(**FAST))
    yield svc
    await svc.close()


async def rows(database):
    async with database.engine.connect() as conn:
        res = await conn.execute(text(
            "SELECT memory_id, content, session_id, event_ids, superseded_by FROM agent_memories ORDER BY created_at"))
        return [r._asdict() for r in res]


def test_content_hash_normalises_case_width_and_spaces():
    assert content_hash("I live in  Berlin") == content_hash("i live in berlin ") == content_hash("Ｉ live in Berlin")
    assert content_hash("I live in Berlin") != content_hash("I live in Bern")


async def test_exact_duplicates_merge_provenance_instead_of_inserting(memory, database):
    now = time.time()
    first, second, third = ev("I live in Berlin with my two cats.", now), ev("i live in berlin with my two  cats.", now + 60), ev("I live in Berlin with my two cats.", now + 120)
    await memory.add_events_to_memory(app_name=APP, user_id=USER, events=[first], session_id="s1")
    await memory.add_events_to_memory(app_name=APP, user_id=USER, events=[second], session_id="s2")
    await memory.add_events_to_memory(app_name=APP, user_id=USER, events=[third, third], session_id="s3")
    got = await rows(database)
    assert len(got) == 1
    assert got[0]["session_id"] == "s1"
    assert json.loads(got[0]["event_ids"]) == [first.id, second.id, third.id]
    # Re-adding merged events changes nothing (idempotent even though they have no row of their own).
    await memory.add_events_to_memory(app_name=APP, user_id=USER, events=[second, third], session_id="s2")
    assert await rows(database) == got
    await memory.flush()
    hit = (await memory.search(APP, USER, "where does the user live"))[0]
    assert hit.entry.custom_metadata["event_ids"] == [first.id, second.id, third.id]


async def test_near_duplicates_merge_and_the_newer_wording_wins(memory, database):
    now = time.time()
    old_txt, new_txt = "My flight to Tokyo leaves on the 5th of May at 9am", "My flight to Tokyo leaves on the 5th of May at 9am!!"
    e_old, e_new = ev(old_txt, now - 3600), ev(new_txt, now - 60)
    emb = HashEmbedder()
    sim = float(np.dot(*emb.embed([embedding_text("user", _dt(e_old), old_txt), embedding_text("user", _dt(e_new), new_txt)])))
    assert sim >= 0.9  # the premise: these are near duplicates for this embedder
    await memory.add_events_to_memory(app_name=APP, user_id=USER, events=[e_old], session_id="s1")
    await memory.flush()
    await memory.add_events_to_memory(app_name=APP, user_id=USER, events=[e_new], session_id="s2")
    await memory.flush()
    got = {r["content"]: r for r in await rows(database)}
    newer = got[new_txt]
    assert got[old_txt]["superseded_by"] == newer["memory_id"]
    assert newer["superseded_by"] is None
    assert json.loads(newer["event_ids"]) == [e_new.id, e_old.id]
    assert memory.vectorizer.stats["merged"] == 1
    hits = await memory.search(APP, USER, "flight to Tokyo")
    assert [h.entry.content.parts[0].text for h in hits] == [new_txt]
    both = await memory.search(APP, USER, "flight to Tokyo", top_k=5)
    assert len(both) == 1
    audit = OceanBaseMemoryService(database=database, embedder=HashEmbedder(),
                                   settings=MemorySettings(include_superseded=True, **FAST))
    try:
        assert {h.entry.content.parts[0].text for h in await audit.search(APP, USER, "flight to Tokyo")} == {old_txt, new_txt}
    finally:
        await audit.close()


async def test_near_duplicates_in_one_batch_and_distinct_facts_stay(memory, database):
    now = time.time()
    events = [
        ev("Our anniversary dinner is booked at Chez Marcel", now - 30),
        ev("Our anniversary dinner is booked at Chez Marcel.", now - 20),
        ev("The kids have swimming lessons every Tuesday", now - 10),
    ]
    await memory.add_events_to_memory(app_name=APP, user_id=USER, events=events, session_id="s1")
    await memory.flush()
    live = [r for r in await rows(database) if r["superseded_by"] is None]
    assert sorted(r["content"] for r in live) == [
        "Our anniversary dinner is booked at Chez Marcel.", "The kids have swimming lessons every Tuesday"]


async def test_consolidation_can_be_switched_off(database):
    svc = OceanBaseMemoryService(database=database, embedder=HashEmbedder(), settings=MemorySettings(consolidate=False, **FAST))
    try:
        now = time.time()
        await svc.add_events_to_memory(app_name=APP, user_id=USER, events=[
            ev("Our anniversary dinner is booked at Chez Marcel", now - 30),
            ev("Our anniversary dinner is booked at Chez Marcel.", now - 20)])
        await svc.flush()
        assert all(r["superseded_by"] is None for r in await rows(database))
    finally:
        await svc.close()


def _dt(event: Event):
    from datetime import datetime, timezone

    return datetime.fromtimestamp(event.timestamp, tz=timezone.utc).replace(tzinfo=None)
