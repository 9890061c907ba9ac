"""The write transactions of ``create_session`` and ``append_event``, each one packet where it can be.

:class:`OceanBaseSessionService` validates, redacts and encodes before it
calls these; everything here runs inside one transaction.  An append is a
compare-and-set on the session's ``last_seq``: the session update, the event
row, every state scope, the compaction bookkeeping and the audit row commit
together or not at all.
"""

from __future__ import annotations

import logging
from typing import Any

from google.adk.events.event import Event
from google.adk.sessions.session import Session
import pymysql

from ..audit import RAW_INSERT_AUDIT, current_entry
from ..errors import (
    ConnectionLostError,
    DuplicateKeyError,
    PacketTooLargeError,
    SessionAlreadyExistsError,
    SessionMissingError,
    StaleSessionConflictError,
    StateTooLargeError,
    is_duplicate_key,
)
from ..governance import debug_archive as dbg
from ..rawtx import COMMIT, RawTransaction
from . import queries as q
from .store import SessionStore

__all__ = ["STALE", "insert_session", "store_event"]

logger = logging.getLogger(__name__)

STALE = (
    "The session has been modified in storage since it was loaded. "
    "Reload it with get_session() before appending more events."
)


async def insert_session(store: SessionStore, row: dict[str, Any], state_rows: list[dict] | None) -> list | None:
    """Creates the session ``row`` names with its ``state_rows``; returns its state rows as stored (every scope).

    One round trip: the session row, its state, the state read back, the
    audit row and COMMIT.  A duplicate id fails the first statement and the
    server runs none after it.  ``None``: the connection was lost after a
    commit of ours (a row carries our creation time), so the caller loads it.
    """
    app, user, sid = row["app"], row["user"], row["sid"]
    statements: list[tuple[Any, Any]] = [(q.RAW_INSERT_SESSION, row)]
    if state_rows:
        statements.append((q.RAW_UPSERT_STATE, state_rows))
    select_at = len(statements)
    statements.append((q.RAW_SELECT_STATE_ROWS, {"app": app, "user": user, "sid": sid}))
    if (audit := current_entry()) is not None:
        audit.session_id, audit.row_count = sid, 1
        statements.append((RAW_INSERT_AUDIT, audit.row()))  # same packet: see adk_oceanbase.audit
    statements.append((COMMIT, None))
    try:
        try:
            async with store.transaction() as tx:
                return (await tx.batch(statements))[select_at][1]
        except ConnectionLostError:
            # The first run may have committed: a row with our creation time is ours.
            async def created_at(conn: Any) -> Any:
                return (await conn.execute(q.select_created_at(app, user, sid))).scalar()

            if await store.read(created_at) == row["when"]:
                logger.info("create_session committed before the connection was lost")
                return None
            async with store.transaction() as tx:
                return (await tx.batch(statements))[select_at][1]
    except DuplicateKeyError as exc:
        raise SessionAlreadyExistsError(f"Session with id {sid} already exists.") from exc
    except PacketTooLargeError as exc:
        raise StateTooLargeError(f"the state of session {sid} is too large to write: {exc}") from exc


