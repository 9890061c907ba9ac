"""Statement builders for turns, snapshots and state checkpoints: pure functions, no I/O.

Deltas are cut out of ``event_json`` by the server (``JSON_EXTRACT`` of
``$.actions.state_delta``) so only the delta text crosses the wire, and
only for events that carry one.  Every statement filters on ``app_name``
first; the reads of other sessions' writes use ``ix_events_app_ts`` (revision
0019) and stay inside a time window that starts at the nearest checkpoint.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Delete, Insert, Select, and_, delete, exists, func, insert, literal_column, or_, select

from ..schema import agent_sessions as S
from ..schema import session_events as E
from ..schema import state_checkpoints as C

__all__ = [
    "checkpoint_for_session",
    "checkpoint_for_user",
    "delete_checkpoints",
    "event_at",
    "events_at",
    "insert_checkpoints",
    "own_deltas",
    "other_deltas",
    "other_initials",
    "session_row",
    "turn_deltas",
    "turn_rows",
]

_DELTA = literal_column("JSON_EXTRACT(session_events.event_json, '$.actions.state_delta')")
_HAS_DELTA = literal_column("JSON_LENGTH(JSON_EXTRACT(session_events.event_json, '$.actions.state_delta'))") > 0


def _key(app: str, user: str, sid: str) -> Any:
    return and_(E.c.app_name == app, E.c.user_id == user, E.c.session_id == sid)


def session_row(app: str, user: str, sid: str) -> Select:
    return select(S.c.created_at, S.c.initial_state, S.c.last_seq).where(
        S.c.app_name == app, S.c.user_id == user, S.c.session_id == sid
    )


def turn_rows(app: str, user: str, sid: str) -> Select:
    """Every event's place in the session (no payload), in order: what turns are cut from."""
    return select(E.c.seq, E.c.event_id, E.c.invocation_id, E.c.author, E.c.ts, E.c.event_type).where(
        _key(app, user, sid)
    ).order_by(E.c.seq.asc())


def event_at(app: str, user: str, sid: str, seq: int) -> Select:
    return select(E.c.seq, E.c.ts, E.c.event_id).where(_key(app, user, sid), E.c.seq == seq)


def events_at(app: str, user: str, sid: str, seqs: list[int]) -> Select:
    return select(E.c.seq, E.c.ts, E.c.event_id).where(_key(app, user, sid), E.c.seq.in_(seqs))


def turn_deltas(app: str, user: str, sid: str, *, first_seq: int, last_seq: int) -> Select:
    """The state deltas of one turn's events, in order."""
    return own_deltas(app, user, sid, after_seq=first_seq - 1, upto_seq=last_seq)


def own_deltas(app: str, user: str, sid: str, *, after_seq: int, upto_seq: int) -> Select:
    """The session's own state deltas with ``after_seq < seq <= upto_seq``."""
    return (
        select(E.c.seq, E.c.ts, _DELTA.label("delta"))
        .where(_key(app, user, sid), E.c.seq > after_seq, E.c.seq <= upto_seq, _HAS_DELTA)
        .order_by(E.c.seq.asc())
    )


def other_deltas(app: str, user: str, sid: str, *, after_ts: float | None, until_ts: float) -> Select:
    """Other sessions' deltas in ``(after_ts, until_ts]`` (their ``app:``/``user:`` keys are shared with this one)."""
    stmt = select(E.c.user_id, E.c.session_id, E.c.seq, E.c.ts, _DELTA.label("delta")).where(
        E.c.app_name == app, E.c.ts <= until_ts, _HAS_DELTA, or_(E.c.user_id != user, E.c.session_id != sid)
    )
    if after_ts is not None:
        stmt = stmt.where(E.c.ts > after_ts)
    return stmt


def other_initials(app: str, user: str, sid: str) -> Select:
    """Other sessions' creation states in the app (shared keys written at creation) with their first event's time.

    Replay places a creation no later than the session's first event (clients
    may stamp events before the server's clock); the caller filters by time.
    """
    first = (
        select(func.min(E.c.ts))
        .where(E.c.app_name == S.c.app_name, E.c.user_id == S.c.user_id, E.c.session_id == S.c.session_id)
        .scalar_subquery()
    )
    return select(S.c.user_id, S.c.session_id, S.c.created_at, S.c.initial_state, first.label("first_ts")).where(
        S.c.app_name == app, S.c.initial_state.is_not(None), or_(S.c.user_id != user, S.c.session_id != sid)
    )


def _valid() -> Any:
    """A checkpoint counts only while its event is still the one at its seq (a re-created session has others)."""
    return exists().where(
        E.c.app_name == C.c.app_name, E.c.user_id == C.c.user_id, E.c.session_id == C.c.session_id,
        E.c.seq == C.c.seq, E.c.event_id == C.c.event_id,
    )


def checkpoint_for_session(app: str, user: str, sid: str, *, upto_seq: int) -> Select:
    """The session's newest valid checkpoint at or before ``upto_seq``."""
    return (
        select(C.c.seq, C.c.ts, C.c.state_json)
        .where(C.c.app_name == app, C.c.user_id == user, C.c.session_id == sid, C.c.seq <= upto_seq, _valid())
        .order_by(C.c.seq.desc())
        .limit(1)
    )


def checkpoint_for_user(app: str, user: str, *, until_ts: float) -> Select:
    """The user's newest valid checkpoint (any session) at or before ``until_ts``: a base for shared keys."""
    return (
        select(C.c.session_id, C.c.seq, C.c.ts, C.c.state_json)
        .where(C.c.app_name == app, C.c.user_id == user, C.c.ts <= until_ts, _valid())
        .order_by(C.c.ts.desc())
        .limit(1)
    )


def delete_checkpoints(app: str, user: str, sid: str, seqs: list[int]) -> Delete:
    return delete(C).where(C.c.app_name == app, C.c.user_id == user, C.c.session_id == sid, C.c.seq.in_(seqs))


def insert_checkpoints() -> Insert:
    """``INSERT IGNORE``: two readers materialising the same checkpoint write the same row; the first wins."""
    return insert(C).prefix_with("IGNORE")
