"""The reads behind ``get_session`` and ``list_sessions``: which rows a load fetches, and the sessions built from them.

:func:`load_session` picks the statements for one ``get_session`` call (the
common loads in one round trip on the driver connection, the rest with
SQLAlchemy); :func:`sessions_with_state` and :func:`decode_events` turn rows
into ADK objects; the page cursor of ``list_sessions_page`` is encoded here.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from typing import Any

from google.adk.events.event import Event
from google.adk.sessions.session import Session
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from ..errors import ConnectionLostError, ValidationError
from ..rawtx import COMMIT
from . import codec
from . import queries as q
from .store import SessionStore, mark

__all__ = ["decode_cursor", "decode_events", "encode_cursor", "load_session", "sessions_with_state"]

logger = logging.getLogger(__name__)

_DECODE_INLINE = 64


async def load_session(
    store: SessionStore, key: dict[str, str], *, num: int | None, after: float | None, include_compacted: bool
) -> tuple[Any, list, list] | None:
    """``(head, event rows, state rows)`` of the session ``key`` names (``None``: no such session).

    ``num`` / ``after`` are ADK's ``GetSessionConfig`` window; archived rows
    are dropped from it unless ``include_compacted``.  Event rows' second
    column is the event JSON.
    """
    if after is None and not include_compacted and (num is None or num > 0):
        return await _load_default(store, key, num)
    app, user, sid = key["app"], key["user"], key["sid"]

    async def load(conn: AsyncConnection) -> tuple[Any, list, list] | None:
        await conn.execute(text(q.SNAPSHOT_READS))
        head = (await conn.execute(q.SELECT_SESSION, key)).first()
        if head is None:
            return None
        if num != 0 and include_compacted:
            stmt = q.select_events(app, user, sid, num_recent=num, after_ts=after)
            rows = (await conn.execute(stmt)).all()
            if num is not None:
                rows.reverse()
        elif num != 0:
            floor = None
            if num is not None:
                floor = (await conn.execute(q.window_start_seq(app, user, sid, num_recent=num, after_ts=after))).scalar()
            rows = (await conn.execute(q.select_live_events(app, user, sid, after_ts=after, min_seq=floor))).all()
        else:
            rows = []
        return head, rows, (await conn.execute(q.SELECT_STATE_ROWS, key)).all()

    return await store.read(load)


async def _load_default(store: SessionStore, key: dict[str, str], num: int | None) -> tuple[Any, list, list] | None:
    """``get_session``'s common loads (no ``after_timestamp``, archived rows skipped) in one round trip.

    Session head, events, state (one snapshot: ``q.SNAPSHOT_READS``) and a
    COMMIT ending the read go in one packet on the driver connection, and
    rows come back as plain tuples: 5,000 event rows cost 18 ms of CPU this
    way, 65 ms as SQLAlchemy rows (measured, issue #11).  Re-run once on a
    fresh connection if the pooled one was dropped by the server, like
    :meth:`SessionStore.read`.
    """
    if num is None:
        events = (q.RAW_SELECT_LIVE_EVENTS, key)
    else:
        events = (q.RAW_SELECT_LIVE_EVENTS_IN_WINDOW, {**key, "skip": num - 1})
    statements = [
        (q.SNAPSHOT_READS, None), (q.RAW_SELECT_SESSION_HEAD, key), events, (q.RAW_SELECT_STATE_ROWS, key), (COMMIT, None)
    ]
    # The driver builds a tuple and a string per event row; with the cyclic collector running,
    # a 5,000-row read took 238 ms instead of 52 (a process holding many objects, as the
    # benchmark does: each collection walks them all).  Paused for the read only, like the decode.
    with codec.gc_paused():
        try:
            async with store.transaction() as tx:
                results = await tx.batch(statements)
        except ConnectionLostError:
            logger.info("a pooled connection was dropped by the server; re-running the read")
            async with store.transaction() as tx:
                results = await tx.batch(statements)
    head = results[1][1]
    return (head[0], results[2][1], results[3][1]) if head else None


async def decode_events(payloads: list[str]) -> list[Event]:
    """Parses stored events; big loads go to a worker thread so the event loop stays responsive.

    Pydantic validation of ~5,000 events takes hundreds of milliseconds: on the
    loop that would stall every other request of the process.
    """
    if len(payloads) <= _DECODE_INLINE:
        return [codec.decode_event(p) for p in payloads]
    return await asyncio.to_thread(codec.decode_events, payloads)


def sessions_with_state(app: str, rows: list, state_rows: list) -> list[Session]:
    """Sessions (no events) of ``rows`` with their merged state from ``state_rows`` (app, user and session scopes)."""
    app_rows: list[tuple[str, str, str]] = []
    user_rows: dict[str, list[tuple[str, str, str]]] = {}
    sess_rows: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    for r in state_rows:
        item = (r.scope, r.state_key, r.value_json)
        if r.scope == codec.APP:
            app_rows.append(item)
        elif r.scope == codec.USER:
            user_rows.setdefault(r.user_id, []).append(item)
        else:
            sess_rows.setdefault((r.user_id, r.session_id), []).append(item)
    sessions = []
    for r in rows:
        merged = codec.merge_state(sess_rows.get((r.user_id, r.session_id), []) + app_rows + user_rows.get(r.user_id, []))
        s = Session(id=r.session_id, app_name=app, user_id=r.user_id, state=merged, last_update_time=r.last_update_time)
        mark(s, r.last_seq)
        sessions.append(s)
    return sessions


def encode_cursor(key: tuple[float, str, str]) -> str:
    """The opaque ``next_cursor`` of a page ending at ``(last_update_time, user_id, session_id)``."""
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode()


def decode_cursor(cursor: str) -> tuple[float, str, str]:
    """The key :func:`encode_cursor` encoded; a malformed cursor is a ``ValidationError``."""
    try:
        ts, user, sid = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        return float(ts), str(user), str(sid)
    except Exception as exc:  # any malformed cursor is the caller's error, not ours
        raise ValidationError("malformed cursor: pass back next_cursor exactly as returned") from exc
