"""Erasure and retention of procedural memory: a user's or an old run's numbers come back out of the aggregates.

Called by :func:`adk_oceanbase.governance.delete_user_data` (inside its
transaction, after it locked the user's guard row) and by
:func:`adk_oceanbase.governance.sweep` (runs not stored for ``memory_ttl``,
counted from the database clock like memories).  Both go through
:func:`.ledger.remove_runs`, so ``procedure_stats`` and the scenario
centroids always equal the sum of the runs still stored.
"""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from ..audit import AuditEntry
from ..engine import Database
from ..gateway import connection, transaction
from ..schema import procedure_runs
from . import ledger
from . import queries as q

__all__ = ["erase_user_runs", "sweep_runs"]


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


async def erase_user_runs(conn: AsyncConnection, app: str, user: str) -> int:
    """Takes every run of ``user`` out of the app's aggregates and deletes it; returns the runs deleted.

    Runs in the caller's transaction.  The user's own (``scope="user"``)
    aggregates and scenarios are deleted with the rest of their rows by the
    erasure; the app's lose exactly the user's contributions, and a path or
    scenario only this user ever contributed to disappears.
    """
    await conn.execute(q.lock_headers(app, sorted({"", user})))  # the lock order of every procedural write
    runs = (await conn.execute(q.user_runs(app, user))).mappings().all()
    return await ledger.remove_runs(conn, app, runs, _now()) if runs else 0


async def sweep_runs(
    db: Database, app: str, cutoff: datetime, *, batch: int = 500, dry_run: bool = False, audit: bool = False
) -> int:
    """Deletes the app's runs stored before ``cutoff`` (one transaction per batch), out of the aggregates first.

    Scenarios and scope headers left without any run go with the last batch.
    """
    t = procedure_runs
    if dry_run:
        async with connection(db) as conn:
            stmt = select(func.count()).select_from(t).where(t.c.app_name == app, t.c.stored_at < cutoff)
            return int((await conn.execute(stmt)).scalar() or 0)
    deleted = 0
    while True:
        async with transaction(db) as conn:
            headers = [r[0] for r in (await conn.execute(q.lock_headers(app))).all()]  # no scenario is chosen meanwhile
            runs = (await conn.execute(q.user_runs(app, "", stored_before=cutoff, limit=batch))).mappings().all()
            n = await ledger.remove_runs(conn, app, runs, _now()) if runs else 0
            if len(runs) < batch:
                # the last batch: labelled scenarios no run counts in any more, and the headers of scopes
                # with no scenario left (what ledger.remove_runs keeps), so an expired app leaves nothing
                await conn.execute(q.delete_orphan_scenarios(app))
                kept = {r[0] for r in (await conn.execute(q.scopes_with_scenarios(app))).all()}
                if empty := [h for h in headers if h not in kept]:
                    await conn.execute(q.delete_headers(app, empty))
            if audit and n:
                await conn.execute(AuditEntry("retention_sweep", app, row_count=n).insert())
        deleted += n
        if len(runs) < batch or n == 0:
            return deleted
