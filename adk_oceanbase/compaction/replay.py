"""Replay: a session's state as of any event or instant, rebuilt from the log.

The log is every session's creation state (``agent_sessions.initial_state``)
plus every event's state delta; compaction archives rows but never deletes
them, so nothing is missing.  Session keys come from this session alone, up
to the chosen event (by ``seq``).  ``app:`` and ``user:`` keys are shared, so
they fold in the writes of *every* session of the app (or user) up to that
moment, in time order: the shared state as it was then, not as it is now.

Limits: a deleted session's events and creation state are gone, so its past
writes to shared keys cannot be replayed; writes are ordered by the clients'
timestamps (the only clock ADK has).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from datetime import timezone
from typing import TYPE_CHECKING, Any, Iterator

from google.adk.sessions.state import State

from ..errors import SessionMissingError, ValidationError
from .. import validation
from ..sessions import queries as sq
from . import queries as cq

if TYPE_CHECKING:
    from ..sessions import OceanBaseSessionService

__all__ = ["ReplayedState", "replay_state"]


@dataclass(frozen=True)
class ReplayedState:
    """Merged state (ADK's ``Session.state`` view) as of one point of the log."""

    state: dict[str, Any]
    seq: int
    """Sequence number of the last event applied (0: the session as created)."""
    event_id: str | None
    timestamp: float | None


@dataclass(frozen=True)
class _Write:
    ts: float
    order: int  # 0 = creation state, 1 = event delta (same instant: creation first)
    user_id: str
    session_id: str
    seq: int  # 0 for creation state
    delta: dict[str, Any]


def _scope(key: str) -> str:
    if key.startswith(State.APP_PREFIX):
        return "app"
    if key.startswith(State.USER_PREFIX):
        return "user"
    return "session"


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
        at_time: or replay every write with ``timestamp <= at_time``.
            With neither, replays the whole log (equal to the stored state:
            a consistency check).

    Raises:
        SessionMissingError: no such session, or ``event_id`` is not one of its events.
    """
    if event_id is not None and at_time is not None:
        raise ValidationError("pass event_id or at_time, not both")
    app, user, sid = validation.check_id("app_name", app_name), validation.check_id("user_id", user_id), validation.check_id("session_id", session_id)
    if event_id is not None:
        validation.check_id("event_id", event_id)

    async def load(conn: Any) -> tuple[Any, list, list]:
        if (await conn.execute(sq.select_session(app, user, sid))).first() is None:
            raise SessionMissingError(f"Session {sid} not found.")
        pos = (await conn.execute(cq.event_position(app, user, sid, event_id=event_id, at_ts=at_time))).first()
        if pos is None and event_id is not None:
            raise SessionMissingError(f"Event {event_id} is not in session {sid}.")
        deltas = (await conn.execute(cq.replay_deltas(app, None))).all()
        return pos, deltas, (await conn.execute(cq.initial_states(app, None))).all()

    pos, deltas, initials = await service.store.read(load)

    seq = pos.seq if pos is not None else 0
    if event_id is None and at_time is None:
        until = float("inf")  # the whole log: other sessions' later writes count too
    else:
        until = at_time if at_time is not None else pos.ts

    # Parsing every delta of the app is CPU work: off the event loop.
    state = await asyncio.to_thread(_fold, deltas, initials, user, sid, seq, until)
    return ReplayedState(state, seq, pos.event_id if pos is not None else None, pos.ts if pos is not None else at_time)


def _fold(deltas: list, initials: list, user: str, sid: str, seq: int, until: float) -> dict[str, Any]:
    """Applies the log in time order; session keys first in the result, like ADK's merged view."""
    state: dict[str, Any] = {}
    for w in _writes(deltas, initials):
        mine = w.user_id == user and w.session_id == sid
        if not (w.seq <= seq if mine else w.ts <= until):
            continue
        for key, value in w.delta.items():
            scope = _scope(key)
            if mine or scope == "app" or (scope == "user" and w.user_id == user):
                state[key] = value
    ordered = {k: v for k, v in state.items() if _scope(k) == "session"}
    ordered.update({k: v for k, v in state.items() if _scope(k) != "session"})
    return ordered


def _writes(deltas: list, initials: list) -> Iterator[_Write]:
    """Creation states and event deltas of the app as one time-ordered log.

    A session's creation is placed no later than its first event, so a client
    whose event timestamps precede the server-side creation time still
    replays creation first.
    """
    first_ts: dict[tuple[str, str], float] = {}
    writes: list[_Write] = []
    for r in deltas:
        first_ts.setdefault((r.user_id, r.session_id), r.ts)
        first_ts[(r.user_id, r.session_id)] = min(first_ts[(r.user_id, r.session_id)], r.ts)
        delta = (json.loads(r.event_json).get("actions") or {}).get("state_delta") or {}
        writes.append(_Write(r.ts, 1, r.user_id, r.session_id, r.seq, delta))
    for r in initials:
        created = r.created_at.replace(tzinfo=timezone.utc).timestamp()
        ts = min(created, first_ts.get((r.user_id, r.session_id), created))
        writes.append(_Write(ts, 0, r.user_id, r.session_id, 0, json.loads(r.initial_state)))
    writes.sort(key=lambda w: (w.ts, w.order, w.user_id, w.session_id, w.seq))
    return iter(writes)
