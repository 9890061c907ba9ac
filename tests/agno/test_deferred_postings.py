"""Agno's bulk ``upsert_memories`` leaves its postings to the vectorizer's round (seekdb, MariaDB).

The rule (``memory.postings``, deferred postings): the rows are readable when
the call returns; their postings exist, from their current text, once the
vectorizer's round claimed them (``flush()`` waits); a delete, an erasure or a
text change racing that round never leaves postings behind.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter

from agno.db.schemas.memory import UserMemory
from sqlalchemy import text

from adk_oceanbase.agno.memories import _lexical
from adk_oceanbase.governance import Retention, RetentionPolicy, delete_user_data, sweep
from adk_oceanbase.memory.vectorizer import Vectorizer


async def postings_of(db, user: str) -> dict[str, Counter[str]]:
    async with db.database.engine.connect() as conn:
        rows = (await conn.execute(text(
            "SELECT memory_id, term, tf FROM memory_terms WHERE app_name = 'agno' AND user_id = :u"), {"u": user})).all()
    out: dict[str, Counter[str]] = {}
    for mid, term, tf in rows:
        out.setdefault(mid, Counter())[term] = int(tf)
    return out


async def term_counts(db, user: str) -> dict[str, int]:
    async with db.database.engine.connect() as conn:
        rows = (await conn.execute(text(
            "SELECT memory_id, term_count FROM agent_memories WHERE app_name = 'agno' AND user_id = :u"), {"u": user})).all()
    return {r[0]: int(r[1]) for r in rows}


def expected_terms(db_memory: UserMemory) -> Counter[str]:
    return _lexical(db_memory.memory, db_memory.created_at)["terms"]


async def test_bulk_postings_appear_after_flush_and_follow_a_changed_text(ours):
    first = [UserMemory(memory_id=f"m{i}", memory=f"The user grows {w} tomatoes", user_id="u1")
             for i, w in enumerate(["purple", "striped", "yellow"])]
    stored = await ours.upsert_memories(first)
    assert [m.memory_id for m in await ours.get_user_memories(user_id="u1", search_content="tomatoes")] != []
    await ours.memory_service.flush()
    got = await postings_of(ours, "u1")
    assert got == {m.memory_id: expected_terms(m) for m in stored}
    assert await term_counts(ours, "u1") == {m.memory_id: sum(expected_terms(m).values()) for m in stored}

    changed = [UserMemory(memory_id="m0", memory="The user collects vintage bicycles", user_id="u1",
                          created_at=stored[0].created_at)]
    again = await ours.upsert_memories(changed)
    old_only = set(expected_terms(stored[0])) - set(expected_terms(again[0]))
    assert old_only  # "tomato", "purple": gone from the index in the call, before any round
    assert not old_only & set((await postings_of(ours, "u1")).get("m0", Counter()))
    await ours.memory_service.flush()
    got = await postings_of(ours, "u1")
    assert got["m0"] == expected_terms(again[0])
    assert (await term_counts(ours, "u1"))["m0"] == sum(expected_terms(again[0]).values())
    assert got["m1"] == expected_terms(stored[1])  # untouched rows keep theirs


async def test_search_finds_a_bulk_memory_by_its_words_after_flush(ours):
    await ours.upsert_memories([
        UserMemory(memory_id="a", memory="Allergic to hazelnuts and almonds", user_id="u1"),
        UserMemory(memory_id="b", memory="Plays the bassoon in an orchestra", user_id="u1"),
    ])
    await ours.memory_service.flush()
    found = await ours.search_user_memories("bassoon", user_id="u1", limit=1)
    assert [m.memory_id for m in found] == ["b"]
    assert "b" in await postings_of(ours, "u1")


async def test_an_unchanged_rewrite_keeps_the_row_due(ours):
    """A second bulk write of the same text before the round must not mark the row indexed without postings."""
    memory = UserMemory(memory_id="m", memory="Speaks Portuguese at home", user_id="u1")
    await ours.upsert_memories([memory])
    await ours.upsert_memories([memory])  # same text: not moved, keeps the row's count as it is
    await ours.memory_service.flush()
    assert (await postings_of(ours, "u1"))["m"] == expected_terms(memory)


async def _racing(ours, monkeypatch, race) -> None:
    """Runs ``race()`` while the vectorizer's claim transaction holds the rows, its postings written, uncommitted."""
    written, release = asyncio.Event(), asyncio.Event()
    original = Vectorizer._index_due

    async def held(self, conn, due, claim):
        await original(self, conn, due, claim)
        if due:  # the round that claimed the new rows: held open, its postings written
            written.set()
            await release.wait()

    monkeypatch.setattr(Vectorizer, "_index_due", held)
    await ours.upsert_memories([UserMemory(memory_id=f"m{i}", memory=f"Owns a {w} canoe", user_id="u1")
                                for i, w in enumerate(["red", "green"])])
    await asyncio.wait_for(written.wait(), 30)
    task = asyncio.create_task(race())
    await asyncio.sleep(0.3)  # lets the racer reach the rows' locks (not an assertion: either order must be clean)
    release.set()
    await task
    await ours.memory_service.flush()


async def test_erasure_racing_the_round_leaves_no_postings(ours, monkeypatch):
    await _racing(ours, monkeypatch, lambda: delete_user_data(ours.database, "agno", "u1"))
    assert await postings_of(ours, "u1") == {}
    assert await term_counts(ours, "u1") == {}


async def test_retention_racing_the_round_leaves_no_postings(ours, monkeypatch):
    later = time.time() + 1000 * 86400  # every memory expired under a one-day TTL
    await _racing(ours, monkeypatch,
                  lambda: sweep(ours.database, RetentionPolicy(Retention(memory_ttl="1d")), now=later))
    assert await term_counts(ours, "u1") == {}
    assert await postings_of(ours, "u1") == {}


async def test_delete_racing_the_round_leaves_no_postings(ours, monkeypatch):
    await _racing(ours, monkeypatch, lambda: ours.delete_user_memory("m0", user_id="u1"))
    got = await postings_of(ours, "u1")
    assert "m0" not in got and "m1" in got


async def test_text_change_racing_the_round_gets_the_new_texts_postings(ours, monkeypatch):
    new = UserMemory(memory_id="m0", memory="Restores antique harpsichords", user_id="u1")
    done: list[UserMemory] = []

    async def change() -> None:
        done.extend(await ours.upsert_memories([new]))

    await _racing(ours, monkeypatch, change)
    got = await postings_of(ours, "u1")
    assert got["m0"] == expected_terms(done[0])
    assert (await term_counts(ours, "u1"))["m0"] == sum(expected_terms(done[0]).values())


async def test_an_adk_merge_into_a_due_row_writes_its_postings(ours, monkeypatch):
    """The ADK service merging an exact duplicate into a row still due gives it its positive count and postings."""
    from google.adk.memory.memory_entry import MemoryEntry
    from google.genai import types

    vectorizer = ours.memory_service.vectorizer
    monkeypatch.setattr(vectorizer, "submit", lambda keys: None)  # no round before the merge
    body = "Keeps bees on the roof"
    await ours.upsert_memories([UserMemory(memory_id="m", memory=body, user_id="u1")])
    assert (await term_counts(ours, "u1"))["m"] < 0  # due: no round could run
    await ours.memory_service.add_memory(app_name="agno", user_id="u1", memories=[
        MemoryEntry(content=types.Content(role="user", parts=[types.Part(text=body)]), author="user")])
    counts = await term_counts(ours, "u1")
    assert list(counts) == ["m"] and counts["m"] > 0
    assert sum((await postings_of(ours, "u1"))["m"].values()) == counts["m"]
