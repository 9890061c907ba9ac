"""The pipeline's request path (issue #31): what ``add_session_to_memory`` queues, and what it refuses, on both engines.

``add_session_to_memory`` reads the guard and the stored log in one packet and
queues in one transaction of two packets; these tests pin what that path must
keep: positions from the stored log, turns held only in memory, the guard
(erasure, opt-out), the audit row.
"""

from __future__ import annotations

import json
import time

import pytest
from google.adk.events.event import Event
from google.adk.sessions.session import Session
from google.genai import types
from sqlalchemy import text

from adk_oceanbase import AuditSettings, MemoryWriteRaceError, OceanBaseSessionService
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService, PipelineSettings

from .test_memory_pipeline import LONG, ScriptedExtractor

APP = "app"


def said(author: str, words: str, i: int, *, thought: str | None = None) -> Event:
    parts = [types.Part(text=thought, thought=True)] if thought else []
    parts.append(types.Part(text=words))
    return Event(id=f"e{i:03d}", invocation_id="i", author=author, timestamp=time.time() - 60 + i,
                 content=types.Content(role="user", parts=parts))


def call(i: int) -> Event:
    """A tool call: no text, never a turn, yet it takes a place in the session."""
    return Event(id=f"e{i:03d}", invocation_id="i", author="agent", timestamp=time.time() - 60 + i,
                 content=types.Content(role="model", parts=[types.Part(
                     function_call=types.FunctionCall(name="lookup", args={"q": "x"}))]))


def front(db, **kw) -> OceanBaseMemoryService:
    """Queues only (``workers=0``): what is queued stays in the table to be read."""
    return OceanBaseMemoryService(database=db, embedder=HashEmbedder(), extractor=ScriptedExtractor(),
                                  settings=MemorySettings(bump_access=False), pipeline=PipelineSettings(workers=0), **kw)


async def rows(db, sql: str) -> list[tuple]:
    async with db.engine.connect() as conn:
        return [tuple(r) for r in (await conn.execute(text(sql))).all()]


async def queued_turns(db) -> list[tuple[str, str, int]]:
    out = []
    for (payload,) in await rows(db, "SELECT payload FROM memory_extraction_jobs ORDER BY created_at, job_id"):
        out += [(t["id"], t["text"], t["pos"]) for t in json.loads(payload)["turns"]]
    return sorted(out, key=lambda t: t[2])


async def test_stored_turns_keep_their_place_and_turns_held_only_in_memory_follow(engine_db):
    sessions = OceanBaseSessionService(database=engine_db)
    mem = front(engine_db)
    try:
        s = await sessions.create_session(app_name=APP, user_id="ann", session_id="s1")
        stored = [said("user", f"Where should I go hiking{LONG}", 0, thought="the user plans a trip"),
                  call(1), said("agent", f"Try the Dolomites{LONG}", 2)]
        for e in stored:
            await sessions.append_event(s, e)
        s = await sessions.get_session(app_name=APP, user_id="ann", session_id="s1")
        s.events.append(said("user", f"And what about my sister Anna{LONG}", 3))  # never stored
        await mem.add_session_to_memory(s)
        assert await queued_turns(engine_db) == [
            ("e000", f"Where should I go hiking{LONG}", 1),  # the thought is not a turn
            ("e002", f"Try the Dolomites{LONG}", 3),  # the tool call took place 2
            ("e003", f"And what about my sister Anna{LONG}", 4),  # after the stored log
        ]
        await mem.add_session_to_memory(s)  # again: nothing new
        assert len(await rows(engine_db, "SELECT job_id FROM memory_extraction_jobs")) == 2
    finally:
        await mem.close()
        await sessions.close()


async def test_a_session_read_before_erasure_is_not_queued(engine_db):
    """The inline path refuses it (tests/governance/test_erasure_races.py); the queue did not, until issue #31's rework."""
    sessions = OceanBaseSessionService(database=engine_db)
    mem = front(engine_db)
    try:
        s = await sessions.create_session(app_name=APP, user_id="hal", session_id="s1")
        for i in range(2):
            await sessions.append_event(s, said("user" if i == 0 else "agent", f"My card ends in 188{i}{LONG}", i))
        stale = await sessions.get_session(app_name=APP, user_id="hal", session_id="s1")
        await sessions.delete_user_data(app_name=APP, user_id="hal")
        with pytest.raises(MemoryWriteRaceError):
            await mem.add_session_to_memory(stale)
        with pytest.raises(MemoryWriteRaceError):  # the same turns one by one
            await mem.add_events_to_memory(app_name=APP, user_id="hal", events=stale.events, session_id="s1")
        assert await rows(engine_db, "SELECT COUNT(*) FROM memory_extraction_jobs") == [(0,)]

        again = await sessions.create_session(app_name=APP, user_id="hal", session_id="s1")  # said after: queued
        await sessions.append_event(again, said("user", f"I moved to Faro{LONG}", 5))
        await mem.add_session_to_memory(await sessions.get_session(app_name=APP, user_id="hal", session_id="s1"))
        assert await rows(engine_db, "SELECT COUNT(*) FROM memory_extraction_jobs") == [(1,)]
    finally:
        await mem.close()
        await sessions.close()


async def test_an_opted_out_user_queues_nothing_and_a_new_user_gets_a_guard_row(engine_db):
    mem = front(engine_db)
    try:
        talk = [said("user", f"I keep bees{LONG}", 0), said("agent", f"Noted{LONG}", 1)]
        await mem.set_memory_opt_out(APP, "olga", True)
        await mem.add_session_to_memory(Session(id="s1", app_name=APP, user_id="olga", events=talk))
        await mem.add_events_to_memory(app_name=APP, user_id="olga", events=talk, session_id="s2")
        assert await rows(engine_db, "SELECT COUNT(*) FROM memory_extraction_jobs") == [(0,)]

        assert await rows(engine_db, "SELECT COUNT(*) FROM memory_user_gen") == [(1,)]  # olga's, from the opt-out
        await mem.add_session_to_memory(Session(id="s1", app_name=APP, user_id="pia", events=talk))
        assert await rows(engine_db, "SELECT user_id FROM memory_extraction_jobs") == [("pia",)]
        assert await rows(engine_db, "SELECT generation FROM memory_user_gen ORDER BY generation") == [(0,), (1,)]
    finally:
        await mem.close()


async def test_the_enqueue_writes_its_audit_row_with_the_jobs(engine_db):
    mem = front(engine_db, audit=AuditSettings())
    try:
        talk = [said("user", f"I keep bees{LONG}", 0), said("agent", f"Noted{LONG}", 1),
                said("user", f"They make honey{LONG}", 2)]
        await mem.add_session_to_memory(Session(id="s1", app_name=APP, user_id="una", events=talk))
        await mem.add_session_to_memory(Session(id="s1", app_name=APP, user_id="una", events=talk))
        assert await rows(engine_db, "SELECT operation, status, row_count FROM audit_log WHERE user_id = 'una' "
                                     "ORDER BY audit_id") == [("memory_add", "ok", 2), ("memory_add", "ok", 0)]
    finally:
        await mem.close()
