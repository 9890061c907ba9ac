"""Retention for the Agno database's sessions (``agno_ob_sessions``) and their runs, by the server's clock.

Same rule as ADK sessions (:mod:`.retention`): a session expires when the
server has not written it (``upsert_session``, rename) for its app's
``session_ttl``; it goes with its runs, in batches, each one transaction
that locks the session rows first and checks the expiry again under the
lock (a session written meanwhile survives).  Agno's other tables follow
their sessions' users through erasure; traces, spans, evals, knowledge,
learnings and metrics have no TTL of their own here (as in Agno).
Agno memories are rows of ``agent_memories`` and expire with the ADK
memories (``memory_ttl``).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Select, delete, func, select

from ..audit import AuditEntry
from ..engine import Database
from ..gateway import connection, transaction
from ..schema_agno import agno_runs as R
from ..schema_agno import agno_sessions as S

__all__ = ["agno_apps", "sweep_agno_sessions"]


def agno_apps() -> Select:
    """Apps with Agno sessions: what a sweep without ``--app`` visits besides the ADK ones."""
    return select(S.c.app_name).distinct()


def _expired(app: str, cutoff: datetime, limit: int) -> Select:
    return (select(S.c.session_id).where(S.c.app_name == app, S.c.touched_at < cutoff)
            .order_by(S.c.touched_at, S.c.session_id).limit(limit))


async def sweep_agno_sessions(
    db: Database, app: str, cutoff: datetime, batch: int, dry_run: bool, audit: bool
) -> tuple[int, int]:
    """Deletes (or counts, with ``dry_run``) the app's Agno sessions not written since ``cutoff``; ``(sessions, runs)``."""
    if dry_run:
        async with connection(db) as conn:
            sessions = (await conn.execute(select(func.count()).where(S.c.app_name == app, S.c.touched_at < cutoff))).scalar()
            runs = (await conn.execute(select(func.count()).select_from(R).where(
                R.c.app_name == app, R.c.session_id.in_(select(S.c.session_id).where(
                    S.c.app_name == app, S.c.touched_at < cutoff))))).scalar()
        return int(sessions or 0), int(runs or 0)
    sessions = runs = 0
    while True:
        async with connection(db) as conn:
            ids = [r[0] for r in (await conn.execute(_expired(app, cutoff, batch))).all()]
        if not ids:
            return sessions, runs
        async with transaction(db) as conn:
            locked = [r[0] for r in (await conn.execute(select(S.c.session_id).where(
                S.c.app_name == app, S.c.session_id.in_(ids), S.c.touched_at < cutoff).with_for_update())).all()]
            if locked:
                runs += (await conn.execute(delete(R).where(R.c.app_name == app, R.c.session_id.in_(locked)))).rowcount
                sessions += (await conn.execute(delete(S).where(S.c.app_name == app, S.c.session_id.in_(locked)))).rowcount
                if audit:
                    await conn.execute(AuditEntry("retention_sweep", app, row_count=len(locked)).insert())
        if len(ids) < batch:
            return sessions, runs
