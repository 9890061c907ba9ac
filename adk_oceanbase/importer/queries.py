"""Statements the importer adds to the session service's own (``sessions.queries``). No I/O.

Event rows and state rows are written with the service's ``RAW_INSERT_EVENT``
and ``RAW_UPSERT_STATE``, so an imported row is column for column what
``append_event`` writes; only the session row differs (it arrives with its
events already counted) and the reads that make a re-run import only what is
missing.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Insert, Select, Update, cast, func, insert, literal, literal_column, select, update
from sqlalchemy.dialects.mysql import DATETIME

from ..schema import agent_sessions as S
from ..schema import session_events as E
from ..schema import session_state as ST
from ..sessions.codec import APP, SESSION, USER

__all__ = ["advance_session", "event_ids", "insert_session", "session_state", "shared_state"]


def event_ids(app: str, user: str, sid: str) -> Select:
    """Ids of the events a target session already holds (unique per session)."""
    return select(E.c.event_id).where(E.c.app_name == app, E.c.user_id == user, E.c.session_id == sid)


_SERVER_NOW = literal_column("UTC_TIMESTAMP(6)")


def _touched(source_time: Any) -> Any:
    """Retention's clock for an imported session: the source's last update, never later than now.

    An import copies; it does not use.  The source's time is the only record
    of the session's last use, so a year-old archive imported today expires
    as it would have in the store it came from (capped at the database clock,
    so a future-dated source cannot outlive the TTL).
    """
    return func.least(cast(literal(source_time), DATETIME(fsp=6)), _SERVER_NOW)


def insert_session(row: dict[str, Any]) -> Insert:
    """A session row with its events already counted (``last_seq`` = number of events)."""
    return insert(S).values(**row, touched_at=_touched(row["updated_at"]))


def advance_session(
    app: str, user: str, sid: str, *, last_seq: int, added: int, tokens: int, last_update_time: float, updated_at: Any
) -> Update:
    """Counts events appended to an existing session by a resumed import."""
    return (
        update(S)
        .where(S.c.app_name == app, S.c.user_id == user, S.c.session_id == sid)
        .values(
            last_seq=last_seq,
            event_count=S.c.event_count + added,
            total_tokens=S.c.total_tokens + tokens,
            last_update_time=last_update_time,
            updated_at=updated_at,
            touched_at=func.greatest(S.c.touched_at, _touched(updated_at)),
        )
    )


def session_state(app: str, user: str, sid: str) -> Select:
    """``(state_key, value_json)`` of one session's own scope."""
    return select(ST.c.state_key, ST.c.value_json).where(
        ST.c.app_name == app, ST.c.scope == SESSION, ST.c.user_id == user, ST.c.session_id == sid
    )


def shared_state(app: str) -> Select:
    """``(scope, user_id, state_key, value_json)`` of the app's ``app:`` and every ``user:`` scope."""
    return select(ST.c.scope, ST.c.user_id, ST.c.state_key, ST.c.value_json).where(
        ST.c.app_name == app, ST.c.scope.in_([APP, USER]), ST.c.session_id == ""
    )
