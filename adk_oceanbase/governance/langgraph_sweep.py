"""Retention for the LangGraph tables (issue 26): idle threads by ``thread_ttl``, and Store items past their own TTL.

A thread expires when the server has written none of its checkpoints
(``lg_checkpoints.created_at``, database clock) for ``Retention.thread_ttl``:
all of it goes (checkpoints, blobs, pending writes), in batches of threads,
each batch one transaction whose rows are locked and re-checked first, so a
thread written meanwhile survives.  Store items whose ``expires_at`` has
passed (the Store's own TTL, already invisible to reads) are deleted with
their field links by every sweep of their app, and so are the field memories
(``agent_memories`` rows and their postings) that no live item links to any
more (:data:`EXPIRED_PURGE`; the Store's own deletes purge the same way).
Plain SQL on the tables, so governance needs no LangGraph import.
"""

from __future__ import annotations

from datetime import datetime
from sqlalchemy import bindparam, text

from ..audit import AuditEntry
from ..engine import Database
from ..gateway import connection, transaction

__all__ = ["APPS", "EXPIRED_PURGE", "sweep_store", "sweep_threads"]

APPS = text("SELECT DISTINCT app_name FROM lg_checkpoints UNION SELECT DISTINCT app_name FROM lg_store_items")
"""Apps with LangGraph data: what a sweep without ``apps`` visits, besides the ADK ones."""

_IDLE = text(
    "SELECT thread_id FROM lg_checkpoints WHERE app_name = :app GROUP BY thread_id "
    "HAVING MAX(created_at) < :cutoff ORDER BY thread_id LIMIT :n"
)
_IDLE_TOTALS = text(
    "SELECT COUNT(*), COALESCE(SUM(n), 0) FROM (SELECT COUNT(*) AS n FROM lg_checkpoints WHERE app_name = :app "
    "GROUP BY thread_id HAVING MAX(created_at) < :cutoff) idle"
)
_LOCK = text(
    "SELECT thread_id, created_at FROM lg_checkpoints WHERE app_name = :app AND thread_id IN :threads FOR UPDATE"
).bindparams(bindparam("threads", expanding=True))
_DELETE = [
    text(f"DELETE FROM {table} WHERE app_name = :app AND thread_id IN :threads").bindparams(
        bindparam("threads", expanding=True)
    )
    for table in ("lg_checkpoint_writes", "lg_checkpoint_blobs", "lg_checkpoints")
]
_EXPIRED_COUNT = text("SELECT COUNT(*) FROM lg_store_items WHERE app_name = :app AND expires_at <= UTC_TIMESTAMP(6)")
_EXPIRED_FIELDS = text(
    "DELETE f FROM lg_store_fields f JOIN lg_store_items i ON i.app_name = f.app_name AND i.namespace = f.namespace "
    "AND i.item_key = f.item_key WHERE i.app_name = :app AND i.expires_at <= UTC_TIMESTAMP(6)"
)
_EXPIRED_LINKS = (
    "JOIN lg_store_items i ON i.app_name = f.app_name AND i.namespace = f.namespace AND i.item_key = f.item_key "
    "WHERE i.app_name = :app AND i.expires_at <= UTC_TIMESTAMP(6)"
)
_LIVE_LINK = (
    "SELECT 1 FROM lg_store_fields o JOIN lg_store_items oi ON oi.app_name = o.app_name AND oi.namespace = o.namespace "
    "AND oi.item_key = o.item_key WHERE o.app_name = f.app_name AND o.memory_user = f.memory_user "
    "AND o.memory_id = f.memory_id AND (oi.expires_at IS NULL OR oi.expires_at > UTC_TIMESTAMP(6))"
)
EXPIRED_PURGE = [
    text(
        "DELETE m FROM agent_memories m JOIN lg_store_fields f ON m.app_name = f.app_name AND m.user_id = f.memory_user "
        f"AND m.memory_id = f.memory_id {_EXPIRED_LINKS} AND NOT EXISTS ({_LIVE_LINK})"
    ),
    text(
        "DELETE t FROM memory_terms t JOIN lg_store_fields f ON t.app_name = f.app_name AND t.user_id = f.memory_user "
        f"AND t.memory_id = f.memory_id {_EXPIRED_LINKS} AND NOT EXISTS (SELECT 1 FROM agent_memories m "
        "WHERE m.app_name = t.app_name AND m.user_id = t.user_id AND m.memory_id = t.memory_id)"
    ),
]
"""Run before the expired items' links go (``:app``): the field memories only expired items link to, then
their postings.  A memory still linked by a live item stays; see ``langgraph.store_queries`` for the race
with a put of the same text."""
_EXPIRED_ITEMS = text("DELETE FROM lg_store_items WHERE app_name = :app AND expires_at <= UTC_TIMESTAMP(6)")


async def sweep_threads(
    db: Database, app: str, cutoff: datetime, batch: int, dry_run: bool, audit: bool
) -> tuple[int, int]:
    """Deletes ``app``'s threads idle since before ``cutoff``; returns ``(threads, checkpoints)`` (would be) deleted."""
    if dry_run:
        async with connection(db) as conn:
            threads, checkpoints = (await conn.execute(_IDLE_TOTALS, {"app": app, "cutoff": cutoff})).one()
        return int(threads), int(checkpoints)
    threads = checkpoints = 0
    while True:
        async with connection(db) as conn:
            idle = [r[0] for r in (await conn.execute(_IDLE, {"app": app, "cutoff": cutoff, "n": batch})).all()]
        if not idle:
            return threads, checkpoints
        async with transaction(db) as conn:
            newest: dict[str, datetime] = {}
            for thread, created in (await conn.execute(_LOCK, {"app": app, "threads": idle})).all():
                newest[thread] = max(created, newest.get(thread, created))
            still = sorted(t for t, at in newest.items() if at < cutoff)  # written meanwhile: it stays
            if still:
                counts = [(await conn.execute(stmt, {"app": app, "threads": still})).rowcount for stmt in _DELETE]
                threads += len(still)
                checkpoints += counts[-1]
                if audit:
                    await conn.execute(AuditEntry("retention_sweep", app, row_count=sum(counts)).insert())
        if len(idle) < batch:
            return threads, checkpoints


async def sweep_store(db: Database, app: str, dry_run: bool, audit: bool) -> int:
    """Deletes ``app``'s Store items whose TTL has passed (their field links, orphaned field memories); returns how many items."""
    if dry_run:
        async with connection(db) as conn:
            return int((await conn.execute(_EXPIRED_COUNT, {"app": app})).scalar() or 0)
    async with transaction(db) as conn:
        for stmt in EXPIRED_PURGE:
            await conn.execute(stmt, {"app": app})
        await conn.execute(_EXPIRED_FIELDS, {"app": app})
        n = (await conn.execute(_EXPIRED_ITEMS, {"app": app})).rowcount
        if audit and n:
            await conn.execute(AuditEntry("retention_sweep", app, row_count=n).insert())
    return int(n)

