"""Consolidation: exact duplicates merge provenance, near-duplicate facts merge (newer wins), turns and distinct facts stay apart."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from google.adk.events.event import Event
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types
from sqlalchemy import text

from adk_oceanbase.memory import HashEmbedder, LlmExtractor, MemorySettings, OceanBaseMemoryService, embedding_text
from adk_oceanbase.memory.consolidation import content_hash, word_overlap

from .fakes import ScriptedLlm, last_user_text, text_reply

APP, USER = "app", "u1"
FAST = dict(retry_base_s=0.01, batch_wait_s=0.0, bump_access=False)


def ev(txt: str, ts: float, author: str = "user") -> Event:
    return Event(id=Event.new_id(), invocation_id="i", author=author, timestamp=ts,
                 content=types.Content(role="user", parts=[types.Part.from_text(text=txt)]))


@pytest.fixture
async def memory(engine_db):
    svc = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), settings=MemorySettings(**FAST))
    yield svc
    await svc.close()


async def rows(engine_db):
    async with engine_db.engine.connect() as conn:
        res = await conn.execute(text(
            "SELECT memory_id, content, session_id, event_ids, superseded_by, occurrences FROM agent_memories "
            "ORDER BY created_at"))
        return [r._asdict() for r in res]


def test_content_hash_normalises_case_width_and_spaces():
    assert content_hash("I live in  Berlin") == content_hash("i live in berlin ") == content_hash("Ｉ live in Berlin")
    assert content_hash("I live in Berlin") != content_hash("I live in Bern")


async def test_exact_duplicates_merge_provenance_instead_of_inserting(memory, engine_db):
    now = time.time()
    first, second, third = ev("I live in Berlin with my two cats.", now), ev("i live in berlin with my two  cats.", now + 60), ev("I live in Berlin with my two cats.", now + 120)
    await memory.add_events_to_memory(app_name=APP, user_id=USER, events=[first], session_id="s1")
    await memory.add_events_to_memory(app_name=APP, user_id=USER, events=[second], session_id="s2")
    await memory.add_events_to_memory(app_name=APP, user_id=USER, events=[third, third], session_id="s3")
    got = await rows(engine_db)
    assert len(got) == 1
    assert got[0]["session_id"] == "s3"  # the row moved to the newest occurrence
    assert got[0]["occurrences"] == 3
    assert json.loads(got[0]["event_ids"]) == [first.id, second.id, third.id]
    # Re-adding merged events changes nothing (idempotent even though they have no row of their own).
    await memory.add_events_to_memory(app_name=APP, user_id=USER, events=[second, third], session_id="s2")
    assert await rows(engine_db) == got
    await memory.flush()
    hit = (await memory.search(APP, USER, "where does the user live"))[0]
    assert hit.entry.custom_metadata["event_ids"] == [first.id, second.id, third.id]


def echo_facts() -> LlmExtractor:
    """An extractor whose scripted model states each user turn back as one fact."""

    def script(request):
        convo = last_user_text(request).split("CONVERSATION", 1)[1]
        said = [line[len("user: "):] for line in convo.splitlines() if line.startswith("user: ")]
        return text_reply(json.dumps({"facts": [{"text": t, "importance": 0.6} for t in said]}))

    return LlmExtractor(ScriptedLlm(script=script), max_facts=3)


@pytest.fixture
async def facts(engine_db):
    svc = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), pipeline=False, extractor=echo_facts(),
                                 settings=MemorySettings(**FAST))
    yield svc
    await svc.close()


async def test_near_duplicate_facts_merge_and_the_newer_wording_wins(facts, engine_db):
    now = time.time()
    old_txt, new_txt = "My flight to Tokyo leaves on the 5th of May at 9am", "My flight to Tokyo leaves on the 5th of May at 9am!!"
    e_old, e_new = ev(old_txt, now - 3600), ev(new_txt, now - 60)
    emb = HashEmbedder()
    sim = float(np.dot(*emb.embed([embedding_text("user", _dt(e_old), old_txt), embedding_text("user", _dt(e_new), new_txt)])))
    assert sim >= 0.9  # the premise: these are near duplicates for this embedder
    await facts.add_events_to_memory(app_name=APP, user_id=USER, events=[e_old], session_id="s1")
    await facts.flush()
    await facts.add_events_to_memory(app_name=APP, user_id=USER, events=[e_new], session_id="s2")
    await facts.flush()
    got = {r["content"]: r for r in await rows(engine_db)}
    newer = got[new_txt]
    assert got[old_txt]["superseded_by"] == newer["memory_id"]
    assert newer["superseded_by"] is None
    assert json.loads(newer["event_ids"]) == [e_new.id, e_old.id]
    assert facts.vectorizer.stats["merged"] == 1
    hits = await facts.search(APP, USER, "flight to Tokyo")
    assert [h.entry.content.parts[0].text for h in hits] == [new_txt]
    both = await facts.search(APP, USER, "flight to Tokyo", top_k=5)
    assert len(both) == 1
    audit = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(),
                                   settings=MemorySettings(include_superseded=True, **FAST))
    try:
        assert {h.entry.content.parts[0].text for h in await audit.search(APP, USER, "flight to Tokyo")} == {old_txt, new_txt}
    finally:
        await audit.close()


async def test_near_duplicate_facts_in_one_batch_merge_and_distinct_facts_stay(memory, engine_db):
    when = datetime(2026, 3, 1, tzinfo=timezone.utc)
    said = ["Our anniversary dinner is booked at Chez Marcel", "Our anniversary dinner is booked at Chez Marcel.",
            "The kids have swimming lessons every Tuesday"]
    await memory.add_memory(app_name=APP, user_id=USER, memories=[
        MemoryEntry(author="user", timestamp=(when + timedelta(seconds=i)).isoformat(),
                    content=types.Content(parts=[types.Part.from_text(text=t)])) for i, t in enumerate(said)])
    await memory.flush()
    live = [r for r in await rows(engine_db) if r["superseded_by"] is None]
    assert sorted(r["content"] for r in live) == [
        "Our anniversary dinner is booked at Chez Marcel.", "The kids have swimming lessons every Tuesday"]


def test_word_overlap_tells_restatements_from_other_facts():
    assert word_overlap("Our dinner is booked at Chez Marcel", "our dinner is booked at Chez Marcel!") == 1.0
    assert word_overlap("Ines grabbed coffee at Kaffeehaus.", "Tove grabbed coffee at Kaffeehaus.") == pytest.approx(4 / 6)
    assert word_overlap("我住在北京", "我住在上海") == pytest.approx(3 / 7)


class SameVector(HashEmbedder):
    """Every text gets the same vector: cosine says 'duplicate' for everything."""

    def embed(self, texts):
        v = np.zeros((len(texts), self.dim), dtype=np.float32)
        v[:, 0] = 1.0
        return v


async def test_cosine_alone_does_not_merge_facts_about_different_people(engine_db):
    svc = OceanBaseMemoryService(database=engine_db, embedder=SameVector(), settings=MemorySettings(**FAST))
    try:
        when = datetime(2026, 3, 1, tzinfo=timezone.utc)
        said = ["Ines grabbed coffee at Kaffeehaus.", "Tove grabbed coffee at Kaffeehaus.", "Tove grabbed coffee at Kaffeehaus!"]
        await svc.add_memory(app_name=APP, user_id=USER, memories=[
            MemoryEntry(author="user", timestamp=(when + timedelta(seconds=i)).isoformat(),
                        content=types.Content(parts=[types.Part.from_text(text=t)])) for i, t in enumerate(said)])
        await svc.flush()
        live = sorted(r["content"] for r in await rows(engine_db) if r["superseded_by"] is None)
        assert live == ["Ines grabbed coffee at Kaffeehaus.", "Tove grabbed coffee at Kaffeehaus!"]
    finally:
        await svc.close()


async def test_dialogue_turns_are_records_never_near_duplicate_merged(memory, engine_db):
    """Two near-identical turns are two things said: both stay searchable, neither is superseded."""
    now = time.time()
    turns = [ev("Our anniversary dinner is booked at Chez Marcel", now - 30),
             ev("Our anniversary dinner is booked at Chez Marcel.", now - 20)]
    await memory.add_events_to_memory(app_name=APP, user_id=USER, events=turns, session_id="s1")
    await memory.flush()
    got = await rows(engine_db)
    assert len(got) == 2 and all(r["superseded_by"] is None for r in got)
    assert memory.vectorizer.stats["merged"] == 0
    # ... and a later fact saying the same thing does not swallow the turns either.
    await memory.add_memory(app_name=APP, user_id=USER, memories=[
        MemoryEntry(author="user", content=types.Content(parts=[types.Part.from_text(
            text="Our anniversary dinner is booked at Chez Marcel!")]))])
    await memory.flush()
    assert all(r["superseded_by"] is None for r in await rows(engine_db))
    assert len(await memory.search(APP, USER, "anniversary dinner Chez Marcel", top_k=5)) == 3


async def test_consolidation_can_be_switched_off(engine_db):
    svc = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), settings=MemorySettings(consolidate=False, **FAST))
    try:
        when = datetime(2026, 3, 1, tzinfo=timezone.utc)
        await svc.add_memory(app_name=APP, user_id=USER, memories=[
            MemoryEntry(author="user", timestamp=(when + timedelta(seconds=i)).isoformat(),
                        content=types.Content(parts=[types.Part.from_text(text=t)]))
            for i, t in enumerate(["Our anniversary dinner is booked at Chez Marcel",
                                   "Our anniversary dinner is booked at Chez Marcel."])])
        await svc.flush()
        assert all(r["superseded_by"] is None for r in await rows(engine_db))
    finally:
        await svc.close()


def _dt(event: Event):
    return datetime.fromtimestamp(event.timestamp, tz=timezone.utc).replace(tzinfo=None)


async def stored(engine_db, where: str = "1 = 1"):
    async with engine_db.engine.connect() as conn:
        return (await conn.execute(text(
            "SELECT memory_id, content, session_id, turn_pos, event_ids, created_at, occurrences, search_text, "
            f"embed_status, embedding FROM agent_memories WHERE {where}"))).all()


async def test_a_repeated_turn_moves_to_its_newest_occurrence_and_is_re_embedded(memory, engine_db):
    day1 = datetime(2025, 3, 1, 9, tzinfo=timezone.utc).timestamp()
    day9 = day1 + 8 * 86400
    old = [ev("hello there", day1 - 5), ev("My favourite tea is genmaicha.", day1)]
    new = [ev("what's new", day9 - 5), ev("my favourite tea is  genmaicha.", day9)]
    await memory.add_events_to_memory(app_name=APP, user_id=USER, events=old, session_id="s1")
    await memory.flush()
    await memory.add_events_to_memory(app_name=APP, user_id=USER, events=new, session_id="s2")
    (row,) = await stored(engine_db, "content LIKE '%genmaicha%'")
    assert row.created_at == datetime(2025, 3, 9, 9) and row.session_id == "s2" and row.content == new[1].content.parts[0].text
    assert row.occurrences == 2 and json.loads(row.event_ids) == [old[1].id, new[1].id]
    assert row.search_text.startswith("9 march 2025") and row.embed_status == "pending"  # the embedded text has the date
    await memory.flush()
    (row,) = await stored(engine_db, "content LIKE '%genmaicha%'")
    want = HashEmbedder().embed([embedding_text("user", datetime(2025, 3, 9, 9), row.content)])[0]
    assert row.embed_status == "ready"
    assert np.allclose(engine_db.dialect.decode_vector(row.embedding), want, atol=1e-5)
    # recency sees the repeat: the memory ranks as of day 9
    hit = (await memory.search(APP, USER, "favourite tea", now=datetime(2025, 3, 9, 10, tzinfo=timezone.utc)))[0]
    assert "genmaicha" in hit.entry.content.parts[0].text and hit.entry.timestamp.startswith("2025-03-09")
    assert hit.entry.custom_metadata["occurrences"] == 2 and hit.signals.recency > 0.99


async def test_an_older_repeat_arriving_later_counts_but_keeps_the_newer_date(memory, engine_db):
    t = datetime(2025, 5, 1, tzinfo=timezone.utc).timestamp()
    later, earlier = ev("I moved to Porto last spring.", t), ev("I moved to Porto last spring.", t - 30 * 86400)
    await memory.add_events_to_memory(app_name=APP, user_id=USER, events=[later], session_id="late")
    await memory.flush()
    await memory.add_events_to_memory(app_name=APP, user_id=USER, events=[earlier], session_id="early")
    (row,) = await stored(engine_db)
    assert row.session_id == "late" and row.created_at == datetime(2025, 5, 1) and row.occurrences == 2
    assert json.loads(row.event_ids) == [later.id, earlier.id]
    assert row.embed_status == "ready"  # the embedded text did not change: no new vector needed
    # re-ingesting either event counts nothing more
    await memory.add_events_to_memory(app_name=APP, user_id=USER, events=[earlier, later], session_id="late")
    assert (await stored(engine_db))[0].occurrences == 2
    # a batch holding a merged event and a new repeat counts the new one only
    third = ev("I moved to Porto last spring.", t + 86400)
    await memory.add_events_to_memory(app_name=APP, user_id=USER, events=[earlier, third], session_id="third")
    (row,) = await stored(engine_db)
    assert row.occurrences == 3 and row.session_id == "third" and row.created_at == datetime(2025, 5, 2)
