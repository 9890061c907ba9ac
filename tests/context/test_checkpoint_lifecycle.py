"""Turn-snapshot checkpoints go with their data (issue #30): erasure, the retention sweep, deleted sessions."""

from __future__ import annotations

import time
from datetime import datetime, timezone

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types
from sqlalchemy import func, select, update

from adk_oceanbase import OceanBaseSessionService
from adk_oceanbase.context import snapshots
from adk_oceanbase.gateway import connection, transaction
from adk_oceanbase.governance import Retention, RetentionPolicy, sweep
from adk_oceanbase.governance.erasure import delete_user_data
from adk_oceanbase.schema import agent_sessions, state_checkpoints

APP = "ckpt_app"
T0 = 1_740_000_000.0


async def checkpoints(db, **where) -> int:
    stmt = select(func.count()).select_from(state_checkpoints)
    for column, value in where.items():
        stmt = stmt.where(state_checkpoints.c[column] == value)
    async with connection(db) as conn:
        return int((await conn.execute(stmt)).scalar())


async def session_with_checkpoint(svc, user: str) -> str:
    s = await svc.create_session(app_name=APP, user_id=user)
    for i in range(1, snapshots.CHECKPOINT_EVERY + 2):
        await svc.append_event(s, Event(author="user", invocation_id=f"i{i}", timestamp=T0 + i, actions=EventActions(state_delta={"n": i}),
                                        content=types.Content(role="user", parts=[types.Part(text="x")])))
    await snapshots.state_as_of(svc.database, APP, user, s.id, snapshots.CHECKPOINT_EVERY + 1)
    assert await checkpoints(svc.database, session_id=s.id) == 1
    return s.id


async def test_erasure_retention_and_deletion_remove_checkpoints(engine_db):
    svc = OceanBaseSessionService(database=engine_db)
    erased = await session_with_checkpoint(svc, "erased")
    kept = await session_with_checkpoint(svc, "kept")
    counts = await delete_user_data(engine_db, APP, "erased")
    assert counts["state_checkpoints"] == 1 and await checkpoints(engine_db, session_id=erased) == 0

    deleted = await session_with_checkpoint(svc, "deleted")
    await svc.delete_session(app_name=APP, user_id="deleted", session_id=deleted)
    old = datetime.fromtimestamp(time.time() - 90 * 86400, tz=timezone.utc).replace(tzinfo=None)
    async with transaction(engine_db) as conn:  # last written by the server 90 days ago
        await conn.execute(update(agent_sessions).where(agent_sessions.c.session_id == kept).values(touched_at=old))
    await sweep(engine_db, RetentionPolicy(Retention(session_ttl="30d")))
    assert await checkpoints(engine_db) == 0  # the swept session's, and the deleted session's orphan
