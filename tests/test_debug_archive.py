"""The debug archive: temp: state and tool scratch values ADK discards, kept per session in a bounded FIFO."""

from __future__ import annotations

import json
import time

import pytest
from google.adk.agents.llm_agent import LlmAgent
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.runners import Runner
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from sqlalchemy import text

from adk_oceanbase import OceanBaseSessionService, ValidationError
from adk_oceanbase.governance import DebugArchiveSettings

from .fakes import ScriptedLlm, call_reply, has_function_response, last_user_text, text_reply

APP = "dbg_app"


@pytest.fixture(params=["seekdb", "mariadb"])
def db(request):
    return request.getfixturevalue("database" if request.param == "seekdb" else "mariadb_database")


def state_event(delta: dict, ts: float) -> Event:
    return Event(author="agent", invocation_id="inv", timestamp=ts, actions=EventActions(state_delta=delta))


async def archive_rows(db) -> int:
    async with db.engine.connect() as conn:
        return int((await conn.execute(text("SELECT COUNT(*) FROM debug_archive"))).scalar())


def delete_files(pattern: str, tool_context: ToolContext) -> dict:
    """Deletes files matching a glob (pretend)."""
    tool_context.state["temp:resolved_paths"] = [f"/data/{n}" for n in ("a.tmp", "b.tmp")]
    tool_context.state["temp:pattern_seen"] = pattern
    return {"deleted": 2}


def script(request):
    if has_function_response(request):
        return text_reply("Deleted two files.")
    return call_reply("delete_files", pattern=last_user_text(request).split()[-1])


async def test_tool_scratch_and_temp_state_are_archived_and_queryable_per_tool(engine_db, tmp_path):
    svc = OceanBaseSessionService(database=engine_db, debug_archive=DebugArchiveSettings())
    agent = LlmAgent(name="janitor", model=ScriptedLlm(script=script), tools=[delete_files], output_key="temp:draft")
    runner = Runner(app_name=APP, agent=agent, session_service=svc)
    s = await svc.create_session(app_name=APP, user_id="u1")
    msg = types.Content(role="user", parts=[types.Part(text="please delete /data/*")])
    async for _ in runner.run_async(user_id="u1", session_id=s.id, new_message=msg):
        pass

    entries = await svc.debug_entries(app_name=APP, user_id="u1", session_id=s.id)
    by_key = {e.key: e for e in entries}
    assert by_key["temp:resolved_paths"].value == ["/data/a.tmp", "/data/b.tmp"]
    assert by_key["temp:pattern_seen"].kind == "tool_scratch" and by_key["temp:pattern_seen"].tool_name == "delete_files"
    assert by_key["temp:pattern_seen"].value == "/data/*"
    assert by_key["temp:draft"].kind == "temp_state" and by_key["temp:draft"].value == "Deleted two files."
    assert [e.entry_seq for e in entries] == [1, 2, 3]
    # ADK's contract holds: nothing temp: is stored with the events or in the state
    stored = await svc.get_session(app_name=APP, user_id="u1", session_id=s.id)
    assert not any(k.startswith("temp:") for e in stored.events for k in (e.actions.state_delta or {}))
    assert not any(k.startswith("temp:") for k in stored.state)
    seqs = {e.event_seq for e in entries}
    async with engine_db.engine.connect() as conn:
        ids = dict((await conn.execute(text("SELECT seq, event_id FROM session_events"))).all())
    assert {ids[e.event_seq] for e in entries} == {e.event_id for e in entries} and len(seqs) == 2

    tool_only = await svc.debug_entries(app_name=APP, user_id="u1", session_id=s.id, tool="delete_files")
    assert {e.key for e in tool_only} == {"temp:resolved_paths", "temp:pattern_seen"}
    assert await svc.debug_entries(app_name=APP, user_id="u1", session_id=s.id, tool="other") == []

    path = tmp_path / "trace.jsonl"
    exported = await svc.export_debug_jsonl(app_name=APP, user_id="u1", session_id=s.id, path=str(path))
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert exported == path.read_text() and len(lines) == 3
    assert lines[0]["key"] == "temp:resolved_paths" and lines[0]["created_at"].endswith("+00:00")


async def test_fifo_keeps_the_newest_entries_per_session(db):
    svc = OceanBaseSessionService(database=db, debug_archive=DebugArchiveSettings(max_entries_per_session=3))
    s = await svc.create_session(app_name=APP, user_id="u1")
    other = await svc.create_session(app_name=APP, user_id="u1")
    now = time.time()
    for i in range(5):
        await svc.append_event(s, state_event({"temp:step": i, "kept": i}, now + i))
    await svc.append_event(other, state_event({"temp:a": 1, "temp:b": 2}, now))
    entries = await svc.debug_entries(app_name=APP, user_id="u1", session_id=s.id)
    assert [(e.entry_seq, e.value) for e in entries] == [(3, 2), (4, 3), (5, 4)]
    assert [e.value for e in await svc.debug_entries(app_name=APP, user_id="u1", session_id=s.id, limit=2)] == [3, 4]
    assert len(await svc.debug_entries(app_name=APP, user_id="u1", session_id=other.id)) == 2
    assert s.state["kept"] == 4 and s.state["temp:step"] == 4  # the caller's session, as ADK leaves it
    await svc.delete_session(app_name=APP, user_id="u1", session_id=s.id)
    assert await svc.debug_entries(app_name=APP, user_id="u1", session_id=s.id) == []
    assert await archive_rows(db) == 2


async def test_off_by_default_writes_nothing(engine_db):
    svc = OceanBaseSessionService(database=engine_db)
    s = await svc.create_session(app_name=APP, user_id="u1")
    await svc.append_event(s, state_event({"temp:x": 1}, time.time()))
    assert await archive_rows(engine_db) == 0


async def test_big_and_non_json_values_never_fail_an_append(engine_db):
    svc = OceanBaseSessionService(database=engine_db, debug_archive=DebugArchiveSettings(max_value_bytes=100))
    s = await svc.create_session(app_name=APP, user_id="u1")
    blob = "x" * 1000
    await svc.append_event(s, state_event({"temp:blob": blob, "temp:obj": object()}, time.time()))
    entries = {e.key: e.value for e in await svc.debug_entries(app_name=APP, user_id="u1", session_id=s.id)}
    assert entries["temp:blob"]["truncated"] is True and entries["temp:blob"]["bytes"] == 1002
    assert entries["temp:obj"].startswith("<object object")


def test_settings_are_validated():
    with pytest.raises(ValidationError, match="max_entries_per_session"):
        DebugArchiveSettings(max_entries_per_session=0)
