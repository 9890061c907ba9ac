"""Knowledge beyond one user (issue #31): app- and agent-scoped memories, their governance, the multi-agent pattern."""

from __future__ import annotations

import pytest
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types
from sqlalchemy import text

from adk_oceanbase.audit import AuditSettings
from adk_oceanbase.errors import SharedMemoryWriteError, ValidationError
from adk_oceanbase.governance.erasure import delete_user_data
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService, SharedKnowledge, SharedMemory
from adk_oceanbase.memory.shared import scope_user_id

APP = "travel"
POLICY = SharedKnowledge(include=("app",), writers={"app": {"admin"}, "agent:researcher": {"researcher"}})


def entry(words: str) -> MemoryEntry:
    return MemoryEntry(content=types.Content(parts=[types.Part(text=words)]))


def texts(hits) -> list[str]:
    return [h.entry.content.parts[0].text for h in hits]


def service(db, shared=POLICY, audit=None) -> OceanBaseMemoryService:
    return OceanBaseMemoryService(database=db, embedder=HashEmbedder(), settings=MemorySettings(bump_access=False),
                                  shared=shared, audit=audit)


async def test_every_users_search_includes_the_app_scope_by_flag(engine_db):
    svc = service(engine_db)
    plain = service(engine_db, shared=None)
    try:
        await SharedMemory(svc).add(app_name=APP, scope="app", writer="admin",
                                    memories=[entry("Refund policy: bookings cancel free within 24 hours")])
        await svc.add_memory(app_name=APP, user_id="u1", memories=[entry("u1 prefers window seats on flights")])
        await svc.flush()
        got = (await svc.search_memory(app_name=APP, user_id="u2", query="refund policy cancel booking")).memories
        assert texts_of(got) == ["Refund policy: bookings cancel free within 24 hours"]
        assert got[0].custom_metadata["shared_scope"] == "app"
        assert got[0].author == "admin"
        mine = (await svc.search_memory(app_name=APP, user_id="u1", query="window seats refund policy")).memories
        assert set(texts_of(mine)) == {"u1 prefers window seats on flights",
                                       "Refund policy: bookings cancel free within 24 hours"}
        assert (await plain.search_memory(app_name=APP, user_id="u2", query="refund policy")).memories == []
        other_app = (await svc.search_memory(app_name="other", user_id="u2", query="refund policy")).memories
        assert other_app == []  # scopes belong to one app
    finally:
        await svc.close()
        await plain.close()


def texts_of(entries) -> list[str]:
    return [e.content.parts[0].text for e in entries]


async def test_only_listed_writers_write_a_scope(engine_db):
    svc = service(engine_db)
    shared = SharedMemory(svc)
    try:
        with pytest.raises(SharedMemoryWriteError):
            await shared.add(app_name=APP, scope="app", writer="researcher", memories=[entry("Prices rise in May")])
        with pytest.raises(SharedMemoryWriteError):
            await shared.add(app_name=APP, scope="agent:planner", writer="admin", memories=[entry("Prices rise")])
        with pytest.raises(SharedMemoryWriteError):  # the plain API cannot reach a scope
            await svc.add_memory(app_name=APP, user_id=scope_user_id("app"), memories=[entry("Prices rise in May")])
        await shared.add(app_name=APP, scope="app", writer="admin", memories=[entry("Prices rise in May")])
        async with engine_db.engine.connect() as conn:
            (mid,) = (await conn.execute(text("SELECT memory_id FROM agent_memories"))).one()
        with pytest.raises(SharedMemoryWriteError):
            await svc.delete_memory(app_name=APP, user_id=scope_user_id("app"), memory_id=mid)
        with pytest.raises(SharedMemoryWriteError):
            await shared.delete(app_name=APP, scope="app", memory_id=mid, writer="researcher")
        assert await shared.delete(app_name=APP, scope="app", memory_id=mid, writer="admin")
    finally:
        await svc.close()


async def test_erasing_a_user_leaves_shared_knowledge_and_writes_are_audited(engine_db):
    svc = service(engine_db, audit=AuditSettings())
    try:
        await SharedMemory(svc).add(app_name=APP, scope="app", writer="admin", memories=[entry("Check-in opens at 3 pm")])
        await svc.add_memory(app_name=APP, user_id="u1", memories=[entry("u1 is allergic to peanuts")])
        with pytest.raises(SharedMemoryWriteError):
            await SharedMemory(svc).add(app_name=APP, scope="app", writer="mallory", memories=[entry("Free upgrades")])
        await delete_user_data(engine_db, APP, "u1")
        async with engine_db.engine.connect() as conn:
            left = (await conn.execute(text("SELECT user_id, content FROM agent_memories"))).all()
            audit = (await conn.execute(text(
                "SELECT operation, user_id, actor, status FROM audit_log WHERE operation LIKE 'shared%' ORDER BY at"
            ))).all()
        assert [tuple(r) for r in left] == [(scope_user_id("app"), "Check-in opens at 3 pm")]
        assert [tuple(r) for r in audit] == [("shared_memory_add", scope_user_id("app"), "admin", "ok"),
                                             ("shared_memory_add", scope_user_id("app"), "mallory", "error")]
    finally:
        await svc.close()


async def test_one_agent_writes_another_reads_isolated_by_app_and_scope(engine_db):
    """The multi-agent pattern of README "Shared knowledge": a researcher publishes, a planner reads."""
    researcher = service(engine_db, shared=SharedKnowledge(include=(), writers={"agent:researcher": {"researcher"}}))
    planner = service(engine_db, shared=SharedKnowledge(include=("agent:researcher",)))
    bystander = service(engine_db, shared=SharedKnowledge(include=("agent:planner",)))
    try:
        await SharedMemory(researcher).add(app_name=APP, scope="agent:researcher", writer="researcher",
                                           memories=[entry("Lisbon trams run until 11 pm on weekdays")])
        await researcher.flush()
        got = (await planner.search_memory(app_name=APP, user_id="u7", query="when do Lisbon trams stop")).memories
        assert texts_of(got) == ["Lisbon trams run until 11 pm on weekdays"]
        assert got[0].custom_metadata["shared_scope"] == "agent:researcher"
        assert (await bystander.search_memory(app_name=APP, user_id="u7", query="Lisbon trams")).memories == []
        assert (await planner.search_memory(app_name="other", user_id="u7", query="Lisbon trams")).memories == []
        direct = await SharedMemory(planner).search(APP, "Lisbon trams", scope="agent:researcher")
        assert texts(direct) == ["Lisbon trams run until 11 pm on weekdays"]
    finally:
        for s in (researcher, planner, bystander):
            await s.close()


def test_scopes_are_checked():
    assert scope_user_id("app") == "\x1eapp" and scope_user_id("agent:x") == "\x1eagent:x"
    for bad in ("user", "agent:", "agent: ", ""):
        with pytest.raises(ValidationError):
            scope_user_id(bad)
    with pytest.raises(ValidationError):
        SharedKnowledge(include="app")
    with pytest.raises(ValidationError):
        SharedMemory.__init__(object.__new__(SharedMemory), service=type("S", (), {"shared": None})())
