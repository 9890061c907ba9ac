"""Replay: a session's state as of any event or instant, rebuilt from the event log.

The log is never trimmed by compaction (archived rows stay), so every state
delta is still there. Session keys come from this session's deltas up to the
chosen event; ``app:`` and ``user:`` keys are shared, so they fold in the
deltas of *every* session of the app (or the user) up to that moment: the
shared state as it was then, not as it is now.

Limit: state given to ``create_session(state=...)`` is not an event. A key it
set and no delta ever touched is taken from the current row when that row was
written no later than the replay point (its ``updated_at``); a key whose
first delta comes after the replay point is assumed absent before it and is
listed in :attr:`ReplayedState.assumed_absent`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timezone
from typing import TYPE_CHECKING, Any

from google.adk.sessions.state import State

from ..errors import SessionMissingError, ValidationError
from ..sessions import codec
from ..sessions import queries as sq
from . import queries as cq

if TYPE_CHECKING:
    from ..sessions.service import OceanBaseSessionService

__all__ = ["ReplayedState", "replay_state"]


@dataclass(frozen=True)
class ReplayedState:
    """Merged state (ADK's ``Session.state`` view) as of one point of the log."""

    state: dict[str, Any]
    seq: int
    """Sequence number of the last event applied (0: before the first event)."""
    event_id: str | None
    timestamp: float | None
    assumed_absent: frozenset[str]
    """Keys first written by a delta after this point: taken as absent here (create_session state is not logged)."""


def _scoped(key: str) -> str:
    if key.startswith(State.APP_PREFIX):
        return "app"
    if key.startswith(State.USER_PREFIX):
        return "user"
    return "session"


def _merged_key(scope: str, key: str) -> str:
    return {"app": State.APP_PREFIX, "user": State.USER_PREFIX}.get(scope, "") + key


async def replay_state(
    service: "OceanBaseSessionService",
    *,
    app_name: str,
    user_id: str,
    session_id: str,
    event_id: str | None = None,
    at_time: float | None = None,
) -> ReplayedState:
    """Rebuilds the session's merged state as it was right after ``event_id`` (or at epoch ``at_time``).

    Args:
        event_id: replay up to and including this event of the session.
        at_time: or replay every event with ``timestamp <= at_time``.
            With neither, replays the whole log (useful as a consistency check
            against the stored state).

    Raises:
        SessionMissingError: no such session, or ``event_id`` is not one of its events.
    """
    if event_id is not None and at_time is not None:
        raise ValidationError("pass event_id or at_time, not both")
    app, user, sid = codec.check_id("app_name", app_name), codec.check_id("user_id", user_id), codec.check_id("session_id", session_id)
    engine = await service._engine()
    async with engine.connect() as conn:
        if (await conn.execute(sq.select_session(app, user, sid))).first() is None:
            raise SessionMissingError(f"Session {sid} not found.")
        pos = (await conn.execute(cq.event_position(app, user, sid, event_id=event_id, at_ts=at_time))).first()
        if pos is None and event_id is not None:
            raise SessionMissingError(f"Event {event_id} is not in session {sid}.")
        seq = pos.seq if pos is not None else 0
        until = at_time if at_time is not None else (pos.ts if pos is not None else float("-inf"))
        if event_id is None and at_time is None:
            until = float("inf")  # the whole log: other sessions' later writes count too
        # Every delta, not only those up to the replay point: a key first written
        # later must be known as "touched" to tell it apart from creation state.
        deltas = (await conn.execute(cq.replay_deltas(app, None))).all()
        current = (await conn.execute(cq.state_rows_with_time(app, user, sid))).all()

    touched: set[str] = set()
    state: dict[str, Any] = {}
    for row in deltas:
        mine = row.user_id == user and row.session_id == sid
        delta = (json.loads(row.event_json).get("actions") or {}).get("state_delta") or {}
        for key, value in delta.items():
            scope = _scoped(key)
            relevant = mine or scope == "app" or (scope == "user" and row.user_id == user)
            if not relevant:
                continue
            touched.add(key)
            applies = (row.seq <= seq) if mine else (row.ts <= until)
            if applies:
                state[key] = value
    assumed_absent = set()
    for row in current:
        key = _merged_key(row.scope, row.state_key)
        if key in touched:
            if key not in state:
                assumed_absent.add(key)
            continue
        written = row.updated_at.replace(tzinfo=timezone.utc).timestamp()
        if written <= until or row.scope == "session":
            state[key] = codec.decode_value(row.value_json)
    ordered = {k: v for k, v in state.items() if _scoped(k) == "session"}
    ordered.update({k: v for k, v in state.items() if _scoped(k) != "session"})
    return ReplayedState(ordered, seq, pos.event_id if pos is not None else None, pos.ts if pos is not None else at_time, frozenset(assumed_absent))
