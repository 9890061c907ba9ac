"""An imported session keeps its source's last update as retention's clock, never later than now (issue 33)."""

from __future__ import annotations

import time

from google.adk.sessions.database_session_service import DatabaseSessionService
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy import text

from adk_oceanbase import OceanBaseSessionService
from adk_oceanbase.governance import Retention, RetentionPolicy, sweep
from adk_oceanbase.importer import import_adk

from .retention_helpers import DAY, db, rows, scalar, turn  # noqa: F401  (db: the two-engine fixture)


async def test_an_import_copies_the_sources_time_capped_at_now(tmp_path, db):
    url = f"sqlite+aiosqlite:///{tmp_path / 'adk.db'}"
    async with DatabaseSessionService(url) as adk:
        for sid in ("archived", "future"):
            s = await adk.create_session(app_name="imp", user_id="u", session_id=sid)
            await adk.append_event(s, turn(f"an old conversation ({sid})"))
    engine = create_async_engine(url)
    async with engine.begin() as conn:  # the source's own record of the sessions' last use
        await conn.execute(text("UPDATE sessions SET update_time = :t WHERE id = 'archived'"),
                           {"t": "2024-03-01 12:00:00.000000"})
        await conn.execute(text("UPDATE sessions SET update_time = '2999-01-01 00:00:00.000000' WHERE id = 'future'"))
    await engine.dispose()

    await import_adk(url, OceanBaseSessionService(database=db))
    touched = dict(await rows(db, "SELECT session_id, touched_at FROM agent_sessions WHERE app_name = 'imp'"))
    db_now = await scalar(db, "SELECT UTC_TIMESTAMP(6)")
    assert str(touched["archived"]).startswith("2024-03-01")  # an import copies: it is no use of the session
    assert (db_now - touched["future"]).total_seconds() < DAY and touched["future"] <= db_now  # capped at now
    assert (await sweep(db, RetentionPolicy(Retention(session_ttl="30d")))).sessions == 1
    assert await rows(db, "SELECT session_id FROM agent_sessions WHERE app_name = 'imp'") == [("future",)]
    assert (await sweep(db, RetentionPolicy(Retention(session_ttl="30d")), now=time.time() + 31 * DAY)).sessions == 1
