"""Sessions and runs: every call runs on Agno's ``SqliteDb`` and on ours, and the answers must agree (seekdb, MariaDB)."""

from __future__ import annotations

import time

import pytest
from agno.db.base import SessionType
from agno.models.message import Message
from agno.run.agent import RunOutput
from agno.run.base import RunStatus
from agno.session import AgentSession, TeamSession, WorkflowSession

from adk_oceanbase.errors import InvalidIdentifierError, PayloadTooLargeError


def agent_session(sid: str, user: str | None = "u1", agent: str = "a1", created: int | None = None, name: str | None = None):
    data = {"session_state": {"city": "Porto"}, **({"session_name": name} if name else {})}
    return AgentSession(session_id=sid, agent_id=agent, user_id=user, session_data=data, metadata={"k": [1, 2]},
                        agent_data={"name": "helper"}, created_at=created or int(time.time()))


def run(rid: str, sid: str, text: str, parent: str | None = None, status: RunStatus = RunStatus.completed) -> RunOutput:
    return RunOutput(run_id=rid, session_id=sid, agent_id="a1", user_id="u1", content=text, parent_run_id=parent,
                     status=status, messages=[Message(role="user", content=text)], created_at=int(time.time()))


def shape(session) -> dict:
    """What must agree: everything but the clock of the write."""
    d = session.to_dict() if not isinstance(session, dict) else dict(session)
    d.pop("updated_at", None)
    d["runs"] = [r["run_id"] if isinstance(r, dict) else r.run_id for r in d.get("runs") or []]
    return d


async def test_a_session_round_trips_like_agnos(both):
    s = agent_session("s1")
    ref, ours = await both("upsert_session", s)
    assert shape(ours) == shape(ref)
    ref, ours = await both("get_session", "s1", SessionType.AGENT)
    assert isinstance(ours, AgentSession) and shape(ours) == shape(ref)
    ref, ours = await both("get_session", "s1", SessionType.AGENT, deserialize=False)
    assert ours["session_data"] == ref["session_data"] and ours["metadata"] == ref["metadata"]
    assert await both("get_session", "missing") == (None, None)
    assert await both("get_session", "s1", user_id="someone-else") == (None, None)


async def test_team_and_workflow_sessions(both):
    team = TeamSession(session_id="t1", team_id="team", user_id="u1", team_data={"n": 1}, created_at=int(time.time()))
    flow = WorkflowSession(session_id="w1", workflow_id="wf", user_id="u1", workflow_data={"steps": 2},
                           created_at=int(time.time()))
    for s in (team, flow):
        ref, ours = await both("upsert_session", s)
        assert shape(ours) == shape(ref)
    ref, ours = await both("get_session", "t1", SessionType.TEAM)
    assert isinstance(ours, TeamSession) and shape(ours) == shape(ref)
    ref, ours = await both("get_session", "w1", SessionType.WORKFLOW)
    assert isinstance(ours, WorkflowSession) and shape(ours) == shape(ref)


async def test_an_upsert_by_another_user_is_refused_and_changes_nothing(both):
    await both("upsert_session", agent_session("s1", user="alice"))
    thief = agent_session("s1", user="mallory")
    thief.session_data = {"session_state": {"stolen": True}}
    assert await both("upsert_session", thief) == (None, None)
    ref, ours = await both("get_session", "s1")
    assert ours.user_id == ref.user_id == "alice" and ours.session_data == ref.session_data


async def test_runs_attach_in_order_and_runs_limit_keeps_the_newest_history(both):
    await both("upsert_session", agent_session("s1"))
    for i in range(5):
        await both("upsert_run", run(f"r{i}", "s1", f"turn {i}"), session_id="s1", user_id="u1", run_index=i)
    await both("upsert_run", run("child", "s1", "member", parent="r4"), session_id="s1", user_id="u1", run_index=5)
    await both("upsert_run", run("bad", "s1", "x", status=RunStatus.error), session_id="s1", user_id="u1", run_index=6)
    ref, ours = await both("get_session", "s1", SessionType.AGENT)
    assert [r.run_id for r in ours.runs] == [r.run_id for r in ref.runs] == ["r0", "r1", "r2", "r3", "r4", "child", "bad"]
    ref, ours = await both("get_session", "s1", SessionType.AGENT, runs_limit=2)
    assert [r.run_id for r in ours.runs] == [r.run_id for r in ref.runs]
    # an update keeps the run's place; a new run without an index goes last
    await both("upsert_run", run("r1", "s1", "turn 1 edited"), session_id="s1", user_id="u1")
    await both("upsert_run", run("r9", "s1", "late"), session_id="s1", user_id="u1")
    ref, ours = await both("get_session", "s1", SessionType.AGENT)
    assert [r.run_id for r in ours.runs] == [r.run_id for r in ref.runs]
    assert ours.runs[1].content == ref.runs[1].content == "turn 1 edited"
    ref, ours = await both("get_run", "r1")
    assert ours.content == ref.content and ours.messages[0].content == ref.messages[0].content == "turn 1 edited"