async def store_event(
    store: SessionStore,
    session: Session,
    expected: int | None,
    row: dict,
    state_rows: list[dict] | None,
    event: Event,
    *,
    rerun: bool,
    debug_archive: dbg.DebugArchiveSettings | None = None,
    debug_source: Event | None = None,
) -> int | None:
    """The append transaction; returns the event's new ``seq``, or ``None`` for a redelivered event.

    ``expected`` is the revision ``session`` was loaded at (``None``: a
    session we did not load, checked by :func:`_check_markerless`).
    ``rerun`` after an attempt whose outcome is unknown: an event id already
    stored where that attempt put it means it committed (with its audit row,
    which rode in the same packet).  ``debug_source`` is the event as given
    (``temp:`` keys included) for the debug archive.
    """
    app, user, sid, event_id = row["app"], row["user"], row["sid"], row["event_id"]
    compacting = event.actions is not None and event.actions.compaction is not None
    async with store.transaction() as tx:
        if rerun:
            found = await _stored_seq(tx, app, user, sid, event_id)
            if found is not None:
                return found if expected is None or found == expected + 1 else None
        seq = await _check_markerless(tx, app, user, sid, session) if expected is None else expected
        params = {"app": app, "user": user, "sid": sid, "ts": row["ts"], "when": row["event_time"],
                  "tokens": row["token_count"], "expected_seq": seq}
        # Compare-and-set, then the event row (only where the session row is
        # at the new seq), the audit row and the state (only with that event
        # row), so a missed CAS writes nothing.  That lets a plain append
        # COMMIT in the same packet: one round trip in all.  The gates read
        # rows, never ROW_COUNT(): see q.RAW_INSERT_EVENT_IF_BUMPED.  Work
        # that needs the new seq first (compaction, rewind, debug archive)
        # commits after it, as before.
        statements = [(q.RAW_BUMP_SESSION_CAS, params), (q.RAW_INSERT_EVENT_IF_BUMPED, {**row, "seq": seq + 1})]
        gate = q.appended_params(app, user, sid, seq + 1, event_id)
        audit = current_entry()
        if audit is not None and not compacting:
            audit.row_count = 1
            # same packet: see adk_oceanbase.audit
            statements.append((q.RAW_INSERT_AUDIT_IF_APPENDED, {**audit.row(), **gate}))
        if state_rows:
            state = {**q.numbered_state_params(state_rows), **gate}
            statements.append((q.raw_upsert_state_if_written(len(state_rows)), state))
        debugging = debug_archive is not None and debug_source is not None
        follow_up = compacting or bool(event.actions is not None and event.actions.rewind_before_invocation_id) or debugging
        if not follow_up:
            statements.append((COMMIT, None))
        try:
            matched = (await tx.batch(statements))[0][0] == 1
        except pymysql.err.IntegrityError as exc:
            if not is_duplicate_key(exc):
                raise
            # seq taken (a concurrent writer) or event id taken (a redelivery):
            # the server stopped there, before any COMMIT.
            matched = False
        if not matched:
            # Nothing of this append was written (or it is rolled back here).
            await tx.rollback()
            if audit is not None:
                audit.rolled_back()
            if await _stored_seq(tx, app, user, sid, event_id) is not None:
                return None
            raise StaleSessionConflictError(STALE)
        archived = await store.archive(tx, app, user, sid, seq + 1, event, row["event_json"])
        if debugging:
            await dbg.archive_event(tx, debug_archive, app, user, sid, seq + 1, debug_source, row["event_time"])
        if audit is not None and compacting:
            # a compaction's row waits for its archive count and rides with the COMMIT
            audit.row_count = 1 + archived
            await tx.batch([(RAW_INSERT_AUDIT, audit.row()), (COMMIT, None)])
    return seq + 1


async def _stored_seq(tx: RawTransaction, app: str, user: str, sid: str, event_id: str) -> int | None:
    """Where the session holds ``event_id`` (``None``: not stored); raises when the session is gone."""
    _, head = await tx.run(q.select_session(app, user, sid))
    if not head:
        raise SessionMissingError(f"Session {sid} not found.")
    _, found = await tx.run(q.event_exists(app, user, sid, event_id))
    return found[0][0] if found else None


async def _check_markerless(tx: RawTransaction, app: str, user: str, sid: str, session: Session) -> int:
    """Stale check for sessions we did not load (built by hand or by another service)."""
    _, head = await tx.run(q.lock_session(app, user, sid))
    if not head:
        raise SessionMissingError(f"Session {sid} not found.")
    last_seq, last_update_time = head[0]
    if last_update_time > session.last_update_time:
        _, latest = await tx.run(q.latest_event_id(app, user, sid))
        mine = session.events[-1].id if session.events else None
        if (latest[0][0] if latest else None) != mine:
            raise StaleSessionConflictError(STALE)
    return last_seq
