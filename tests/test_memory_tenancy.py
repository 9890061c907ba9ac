"""Memory ids are per (app, user): one user's id never blocks, reveals or touches another's (issue #9, item 2)."""

from __future__ import annotations

import pytest
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types
from sqlalchemy import text

from adk_oceanbase import Config
from adk_oceanbase import migrations
from adk_oceanbase.engine import Database
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService

APP = "app"


def entry(mid: str, body: str) -> MemoryEntry:
    return MemoryEntry(id=mid, content=types.Content(parts=[types.Part.from_text(text=body)]))


@pytest.fixture(params=["seekdb", "mariadb"])
def any_database(request):
    return request.getfixturevalue("database" if request.param == "seekdb" else "mariadb_database")


async def test_two_users_may_use_the_same_memory_id(any_database):
    svc = OceanBaseMemoryService(database=any_database, embedder=HashEmbedder(), settings=MemorySettings(bump_access=False))
    try:
        await svc.add_memory(app_name=APP, user_id="alice", memories=[entry("shared-id", "Alice keeps bees on her roof")])
        # Bob's add behaves exactly as if Alice's row did not exist: it is stored, nothing tells him otherwise.
        await svc.add_memory(app_name=APP, user_id="bob", memories=[entry("shared-id", "Bob restores old sailboats")])
        await svc.flush()

        alice = await svc.search(APP, "alice", "bees roof sailboats")
        bob = await svc.search(APP, "bob", "bees roof sailboats")
        assert [(h.memory_id, "bees" in h.entry.content.parts[0].text) for h in alice] == [("shared-id", True)]
        assert [(h.memory_id, "sailboats" in h.entry.content.parts[0].text) for h in bob] == [("shared-id", True)]

        await svc.delete_memory(app_name=APP, user_id="bob", memory_id="shared-id")
        assert await svc.search(APP, "bob", "sailboats") == []
        assert [h.memory_id for h in await svc.search(APP, "alice", "bees")] == ["shared-id"]
        async with any_database.engine.connect() as conn:
            rows = dict((await conn.execute(text(
                "SELECT user_id, embed_status FROM agent_memories WHERE memory_id = 'shared-id'"))).all())
        assert rows == {"alice": "ready", "bob": "deleted"}
    finally:
        await svc.close()


async def test_0007_rekeys_existing_memories_and_can_run_again(fresh_url):
    """Rows written under the global key survive; an upgrade interrupted after its first step completes."""
    db = Database(Config.from_url(fresh_url))
    try:
        await migrations.upgrade(db, "0006")
        async with db.engine.begin() as conn:
            await conn.execute(text(
                "INSERT INTO agent_memories (memory_id, app_name, user_id, content, content_hash, created_at, updated_at, "
                "embed_status, embed_attempts) VALUES ('m1', 'a', 'u', 'old fact', 'h', '2025-05-08', '2025-05-08', "
                "'failed', 4)"))
            # as if an earlier run of 0007 died right after re-keying the table
            await conn.execute(text(
                "ALTER TABLE agent_memories DROP PRIMARY KEY, ADD PRIMARY KEY (app_name, user_id, memory_id)"))
        assert await migrations.upgrade(db) == migrations.head_revision()
        async with db.engine.begin() as conn:
            await conn.execute(text(
                "INSERT INTO agent_memories (memory_id, app_name, user_id, content, content_hash, created_at, updated_at) "
                "VALUES ('m1', 'a', 'other', 'their fact', 'h2', '2025-05-09', '2025-05-09')"))
            rows = (await conn.execute(text(
                "SELECT user_id, content, embed_status, embed_attempts FROM agent_memories ORDER BY user_id"))).all()
        # the old 'failed' meant "retry later": it starts over under the bounded rounds
        assert [tuple(r) for r in rows] == [("other", "their fact", "pending", 0), ("u", "old fact", "pending", 0)]
    finally:
        await db.close()
