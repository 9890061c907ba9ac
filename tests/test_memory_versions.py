"""The version signal: a newer fact shares the full-text match of the fact it updates.

"Alice lives in Lisbon." (last year) and "Alice moved to Denver." (last month):
asked "Which city does Alice live in?", full-text sees "live" only in the old
fact and crowned it.  Facts close to each other (cosine >= version_similarity)
that the query sees about equally (version_band) share their full-text signal,
so recency picks the newer one.  Dialogue turns are records of what was said
when: they neither lend nor borrow.  Real MiniLM embeddings (the similarity
thresholds are calibrated on them), hence ``slow``.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from google.adk.events.event import Event
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from adk_oceanbase.memory import MemorySettings, OceanBaseMemoryService

pytestmark = pytest.mark.slow

APP = "versions"
NOW = datetime(2025, 6, 1, 12, tzinfo=timezone.utc)
"""The questions' clock, fixed: each fact's date is embedded and indexed with its text, so a
wall-clock date made them different data every day."""
FACTS = [  # (text, days ago)
    ("Alice lives in Lisbon.", 300),
    ("Alice moved to Denver.", 40),
    ("Alice works at Globex.", 200),
    ("Alice is learning Japanese.", 100),
    ("Ben lives in Osaka.", 150),
    ("Alice had dinner at Sakura.", 20),
]


@pytest.fixture
async def memory(engine_pristine_database, minilm):
    # Never-used tables: OceanBase's BM25 statistics are table-wide, and other tests' rows
    # would move the full-text scores these assertions compare.
    svc = OceanBaseMemoryService(database=engine_pristine_database, embedder=minilm, settings=MemorySettings(bump_access=False))
    yield svc
    await svc.close()


def text_of(hit) -> str:
    return hit.entry.content.parts[0].text


async def add_facts(svc: OceanBaseMemoryService, user: str) -> None:
    await svc.add_memory(app_name=APP, user_id=user, memories=[
        MemoryEntry(id=f"{user}-{i}", author="user", timestamp=(NOW - timedelta(days=days)).isoformat(),
                    content=types.Content(parts=[types.Part.from_text(text=t)]))
        for i, (t, days) in enumerate(FACTS)
    ])
    await svc.flush()


async def test_the_newer_version_of_a_fact_wins_a_question_worded_like_the_old_one(memory):
    await add_facts(memory, "facts")
    hits = await memory.search(APP, "facts", "Which city does Alice live in?", top_k=6, now=NOW)
    by_text = {text_of(h): h for h in hits}
    assert text_of(hits[0]) == "Alice moved to Denver."
    denver, lisbon = by_text["Alice moved to Denver."], by_text["Alice lives in Lisbon."]
    # Denver borrowed Lisbon's word match; Lisbon has no better version to borrow from.
    assert denver.signals.fulltext < lisbon.signals.fulltext
    assert denver.signals.version == pytest.approx(lisbon.signals.fulltext - denver.signals.fulltext, abs=1e-6)
    assert lisbon.signals.version == 0
    # Another fact of Alice's is no version of her address: the query sees it much less.
    assert by_text.get("Alice is learning Japanese.") is None or by_text["Alice is learning Japanese."].signals.version == 0

    # Without the signal the old wording wins: the trap is real.
    plain = await memory.search(APP, "facts", "Which city does Alice live in?", top_k=1, weights={"version": 0}, now=NOW)
    assert text_of(plain[0]) == "Alice lives in Lisbon."


async def test_restating_an_old_fact_still_finds_that_fact(memory):
    await add_facts(memory, "restate")
    hits = await memory.search(APP, "restate", "Alice lives in Lisbon", top_k=2, now=NOW)
    assert text_of(hits[0]) == "Alice lives in Lisbon."


async def test_dialogue_turns_neither_lend_nor_borrow(memory):
    events = [
        Event(id=f"e{i}", invocation_id=f"inv{i}", author="user", timestamp=(NOW - timedelta(days=days)).timestamp(),
              content=types.Content(role="user", parts=[types.Part.from_text(text=t)]))
        for i, (t, days) in enumerate(FACTS)
    ]
    await memory.add_events_to_memory(app_name=APP, user_id="turns", events=events, session_id="s1")
    await memory.flush()
    question = "Which city does Alice live in?"
    hits = await memory.search(APP, "turns", question, top_k=6, now=NOW)
    assert len(hits) == len(FACTS) and all(h.signals.version == 0 for h in hits)
    plain = await memory.search(APP, "turns", question, top_k=6, weights={"version": 0}, now=NOW)
    assert [(h.memory_id, h.score) for h in plain] == [(h.memory_id, h.score) for h in hits]
