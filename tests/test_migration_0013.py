"""Revision 0013 copies each memory's length onto its postings, finishes after an interrupted run, downgrades."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from adk_oceanbase import Config, migrations
from adk_oceanbase.engine import Database
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService, ScoreWeights
from adk_oceanbase.memory.lexical import doc_terms

from .conftest import unique_db_name

FT_ONLY = ScoreWeights(semantic=0.0, fulltext=1.0, recency=0.0, frequency=0.0, importance=0.0, context=0.0, version=0.0)
ROWS = [  # (user, memory_id, search_text): written as revision 0012 left them
    ("u1", "m1", "8 may 2025 melani i paint a lak at dawn"),
    ("u1", "m2", "9 may 2025 melani the lak is cold cold cold"),
    ("u2", "m1", "1 june 2025 bob camp by the lak"),
]


@pytest.fixture(params=["seekdb", "mariadb"])
def any_fresh_url(request):
    if request.param == "seekdb":
        return request.getfixturevalue("fresh_url")
    return request.getfixturevalue("mariadb_server").url_for(unique_db_name("m13"))


async def lengths(db: Database) -> dict[tuple[str, str, str], int]:
    async with db.engine.connect() as conn:
        return {(r[0], r[1], r[2]): r[3] for r in (await conn.execute(text(
            "SELECT user_id, memory_id, term, doc_len FROM memory_terms"))).all()}


async def test_0013_copies_lengths_resumes_and_downgrades(any_fresh_url):
    db = Database(Config.from_url(any_fresh_url))
    try:
        await migrations.upgrade(db, "0012")
        async with db.engine.begin() as conn:
            for user, mid, stext in ROWS:
                terms = doc_terms(stext)
                await conn.execute(text(
                    "INSERT INTO agent_memories (memory_id, app_name, user_id, content, content_hash, author, created_at, "
                    "updated_at, embed_status, search_text, term_count) VALUES (:m, 'a', :u, :t, :h, 'Melanie', "
                    "'2025-05-08', '2025-05-08', 'ready', :t, :c)"),
                    {"m": mid, "u": user, "t": stext, "h": user + mid, "c": sum(terms.values())})
                await conn.execute(text(
                    "INSERT INTO memory_terms (app_name, user_id, term, memory_id, tf) VALUES ('a', :u, :term, :m, :tf)"),
                    [{"u": user, "term": t, "m": mid, "tf": n} for t, n in terms.items()])
            # what a run killed during the backfill leaves: the column made, some postings copied, some not
            await conn.execute(text("ALTER TABLE memory_terms ADD COLUMN doc_len INTEGER NOT NULL DEFAULT 0"))
            await conn.execute(text("UPDATE memory_terms SET doc_len = 99 WHERE user_id = 'u1' AND memory_id = 'm1'"))
        assert await migrations.upgrade(db) == migrations.head_revision()
        want = {(u, m, t): sum(doc_terms(s).values()) for u, m, s in ROWS for t in doc_terms(s)}
        assert await lengths(db) == want
        # the postings-first form (every user counts as big here) scores the backfilled rows like the row-first one
        svcs = [OceanBaseMemoryService(database=db, embedder=HashEmbedder(), settings=MemorySettings(
            bump_access=False, fulltext_overfetch_rows=0, fulltext_overfetch=over)) for over in (None, 2)]
        try:
            row_first, postings_first = [
                [(h.memory_id, round(h.signals.fulltext, 9)) for h in await svc.search("a", "u1", "cold lake", weights=FT_ONLY)]
                for svc in svcs
            ]
            assert row_first == postings_first and row_first[0][0] == "m2"
        finally:
            for svc in svcs:
                await svc.close()
        await migrations.downgrade(db, "0012")
        async with db.engine.connect() as conn:
            cols = {r[0].lower() for r in (await conn.execute(text(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = DATABASE() "
                "AND table_name = 'memory_terms'"))).all()}
        assert "doc_len" not in cols and "tf" in cols
    finally:
        await db.close()
