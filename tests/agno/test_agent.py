"""Agno agents and teams persisting to our database with a deterministic model (seekdb, MariaDB)."""

from __future__ import annotations

import pytest
from agno.agent import Agent
from agno.db.base import SessionType
from agno.team import Team

from adk_oceanbase.agno import AsyncOceanBaseAgnoDb, OceanBaseAgnoDb
from adk_oceanbase.memory import HashEmbedder

from .conftest import FAST
from .stub_model import StubModel


def agent(db, name: str = "helper") -> Agent:
    return Agent(name=name, id=name, model=StubModel(), db=db, add_history_to_context=True, num_history_runs=5,
                 update_memory_on_run=True, add_memories_to_context=True)


@pytest.fixture
def sync_db(engine_db):
    """The synchronous BaseDb (what Agent.run calls), on its own loop and engine, same database as the test's."""
    db = OceanBaseAgnoDb(config=engine_db.config, embedder=HashEmbedder(), memory_settings=FAST)
    yield db
    db.close()


def test_an_agent_keeps_history_and_memories_across_runs_and_processes(sync_db):
    first = agent(sync_db).run("Hello, I like green tea", user_id="u1", session_id="s1")
    assert first.content == "turns=1 recalled=[]"
    # a new Agent object, as after a restart: history and memories come from the database
    second = agent(sync_db).run("What do I like?", user_id="u1", session_id="s1")
    assert second.content == "turns=2 recalled=['I like green tea']"
    memories = sync_db.get_user_memories(user_id="u1")
    assert [m.memory for m in memories] == ["User says: I like green tea"] and memories[0].topics == ["profile"]
    session = sync_db.get_session("s1", SessionType.AGENT)
    assert [r.content for r in session.runs] == [first.content, second.content]
    assert session.user_id == "u1" and session.agent_id == "helper"
    # another session of the same user recalls the memory but not the history
    other = agent(sync_db).run("Anything?", user_id="u1", session_id="s2")
    assert other.content == "turns=1 recalled=['I like green tea']"
    # the ADK memory service of the same app and user finds what the Agno agent remembered
    found = sync_db.call(sync_db.memory_service.search("agno", "u1", "green tea", top_k=3))
    assert [h.memory_id for h in found] == [memories[0].memory_id]


def test_a_team_session_is_stored_with_its_runs(sync_db):
    team = Team(name="crew", id="crew", members=[agent(sync_db, "member")], model=StubModel(), db=sync_db,
                add_history_to_context=True)
    out1 = team.run("Plan a trip", user_id="u2", session_id="t1")
    out2 = team.run("And the budget?", user_id="u2", session_id="t1")
    assert out2.content == "turns=2 recalled=[]" and out1.content == "turns=1 recalled=[]"
    stored = sync_db.get_session("t1", SessionType.TEAM)
    assert stored.team_id == "crew" and stored.user_id == "u2"
    assert [r.content for r in stored.runs if r.parent_run_id is None] == [out1.content, out2.content]
    listed = sync_db.get_sessions(session_type=SessionType.TEAM, user_id="u2")
    assert [s.session_id for s in listed] == ["t1"]


async def test_an_async_agent_uses_the_async_database(engine_db):
    db = AsyncOceanBaseAgnoDb(database=engine_db, embedder=HashEmbedder(), memory_settings=FAST)
    try:
        first = await agent(db).arun("Hi, I live in Porto", user_id="u3", session_id="a1")
        second = await agent(db).arun("Where do I live?", user_id="u3", session_id="a1")
        assert first.content == "turns=1 recalled=[]"
        assert second.content == "turns=2 recalled=['I live in Porto']"
        stored = await db.get_session("a1", SessionType.AGENT)
        assert len(stored.runs) == 2
    finally:
        await db.aclose()