async def test_get_runs_filters_and_deletes(both):
    await both("upsert_session", agent_session("s1"))
    for i in range(3):
        await both("upsert_run", run(f"r{i}", "s1", f"t{i}"), session_id="s1", user_id="u1", run_index=i)
    ref, ours = await both("get_runs", session_id="s1", status=RunStatus.completed)
    assert [r.run_id for r in ours] == [r.run_id for r in ref]
    ref, ours = await both("get_runs", session_id="s1", limit=2, page=2, deserialize=False)
    assert [r["run_id"] for r in ours[0]] == [r["run_id"] for r in ref[0]] and ours[1] == ref[1] == 3
    assert await both("delete_run", "r0") == (True, True)
    assert await both("delete_run", "r0") == (False, False)
    await both("delete_runs", ["r1"])
    ref, ours = await both("get_runs", session_id="s1")
    assert [r.run_id for r in ours] == [r.run_id for r in ref] == ["r2"]


async def test_get_sessions_filters_sorts_and_pages(both):
    base = int(time.time()) - 1000
    for i in range(6):
        s = agent_session(f"s{i}", user="u1" if i % 2 else "u2", agent="a1" if i < 4 else "a2", created=base + i,
                          name=f"Trip to Lisbon {i}" if i < 3 else f"Groceries {i}")
        await both("upsert_session", s)
    await both("upsert_session", TeamSession(session_id="t1", team_id="a1", user_id="u1", created_at=base + 10))
    cases = [
        dict(session_type=SessionType.AGENT, sort_by="created_at", sort_order="asc"),
        dict(session_type=SessionType.AGENT, user_id="u1", sort_by="created_at", sort_order="desc"),
        dict(component_id="a1", sort_by="created_at", sort_order="asc"),
        dict(session_type=SessionType.AGENT, component_id="a2", sort_by="created_at"),
        dict(session_name="lisbon", sort_by="created_at", sort_order="asc"),
        dict(start_timestamp=base + 2, end_timestamp=base + 4, sort_by="created_at", sort_order="asc"),
        dict(sort_by="created_at", sort_order="asc", limit=2, page=2),
    ]
    for kw in cases:
        ref, ours = await both("get_sessions", **kw)
        assert [s.session_id for s in ours] == [s.session_id for s in ref], kw
        ref, ours = await both("get_sessions", deserialize=False, **kw)
        assert [s["session_id"] for s in ours[0]] == [s["session_id"] for s in ref[0]] and ours[1] == ref[1], kw


async def test_rename_and_delete(both):
    await both("upsert_session", agent_session("s1", user="u1"))
    await both("upsert_session", agent_session("s2", user="u2"))
    await both("upsert_run", run("r1", "s1", "x"), session_id="s1", user_id="u1", run_index=0)
    ref, ours = await both("rename_session", "s1", SessionType.AGENT, "New name")
    assert ours.session_data["session_name"] == ref.session_data["session_name"] == "New name"
    assert await both("rename_session", "nope", SessionType.AGENT, "x") == (None, None)
    assert await both("delete_session", "s1", user_id="u2") == (False, False)  # not u2's
    assert await both("delete_session", "s1") == (True, True)
    assert await both("get_run", "r1") == (None, None)  # runs go with their session
    await both("delete_sessions", ["s2"], user_id="u2")
    ref, ours = await both("get_sessions")
    assert ours == ref == []


async def test_upsert_sessions_in_bulk(both):
    sessions = [agent_session(f"s{i}") for i in range(3)]
    ref, ours = await both("upsert_sessions", sessions)
    assert sorted(s.session_id for s in ours) == sorted(s.session_id for s in ref)
    ref, ours = await both("get_sessions", sort_by="created_at")
    assert len(ours) == len(ref) == 3


async def test_bad_ids_and_oversized_records_are_typed_errors_and_write_nothing(ours):
    with pytest.raises(InvalidIdentifierError):
        await ours.get_session("trailing ")
    with pytest.raises(InvalidIdentifierError):
        await ours.upsert_session(agent_session("x" * 200))
    big = agent_session("s1")
    big.session_data = {"blob": "x" * (ours.database.config.max_event_bytes + 1)}
    with pytest.raises(PayloadTooLargeError):
        await ours.upsert_session(big)
    assert await ours.get_session("s1") is None
