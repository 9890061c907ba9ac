"""SQL of data governance: retention batches, erasure of one user, opt-out, taint marks, the debug archive. No I/O.

Every statement leads with ``app_name`` (and ``user_id`` where it has one),
the leading key columns, so each is a prefix seek (the audit log's expiry
walks its time index instead: audit retention is the deployment's, across
apps); the batched ones take an
explicit list of keys (``(user_id, session_id) IN (...)``, a primary-key
range per pair on both engines) so a transaction touches a bounded set of rows.
"""

from __future__ import annotations

from datetime import datetime
from typing import Sequence

from sqlalchemy import (
    Delete, Insert, Select, Table, Update, and_, delete, exists, func, literal, literal_column, select, tuple_, update,
)

from ..schema import agent_memories as M
from ..schema import audit_log as A
from ..schema import SCOPE_SESSION as SESSION
from ..schema import agent_sessions as S
from ..schema import debug_archive as D
from ..schema import memory_extraction_jobs as JOBS
from ..schema import memory_opt_out as O
from ..schema import memory_terms as MT
from ..schema import session_events as E
from ..schema import session_state as ST
from ..schema import state_checkpoints as CP

__all__ = [
    "delete_finished_jobs",
    "RAW_DEBUG_BASE",
    "RAW_INSERT_DEBUG",
    "RAW_TRIM_DEBUG",
    "DB_NOW",
    "count_expired_audit_rows",
    "delete_audit_rows",
    "delete_debug_session",
    "delete_expired_memories",
    "delete_expired_postings",
    "delete_opt_out",
    "delete_sessions_debug",
    "delete_sessions_events",
    "delete_sessions_rows",
    "delete_sessions_state",
    "delete_user_rows",
    "expired_audit_rows",
    "expired_memories",
    "expired_sessions",
    "expired_sessions_totals",
    "lock_expired_sessions",
    "lock_user_sessions",
    "opt_out_of",
    "select_apps",
    "select_debug_entries",
    "set_tainted",
    "stored_events",
    "upsert_opt_out",
]

Keys = Sequence[tuple[str, str]]
"""``(user_id, session_id)`` pairs of one app."""


# --------------------------------------------------------------------------- retention
# Expiry counts from columns only the database clock writes (revision 0015): a session's
# touched_at (create, append, import), a memory's stored_at (insert, merged repeat, deletion)
# and last_served_at (a search served it).  Never the events' or the sources' own times, which
# callers supply.

DB_NOW = select(literal_column("UTC_TIMESTAMP(6)"))
"""The database clock: a sweep without ``now`` measures TTLs on the clock that wrote the columns."""


def select_apps() -> Select:
    """Apps that have sessions or memories: what a sweep without ``--app`` visits."""
    return select(S.c.app_name).distinct().union(select(M.c.app_name).distinct())


def expired_sessions(app: str, cutoff: datetime, limit: int) -> Select:
    """The app's sessions the server last wrote before ``cutoff``, oldest first (``ix_sessions_app_touched`` range)."""
    return (
        select(S.c.user_id, S.c.session_id)
        .where(S.c.app_name == app, S.c.touched_at < cutoff)
        .order_by(S.c.touched_at, S.c.user_id, S.c.session_id)
        .limit(limit)
    )


def expired_sessions_totals(app: str, cutoff: datetime) -> Select:
    """Dry run: how many sessions (and their events, from ``event_count``) a sweep would delete."""
    return select(func.count(), func.coalesce(func.sum(S.c.event_count), 0)).where(
        S.c.app_name == app, S.c.touched_at < cutoff
    )


def _pairs(table, keys: Keys):
    return tuple_(table.c.user_id, table.c.session_id).in_([tuple(k) for k in keys])


def lock_expired_sessions(app: str, keys: Keys, cutoff: datetime) -> Select:
    """Locks the batch's session rows, re-checking expiry under the lock.

    A session appended to between the batch's read and this lock is no
    longer expired and drops out: it and its events survive.
    """
    return (
        select(S.c.user_id, S.c.session_id)
        .where(S.c.app_name == app, _pairs(S, keys), S.c.touched_at < cutoff)
        .with_for_update()
    )


def delete_sessions_events(app: str, keys: Keys) -> Delete:
    """Every event row of these sessions, archived (compacted) rows included."""
    return delete(E).where(E.c.app_name == app, _pairs(E, keys))


def delete_sessions_state(app: str, keys: Keys) -> Delete:
    return delete(ST).where(ST.c.app_name == app, ST.c.scope == SESSION, _pairs(ST, keys))


