"""Statement builders for compaction, token budgets and replay: pure functions, no I/O.

Like :mod:`adk_oceanbase.sessions.queries`, every statement filters on
``app_name`` and ``user_id`` first (a prefix seek on the primary key).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, and_, func, literal_column, select

from ..schema import agent_sessions as S
from ..schema import session_events as E

__all__ = [
    "budget_window",
    "events_by_seq",
    "live_event_meta",
    "live_raw_count",
    "live_summaries",
    "replay_deltas",
    "initial_states",
    "session_head",
    "event_position",
]


def _key(app: str, user: str, sid: str) -> Any:
    return and_(E.c.app_name == app, E.c.user_id == user, E.c.session_id == sid)


def session_head(app: str, user: str, sid: str) -> Select:
    return select(S.c.last_seq, S.c.total_tokens, S.c.event_count).where(
        S.c.app_name == app, S.c.user_id == user, S.c.session_id == sid
    )


def live_event_meta(app: str, user: str, sid: str, *, max_seq: int) -> Select:
    """Metadata (no payload) of the live events a default load at revision ``max_seq`` returns."""
    return (
        select(E.c.seq, E.c.event_id, E.c.ts, E.c.token_count, E.c.event_type, E.c.is_final, E.c.invocation_id)
        .where(_key(app, user, sid), E.c.seq <= max_seq, E.c.compacted_by.is_(None))
        .order_by(E.c.seq.asc())
    )


def live_summaries(app: str, user: str, sid: str) -> Select:
    """Live compaction events, oldest first, with their token counts."""
    return (
        select(E.c.seq, E.c.token_count, E.c.event_json)
        .where(_key(app, user, sid), E.c.compacted_by.is_(None), E.c.event_type == "compaction")
        .order_by(E.c.seq.asc())
    )


def budget_window(app: str, user: str, sid: str, *, budget: int) -> Select:
    """Newest live raw events whose running token sum (newest first) fits ``budget``.

    The running sum is a window ``SUM(token_count) OVER (ORDER BY seq DESC)``
    computed by the server over index columns only; payloads are fetched
    afterwards for the rows that fit (:func:`events_by_seq`). Returns
    ``(seq, token_count, running)`` newest first.
    """
    running = func.sum(E.c.token_count).over(order_by=E.c.seq.desc(), rows=(None, 0)).label("running")
    inner = (
        select(E.c.seq, E.c.token_count, running)
        .where(_key(app, user, sid), E.c.compacted_by.is_(None), E.c.event_type != "compaction")
        .subquery("w")
    )
    return select(inner.c.seq, inner.c.token_count, inner.c.running).where(inner.c.running <= budget).order_by(
        inner.c.seq.desc()
    )


def live_raw_count(app: str, user: str, sid: str) -> Select:
    return select(func.count()).where(_key(app, user, sid), E.c.compacted_by.is_(None), E.c.event_type != "compaction")


def events_by_seq(app: str, user: str, sid: str, seqs: list[int]) -> Select:
    return select(E.c.seq, E.c.event_json).where(_key(app, user, sid), E.c.seq.in_(seqs)).order_by(E.c.seq.asc())


def event_position(app: str, user: str, sid: str, *, event_id: str | None, at_ts: float | None) -> Select:
    """``(seq, ts, event_id)`` of the event replay stops at: by id, or the last event at or before ``at_ts``."""
    stmt = select(E.c.seq, E.c.ts, E.c.event_id).where(_key(app, user, sid))
    if event_id is not None:
        return stmt.where(E.c.event_id == event_id)
    if at_ts is not None:
        stmt = stmt.where(E.c.ts <= at_ts)
    return stmt.order_by(E.c.seq.desc()).limit(1)


def replay_deltas(app: str, user: str | None, *, until_ts: float | None = None) -> Select:
    """Every event of the app (or one user) up to ``until_ts`` that carries a state delta, in time order.

    App- and user-scoped state is shared between sessions, so replaying it
    "as it was then" reads other sessions' events too. The delta filter runs
    on the server (``JSON_EXTRACT`` on the stored text) so only those rows
    come back.
    """
    has_delta = literal_column("JSON_LENGTH(JSON_EXTRACT(event_json, '$.actions.state_delta'))") > 0
    stmt = select(E.c.user_id, E.c.session_id, E.c.seq, E.c.ts, E.c.event_json).where(
        E.c.app_name == app, has_delta
    )
    if until_ts is not None:
        stmt = stmt.where(E.c.ts <= until_ts)
    if user is not None:
        stmt = stmt.where(E.c.user_id == user)
    return stmt.order_by(E.c.ts.asc(), E.c.user_id.asc(), E.c.session_id.asc(), E.c.seq.asc())


def initial_states(app: str, user: str | None) -> Select:
    """Every session's creation state in the app (or one user's): replay's baseline writes."""
    stmt = select(S.c.user_id, S.c.session_id, S.c.created_at, S.c.initial_state).where(
        S.c.app_name == app, S.c.initial_state.is_not(None)
    )
    if user is not None:
        stmt = stmt.where(S.c.user_id == user)
    return stmt
