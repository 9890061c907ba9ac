"""Revision 0012 (per-user lexical index) backfills old memories' postings, finishes after an interrupted run, downgrades."""

from __future__ import annotations

from collections import Counter

import pytest
from sqlalchemy import text

from adk_oceanbase import Config, migrations
from adk_oceanbase.engine import Database
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService, ScoreWeights
from adk_oceanbase.memory.lexical import doc_terms

from .conftest import unique_db_name

FT_ONLY = ScoreWeights(semantic=0.0, fulltext=1.0, recency=0.0, frequency=0.0, importance=0.0, context=0.0, version=0.0)
ROWS = [  # (user, memory_id, content, status, search_text)
    ("u1", "m1", "I painted a lake at dawn", "ready", "8 may 2025 melani i paint a lak at dawn"),
    ("u1", "m2", "我每天早上都喝咖啡", "ready", "9 may 2025 melani 我每天早上都喝咖啡"),
    ("u1", "gone", "", "deleted", None),
    ("u2", "m1", "camping by the lake", "pending", "1 june 2025 bob camp by the lak"),
]


@pytest.fixture(params=["seekdb", "mariadb"])
def any_fresh_url(request):
    if request.param == "seekdb":
        return request.getfixturevalue("fresh_url")
    return request.getfixturevalue("mariadb_server").url_for(unique_db_name("m12"))


async def postings(db: Database) -> dict[tuple[str, str], Counter]:
    out: dict[tuple[str, str], Counter] = {}
    async with db.engine.connect() as conn:
        for user, mid, term, tf in (await conn.execute(text(
                "SELECT user_id, memory_id, term, tf FROM memory_terms"))).all():
            out.setdefault((user, mid), Counter())[term] = tf
    return out


async def test_0012_backfills_postings_resumes_and_downgrades(any_fresh_url):
    db = Database(Config.from_url(any_fresh_url))
    try:
        await migrations.upgrade(db, "0011")
        async with db.engine.begin() as conn:
            for user, mid, content, status, stext in ROWS:
                await conn.execute(text(
                    "INSERT INTO agent_memories (memory_id, app_name, user_id, content, content_hash, author, created_at, "
                    "updated_at, embed_status, search_text) VALUES (:m, 'a', :u, :c, :m, 'Melanie', '2025-05-08', "
                    "'2025-05-08', :s, :t)"), {"m": mid, "u": user, "c": content, "s": status, "t": stext})
            # what a run killed during the backfill leaves: columns and table made, a stale posting written
            await conn.execute(text("ALTER TABLE agent_memories ADD COLUMN term_count INTEGER NOT NULL DEFAULT 0"))
            await conn.execute(text(
                "CREATE TABLE memory_terms (app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL, "
                "user_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL, term VARCHAR(64) COLLATE utf8mb4_bin NOT NULL, "
                "memory_id VARCHAR(64) COLLATE utf8mb4_bin NOT NULL, tf INTEGER NOT NULL, "
                "CONSTRAINT pk_memory_terms PRIMARY KEY (app_name, user_id, term, memory_id))"))
            await conn.execute(text("INSERT INTO memory_terms VALUES ('a', 'u1', 'stale', 'm1', 3)"))
        assert await migrations.upgrade(db) == migrations.head_revision()
        want = {(u, m): doc_terms(t) for u, m, _, _, t in ROWS if t}
        assert await postings(db) == want
        assert want[("u1", "m2")]["咖啡"] == 1
        async with db.engine.connect() as conn:
            got = {(r[0], r[1]): (r[2], r[3]) for r in (await conn.execute(text(
                "SELECT user_id, memory_id, term_count, occurrences FROM agent_memories"))).all()}
        assert got == {(u, m): (sum(doc_terms(t).values()), 1) for u, m, *_, t in ROWS}
        # the backfilled rows are searchable by their words, each user with their own statistics
        svc = OceanBaseMemoryService(database=db, embedder=HashEmbedder(), settings=MemorySettings(bump_access=False))
        try:
            assert [h.memory_id for h in await svc.search("a", "u1", "painted lake", weights=FT_ONLY)] == ["m1"]
            assert [h.memory_id for h in await svc.search("a", "u1", "咖啡", weights=FT_ONLY)] == ["m2"]
        finally:
            await svc.close()
        await migrations.downgrade(db, "0011")
        async with db.engine.connect() as conn:
            assert not (await conn.execute(text(
                "SELECT 1 FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'memory_terms'"
            ))).first()
            cols = {r[0].lower() for r in (await conn.execute(text(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = DATABASE() "
                "AND table_name = 'agent_memories'"))).all()}
        assert not {"term_count", "occurrences"} & cols
    finally:
        await db.close()
