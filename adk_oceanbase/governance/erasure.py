"""``delete_user_data``: erases one user of one app from every table, in one transaction.

Sessions, their events (archived ones too), session- and user-scoped state,
memories (live, superseded, pending and tombstones), the memory opt-out row,
debug archive entries, and any other table of :mod:`adk_oceanbase.schema`
keyed by ``(app_name, user_id)``: it either all goes or nothing does.
App-scoped state belongs to no user and stays.

Two things stay, by design:

* ``audit_log``: the user's audit history is the record of who touched their
  data, and the erasure adds its own row to it.  It holds ids, counts and
  timings, never content (no column can: see :mod:`adk_oceanbase.audit`), and
  is removed by the audit retention (``gc``), not by erasure.
* the user's ``memory_user_gen`` row (keyed by a hash of the user id, not the
  id): its generation moves on and ``erased_at`` is stamped, so a memory write
  that started before the erasure fails instead of re-creating memories
  (:mod:`.guard`).

That guard row is locked first: a memory write holding it commits before the
erasure (and its rows are erased), later ones queue behind it.  The user's
session rows come next, the order ``append_event`` and ``delete_session``
take locks in, so an append racing the erasure either commits before it (and
its event is erased) or fails with ``SessionMissingError`` after it; it never
deadlocks against it.
"""

from __future__ import annotations

import logging

from sqlalchemy import Table

from datetime import datetime, timezone

from ..audit import current_entry
from ..engine import Database
from ..schema import agent_sessions, audit_log, metadata, session_events, session_state
from ..validation import check_id
from . import extensions, guard
from . import queries as q
from ..gateway import transaction

__all__ = ["delete_user_data", "user_tables"]

logger = logging.getLogger(__name__)

# Taken first and in this order (the session row, then what hangs off it); the rest follow by name.
_FIRST = (session_events, session_state, agent_sessions)
KEPT = (audit_log,)
"""Tables keyed by user that erasure leaves alone: the audit history (ids only), kept under the audit retention."""


def user_tables() -> list[Table]:
    """Every table of the schema with ``app_name`` and ``user_id`` columns but :data:`KEPT`, in the order erasure deletes them."""
    keyed = [t for t in metadata.sorted_tables if {"app_name", "user_id"} <= set(t.c.keys()) and t not in KEPT]
    # By name: ``agent_memories`` before ``memory_terms``, which the vectorizer's deferred postings need (a claim
    # holding memory rows makes the erasure wait at the rows, then its postings go too: memory.postings).
    rest = sorted((t for t in keyed if t not in _FIRST), key=lambda t: t.name)
    return [*_FIRST, *rest]


async def delete_user_data(db: Database, app_name: str, user_id: str) -> dict[str, int]:
    """Deletes every row of ``user_id`` in ``app_name``; returns rows deleted per table (zeros included).

    ``user_id`` matches exactly (the key columns are ``utf8mb4_bin``).  The
    user's audit rows stay (see the module docstring); with auditing on, one
    ``delete_user`` row (ids and a row count, never content) records the
    erasure itself.  A memory write that started before this call and had not
    committed fails with :class:`~adk_oceanbase.errors.MemoryWriteRaceError`.
    """
    app, user = check_id("app_name", app_name), check_id("user_id", user_id)
    counts: dict[str, int] = {}
    async with transaction(db) as conn:
        await guard.bump(conn, app, user, datetime.now(timezone.utc).replace(tzinfo=None), erased=True)
        locked = (await conn.execute(q.lock_user_sessions(app, user))).all()
        # registered shares first (procedural memory: the user's runs leave the app-wide aggregates
        # before they are deleted, issue 27), then every per-user table
        extra = {key: await erase(conn, app, user) for key, erase in extensions.user_erasers().items()}
        for table in user_tables():
            counts[table.name] = int((await conn.execute(q.delete_user_rows(table, app, user))).rowcount or 0)
        for key, n in extra.items():
            counts[key] = counts.get(key, 0) + n
        if (audit := current_entry()) is not None:
            # the erasure's own record survives it (who was erased, when, how many rows): no content
            audit.row_count = sum(counts.values())
            await conn.execute(audit.insert())
    logger.info("deleted user data (%d session(s), %d row(s) in all)", len(locked), sum(counts.values()))
    return counts