def delete_sessions_debug(app: str, keys: Keys) -> Delete:
    return delete(D).where(D.c.app_name == app, _pairs(D, keys))


def delete_sessions_checkpoints(app: str, keys: Keys) -> Delete:
    """The swept sessions' turn-snapshot checkpoints (revision 0016)."""
    return delete(CP).where(CP.c.app_name == app, _pairs(CP, keys))


def delete_orphan_checkpoints(app: str) -> Delete:
    """Checkpoints whose session is gone (``delete_session`` leaves them: they are derived, never read once invalid)."""
    alive = select(S.c.session_id).where(
        S.c.app_name == CP.c.app_name, S.c.user_id == CP.c.user_id, S.c.session_id == CP.c.session_id
    ).exists()
    return delete(CP).where(CP.c.app_name == app, ~alive)


def delete_finished_jobs(app: str, cutoff: datetime) -> Delete:
    """Extraction jobs done or failed before ``cutoff`` (memory retention): pending ones are work still to do (0020)."""
    return delete(JOBS).where(JOBS.c.app_name == app, JOBS.c.status.in_(("done", "failed")), JOBS.c.created_at < cutoff)


def delete_sessions_rows(app: str, keys: Keys) -> Delete:
    return delete(S).where(S.c.app_name == app, _pairs(S, keys))


def _memory_expired(cutoff: datetime):
    """Neither stored nor served (``last_served_at``) since ``cutoff``."""
    return and_(M.c.stored_at < cutoff, (M.c.last_served_at.is_(None)) | (M.c.last_served_at < cutoff))


def expired_memories(app: str, cutoff: datetime, limit: int, after: tuple | None = None) -> Select:
    """Up to ``limit`` expired memories of the app (tombstones included), after the key ``after``.

    Rows: ``(stored_at, user_id, memory_id, embed_status, event_ids)``, in
    ``(stored_at, user_id, memory_id)`` order (``ix_memories_app_stored``), so
    a sweep walks on past the tombstones it keeps.
    """
    stmt = select(M.c.stored_at, M.c.user_id, M.c.memory_id, M.c.embed_status, M.c.event_ids).where(
        M.c.app_name == app, _memory_expired(cutoff)
    )
    if after is not None:
        stmt = stmt.where(tuple_(M.c.stored_at, M.c.user_id, M.c.memory_id) > tuple_(*after))
    return stmt.order_by(M.c.stored_at, M.c.user_id, M.c.memory_id).limit(limit)


def stored_events(app: str, user: str, event_ids: Sequence[str]) -> Select:
    """Which of these events the user's sessions still hold (any session; compacted rows too).

    A deleted memory's tombstone stays while one of them does: re-ingesting
    that session would otherwise bring the memory back.
    """
    return (
        select(E.c.event_id)
        .where(E.c.app_name == app, E.c.user_id == user, E.c.event_id.in_(list(event_ids)))
        .distinct()
    )


def delete_expired_memories(app: str, keys: Sequence[tuple[str, str]], cutoff: datetime) -> Delete:
    """Deletes the batch of ``(user_id, memory_id)``, re-checking expiry: a memory a search just served stays."""
    pairs = tuple_(M.c.user_id, M.c.memory_id).in_([tuple(k) for k in keys])
    return delete(M).where(M.c.app_name == app, pairs, _memory_expired(cutoff))


def delete_expired_postings(app: str, keys: Sequence[tuple[str, str]]) -> Delete:
    """The lexical-index postings of the batch's memories that :func:`delete_expired_memories` removed.

    Run after it in the same transaction: a memory the re-check kept (a
    search read it meanwhile) still has its row, so its postings stay.
    """
    pairs = tuple_(MT.c.user_id, MT.c.memory_id).in_([tuple(k) for k in keys])
    row = exists().where(M.c.app_name == MT.c.app_name, M.c.user_id == MT.c.user_id, M.c.memory_id == MT.c.memory_id)
    return delete(MT).where(MT.c.app_name == app, pairs, ~row)


def _audit_scope(cutoff: datetime, apps: Sequence[str] | None):
    cond = A.c.at < cutoff
    return cond if apps is None else and_(cond, A.c.app_name.in_(list(apps)))


def expired_audit_rows(cutoff: datetime, apps: Sequence[str] | None, limit: int) -> Select:
    """Up to ``limit`` ``(audit_id, app_name)`` of audit rows older than ``cutoff``, oldest first (``ix_audit_time``)."""
    return select(A.c.audit_id, A.c.app_name).where(_audit_scope(cutoff, apps)).order_by(A.c.at, A.c.audit_id).limit(limit)


