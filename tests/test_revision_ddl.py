"""The revisions are history: what 0001..0015 send to the server never changes, on either engine.

The revisions take their engine-specific DDL fragments (vector column type,
full-text parser, vector index) from the dialect seam (``adk_oceanbase.dialects``),
so a change there could silently rewrite an old revision, which
tests/test_head_schema.py would not notice when head changed alike.  This
test sends the chain up to 0015 and back down to base on a new database and
compares every statement that changes the schema or its data with the text
recorded in ``tests/golden/``.

After a deliberate change (never to a released revision), rewrite the
recording with ``ADK_OCEANBASE_RECORD_DDL=1`` and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import event

from adk_oceanbase import Config, migrations
from adk_oceanbase.engine import Database

GOLDEN = Path(__file__).parent / "golden"
LAST_RECORDED = "0015"
"""Revisions after this one are not in the recording (they are still being chained)."""

_WRITES = ("CREATE ", "ALTER ", "DROP ", "RENAME ", "INSERT ", "UPDATE ", "DELETE ", "REPLACE ", "TRUNCATE ")


async def chain_statements(url: str) -> list[str]:
    """Every schema or data write of upgrading a new database to 0015 one revision at a time, then to base."""
    db = Database(Config.from_url(url))
    statements: list[str] = []
    try:
        await db.start()
        event.listen(db.engine.sync_engine, "before_cursor_execute",
                     lambda _c, _cur, stmt, *_a: statements.append(" ".join(stmt.split())))
        assert await migrations.upgrade(db, "0001") == "0001"  # not the one-step create of a new database
        assert await migrations.upgrade(db, LAST_RECORDED) == LAST_RECORDED
        assert await migrations.downgrade(db, "base") is None
    finally:
        await db.close()
    return [s for s in statements if s.upper().startswith(_WRITES)]


async def test_revisions_send_the_recorded_ddl(engine, engine_fresh_url):
    recorded = GOLDEN / f"revision_ddl_{engine}.sql"
    sent = await chain_statements(engine_fresh_url)
    if os.environ.get("ADK_OCEANBASE_RECORD_DDL") == "1":
        recorded.parent.mkdir(exist_ok=True)
        recorded.write_text("".join(f"{s};\n" for s in sent), encoding="utf-8")
    expected = [line.removesuffix(";") for line in recorded.read_text(encoding="utf-8").splitlines()]
    assert sent == expected