def count_expired_audit_rows(cutoff: datetime, apps: Sequence[str] | None) -> Select:
    return select(func.count()).select_from(A).where(_audit_scope(cutoff, apps))


def delete_audit_rows(audit_ids: Sequence[int], cutoff: datetime) -> Delete:
    return delete(A).where(A.c.audit_id.in_(list(audit_ids)), A.c.at < cutoff)


# --------------------------------------------------------------------------- erasure of one user
def lock_user_sessions(app: str, user: str) -> Select:
    """Every session row of the user, locked: the erasure's first step (same order as appends)."""
    return select(S.c.session_id).where(S.c.app_name == app, S.c.user_id == user).with_for_update()


def delete_user_rows(table: Table, app: str, user: str) -> Delete:
    """Every row of the user in a table keyed by ``(app_name, user_id)`` (a key-prefix range)."""
    return delete(table).where(table.c.app_name == app, table.c.user_id == user)


# --------------------------------------------------------------------------- opt-out and taint
def opt_out_of(app: str, user: str) -> Select:
    """The user's opt-out row (a primary-key probe); no row means memories may be stored."""
    return select(O.c.opted_out_at).where(O.c.app_name == app, O.c.user_id == user)


def upsert_opt_out(app: str, user: str, now: datetime) -> Insert:
    """Records the opt-out; opting out twice keeps the first time."""
    from sqlalchemy.dialects.mysql import insert as mysql_insert

    stmt = mysql_insert(O).values(app_name=app, user_id=user, opted_out_at=now)
    return stmt.on_duplicate_key_update(opted_out_at=O.c.opted_out_at)


def delete_opt_out(app: str, user: str) -> Delete:
    return delete(O).where(O.c.app_name == app, O.c.user_id == user)


def set_tainted(app: str, user: str, memory_ids: Sequence[str], tainted: bool, now: datetime) -> Update:
    return (
        update(M)
        .where(M.c.app_name == app, M.c.user_id == user, M.c.memory_id.in_(list(memory_ids)))
        .values(tainted=1 if tainted else 0, updated_at=now)
    )


# --------------------------------------------------------------------------- debug archive
def _debug_session(app: str, user: str, sid: str):
    return and_(D.c.app_name == app, D.c.user_id == user, D.c.session_id == sid)


# The archive's writes run inside append_event's driver-level transaction (adk_oceanbase.rawtx),
# as plain text sent in one round trip: the session's newest entry number goes into a session
# variable, each entry is numbered after it, and the FIFO bound is a primary-key range delete.
# The append's compare-and-set holds the session row's lock, so two appends cannot number alike.

RAW_DEBUG_BASE = """
SET @adk_debug_base = (SELECT COALESCE(MAX(entry_seq), 0) FROM debug_archive
                        WHERE app_name = %(app)s AND user_id = %(user)s AND session_id = %(sid)s)
"""

RAW_INSERT_DEBUG = """
INSERT INTO debug_archive
    (app_name, user_id, session_id, entry_seq, event_seq, event_id, invocation_id, kind, tool_name,
     state_key, value_json, created_at)
VALUES
    (%(app_name)s, %(user_id)s, %(session_id)s, @adk_debug_base + %(n)s, %(event_seq)s, %(event_id)s,
     %(invocation_id)s, %(kind)s, %(tool_name)s, %(state_key)s, %(value_json)s, %(created_at)s)
"""
"""One entry; ``n`` is its 1-based place among the entries this append adds."""

RAW_TRIM_DEBUG = """
DELETE FROM debug_archive
 WHERE app_name = %(app)s AND user_id = %(user)s AND session_id = %(sid)s
   AND entry_seq <= @adk_debug_base + %(added)s - %(keep)s
"""
"""FIFO bound: keeps the session's newest ``keep`` entries."""


def delete_debug_session(app: str, user: str, sid: str) -> Delete:
    return delete(D).where(_debug_session(app, user, sid))


def select_debug_entries(app: str, user: str, sid: str, *, tool: str | None, limit: int | None) -> Select:
    """The session's archive, oldest first; ``tool`` keeps entries written by that tool."""
    stmt = select(D).where(_debug_session(app, user, sid))
    if tool is not None:
        # parallel calls answered in one event list every tool: "lookup,fetch"
        stmt = stmt.where(D.c.kind == "tool_scratch", func.find_in_set(literal(tool), D.c.tool_name) > 0)
    if limit is not None:
        inner = stmt.order_by(D.c.entry_seq.desc()).limit(limit).subquery()
        return select(inner).order_by(inner.c.entry_seq)
    return stmt.order_by(D.c.entry_seq)
