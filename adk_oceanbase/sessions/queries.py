"""Statements of the session service: prebuilt constants for the hot path, builders for the rest. No I/O.

Every statement filters on ``app_name`` and ``user_id`` first, the leading
columns of every key, so each is a prefix seek.

Three kinds: the ``RAW_*`` texts run on the driver connection by
``append_event`` and ``create_session`` (see :mod:`adk_oceanbase.rawtx`);
``SELECT_SESSION`` / ``SELECT_STATE_ROWS``, Core statements built once with
bind parameters (``app``, ``user``, ``sid``) for ``get_session``; builders for
the rest.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

from sqlalchemy import Delete, Select, Update, and_, bindparam, delete, func, literal, or_, select, tuple_, update

from ..audit import RAW_INSERT_AUDIT_SELECT
from ..schema import agent_sessions as S
from ..schema import session_events as E
from ..schema import session_state as ST
from .codec import APP, SESSION, USER

__all__ = [
    "APPENDED",
    "RAW_BUMP_SESSION_CAS",
    "RAW_INSERT_AUDIT_IF_APPENDED",
    "RAW_INSERT_EVENT",
    "RAW_INSERT_EVENT_IF_BUMPED",
    "RAW_INSERT_SESSION",
    "RAW_SELECT_LIVE_EVENTS",
    "RAW_SELECT_LIVE_EVENTS_IN_WINDOW",
    "RAW_SELECT_SESSION_HEAD",
    "RAW_SELECT_STATE_ROWS",
    "RAW_UPSERT_STATE",
    "SELECT_SESSION",
    "SNAPSHOT_READS",
    "SELECT_STATE_ROWS",
    "delete_events",
    "delete_session",
    "delete_session_state",
    "event_exists",
    "latest_event_id",
    "lock_session",
    "appended_params",
    "numbered_state_params",
    "raw_upsert_state_if_written",
    "archive_seq_ranges",
    "first_seq_of_invocation",
    "select_events",
    "select_live_events",
    "select_unarchived_rows",
    "unarchive_from",
    "window_start_seq",
    "select_created_at",
    "select_session",
    "select_sessions",
    "select_sessions_page",
    "select_state_for_list",
    "select_user_state",
    "session_stats",
]


def _session_key(app: str, user: str, sid: str) -> Any:
    return and_(S.c.app_name == app, S.c.user_id == user, S.c.session_id == sid)


def _event_key(app: str, user: str, sid: str) -> Any:
    return and_(E.c.app_name == app, E.c.user_id == user, E.c.session_id == sid)


_KEY_BP = and_(S.c.app_name == bindparam("app"), S.c.user_id == bindparam("user"), S.c.session_id == bindparam("sid"))

SELECT_SESSION = select(S.c.last_seq, S.c.last_update_time).where(_KEY_BP)


# --------------------------------------------------------------------------- driver-level SQL
# The append and create paths run these as plain text on the driver connection
# (see adk_oceanbase.rawtx for why). Parameters are %(name)s, escaped by the
# driver; the column lists are those of adk_oceanbase.schema, and the session
# tests exercise every one of them against both engines.

RAW_INSERT_SESSION = """
INSERT INTO agent_sessions
    (app_name, user_id, session_id, last_seq, event_count, total_tokens,
     last_update_time, created_at, updated_at, initial_state, touched_at)
VALUES
    (%(app)s, %(user)s, %(sid)s, 0, 0, 0, %(ts)s, %(when)s, %(when)s, %(initial_state)s, UTC_TIMESTAMP(6))
"""
"""``touched_at`` (retention's clock) is the database's, never the caller's: see ``schema.agent_sessions``."""

RAW_BUMP_SESSION_CAS = """
UPDATE agent_sessions
   SET last_seq = last_seq + 1,
       event_count = event_count + 1,
       total_tokens = total_tokens + %(tokens)s,
       last_update_time = %(ts)s,
       updated_at = %(when)s,
       touched_at = UTC_TIMESTAMP(6)
 WHERE app_name = %(app)s AND user_id = %(user)s AND session_id = %(sid)s
   AND last_seq = %(expected_seq)s
"""
"""The compare-and-set append: 0 rows updated means stale (or gone)."""

RAW_INSERT_EVENT = """
INSERT INTO session_events
    (app_name, user_id, session_id, seq, event_id, invocation_id, author, branch,
     event_type, ts, event_time, token_count, is_final, compacted_by, event_json, redacted)
VALUES
    (%(app)s, %(user)s, %(sid)s, %(seq)s, %(event_id)s, %(invocation_id)s, %(author)s, %(branch)s,
     %(event_type)s, %(ts)s, %(event_time)s, %(token_count)s, %(is_final)s, NULL, %(event_json)s, %(redacted)s)
"""

RAW_INSERT_EVENT_IF_BUMPED = """
INSERT INTO session_events
    (app_name, user_id, session_id, seq, event_id, invocation_id, author, branch,
     event_type, ts, event_time, token_count, is_final, compacted_by, event_json, redacted)
SELECT %(app)s, %(user)s, %(sid)s, %(seq)s, %(event_id)s, %(invocation_id)s, %(author)s, %(branch)s,
       %(event_type)s, %(ts)s, %(event_time)s, %(token_count)s, %(is_final)s, NULL, %(event_json)s, %(redacted)s
  FROM agent_sessions
 WHERE app_name = %(app)s AND user_id = %(user)s AND session_id = %(sid)s
   AND last_seq = %(seq)s AND last_update_time = %(ts)s
"""
"""The event row, written only where the compare-and-set put the session row (its ``seq`` and ``ts``).

So ``RAW_BUMP_SESSION_CAS; RAW_INSERT_EVENT_IF_BUMPED; ...; COMMIT`` in one
packet writes nothing on a stale session (issue #11); had the same event's
earlier delivery put the session there, its row holds ``seq`` and this
insert fails on the keys before the COMMIT (handled as stale).  Not gated on
``ROW_COUNT()``: MariaDB sets it to -1 when it cannot send a reply (the
caller cancelled and closed the connection) yet runs the rest of the
packet, COMMIT included, so half an append committed (test_session_hotpath).
"""

APPENDED = """EXISTS (SELECT 1 FROM agent_sessions s JOIN session_events e
          ON e.app_name = s.app_name AND e.user_id = s.user_id AND e.session_id = s.session_id AND e.seq = s.last_seq
       WHERE s.app_name = %(gate_app)s AND s.user_id = %(gate_user)s AND s.session_id = %(gate_sid)s
         AND s.last_seq = %(gate_seq)s AND e.event_id = %(gate_event)s)"""
"""True once this append's event row is in and is the session's newest: the gate of its audit and state rows.

Parameters from :func:`appended_params`.  Only this append's insert makes
it true: a redelivery's event insert fails on its keys first.
"""

RAW_INSERT_AUDIT_IF_APPENDED = f"{RAW_INSERT_AUDIT_SELECT} WHERE {APPENDED}"
"""The append's audit row, in its packet: written only with the event (parameters: the audit row's and :func:`appended_params`)."""


def appended_params(app: str, user: str, sid: str, seq: int, event_id: str) -> dict[str, Any]:
    """The parameters of :data:`APPENDED` for the event ``event_id`` appended at ``seq``."""
    return {"gate_app": app, "gate_user": user, "gate_sid": sid, "gate_seq": seq, "gate_event": event_id}


RAW_UPSERT_STATE = """
INSERT INTO session_state (app_name, scope, user_id, session_id, state_key, value_json, updated_at)
VALUES (%(app_name)s, %(scope)s, %(user_id)s, %(session_id)s, %(state_key)s, %(value_json)s, %(updated_at)s)
ON DUPLICATE KEY UPDATE value_json = VALUES(value_json), updated_at = VALUES(updated_at)
"""
"""``dict.update`` semantics: new keys inserted, existing ones overwritten.

Run with ``executemany``: the driver sends all rows as one multi-row
statement (its batching needs every VALUES item to be a parameter).
"""

SNAPSHOT_READS = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"
"""First in a load, so its head, events and state come from one snapshot (the next transaction only).

At READ COMMITTED (seekdb's default; a MariaDB may be set to it) an append
landing between the events and the state gave a state holding a delta of an
event the load did not return.
"""

RAW_SELECT_SESSION_HEAD = """
SELECT last_seq, last_update_time
  FROM agent_sessions
 WHERE app_name = %(app)s AND user_id = %(user)s AND session_id = %(sid)s
"""

RAW_SELECT_LIVE_EVENTS = """
SELECT seq, event_json
  FROM session_events
 WHERE app_name = %(app)s AND user_id = %(user)s AND session_id = %(sid)s
   AND compacted_by IS NULL
 ORDER BY seq
"""
""":func:`select_live_events` without ``after_timestamp`` (the default load): rows no compaction archived."""

RAW_SELECT_LIVE_EVENTS_IN_WINDOW = """
SELECT seq, event_json
  FROM session_events
 WHERE app_name = %(app)s AND user_id = %(user)s AND session_id = %(sid)s
   AND compacted_by IS NULL
   AND seq >= COALESCE((SELECT w.seq FROM session_events w
                         WHERE w.app_name = %(app)s AND w.user_id = %(user)s AND w.session_id = %(sid)s
                         ORDER BY w.seq DESC LIMIT 1 OFFSET %(skip)s), 0)
 ORDER BY seq
"""
"""The same for ``num_recent_events`` (``skip`` = n - 1): :func:`window_start_seq` as a scalar subquery.

The window counts every stored row, archived or not, like a full load;
archived rows are dropped from it afterwards.
"""

_STATE_COLS = ("app_name", "scope", "user_id", "session_id", "state_key", "value_json", "updated_at")


@functools.lru_cache(maxsize=64)
def raw_upsert_state_if_written(n: int) -> str:
    """``RAW_UPSERT_STATE`` for ``n`` rows, run only if this append's event row is in (:data:`APPENDED`).

    Parameters are the columns suffixed with the row number (``app_name_0``,
    ...; see :func:`numbered_state_params`) and those of :func:`appended_params`.
    The rows are a derived table of ``SELECT ... UNION ALL`` (aliased: two
    equal literals must not make duplicate column names); the filter is
    evaluated before any row is written, so every row or none goes in.
    """
    rows = []
    for i in range(n):
        if i == 0:
            rows.append("SELECT " + ", ".join(f"%({c}_{i})s AS {c}" for c in _STATE_COLS))
        else:
            rows.append("SELECT " + ", ".join(f"%({c}_{i})s" for c in _STATE_COLS))
    return (
        f"INSERT INTO session_state ({', '.join(_STATE_COLS)})\n"
        f"SELECT * FROM ({' UNION ALL '.join(rows)}) AS r\n"
        f" WHERE {APPENDED}\n"
        "ON DUPLICATE KEY UPDATE value_json = VALUES(value_json), updated_at = VALUES(updated_at)"
    )


def numbered_state_params(rows: Sequence[dict]) -> dict[str, Any]:
    """The parameters of :func:`raw_upsert_state_if_written` for these state rows."""
    return {f"{c}_{i}": row[c] for i, row in enumerate(rows) for c in _STATE_COLS}


RAW_SELECT_STATE_ROWS = """
SELECT scope, state_key, value_json
  FROM session_state
 WHERE app_name = %(app)s
   AND (   (scope = 'app'     AND user_id = ''        AND session_id = '')
        OR (scope = 'user'    AND user_id = %(user)s  AND session_id = '')
        OR (scope = 'session' AND user_id = %(user)s  AND session_id = %(sid)s))
"""
"""App, user and session state rows of one session: three primary-key range seeks."""


def select_session(app: str, user: str, sid: str) -> Select:
    return SELECT_SESSION.params(app=app, user=user, sid=sid)


def select_created_at(app: str, user: str, sid: str) -> Select:
    return select(S.c.created_at).where(_session_key(app, user, sid))


def lock_session(app: str, user: str, sid: str) -> Select:
    """The session row with a row lock (marker-less appends read-then-write under it)."""
    return select_session(app, user, sid).with_for_update()


def event_exists(app: str, user: str, sid: str, event_id: str) -> Select:
    return select(E.c.seq).where(_event_key(app, user, sid), E.c.event_id == event_id)


def latest_event_id(app: str, user: str, sid: str) -> Select:
    return select(E.c.event_id).where(_event_key(app, user, sid)).order_by(E.c.seq.desc()).limit(1)


def select_events(
    app: str,
    user: str,
    sid: str,
    *,
    num_recent: int | None = None,
    after_ts: float | None = None,
    include_compacted: bool = True,
) -> Select:
    """Event payloads in ``seq`` order; newest-first with ``num_recent`` (the caller reverses)."""
    stmt = select(E.c.seq, E.c.event_json).where(_event_key(app, user, sid))
    if after_ts is not None:
        stmt = stmt.where(E.c.ts >= after_ts)
    if not include_compacted:
        stmt = stmt.where(E.c.compacted_by.is_(None))
    if num_recent is not None:
        return stmt.order_by(E.c.seq.desc()).limit(num_recent)
    return stmt.order_by(E.c.seq.asc())


def window_start_seq(app: str, user: str, sid: str, *, num_recent: int, after_ts: float | None) -> Select:
    """The lowest ``seq`` of the newest ``num_recent`` events (no row: fewer events than that).

    ``num_recent_events`` counts every stored event, archived or not, exactly
    like a full load; only then are archived rows dropped (see
    :func:`select_live_events`), so a window never reaches further back than
    ADK's would.
    """
    stmt = select(E.c.seq).where(_event_key(app, user, sid))
    if after_ts is not None:
        stmt = stmt.where(E.c.ts >= after_ts)
    return stmt.order_by(E.c.seq.desc()).limit(1).offset(num_recent - 1)


def select_live_events(app: str, user: str, sid: str, *, after_ts: float | None, min_seq: int | None) -> Select:
    """Event payloads in ``seq`` order without rows a loaded compaction event covers.

    A row archived by compaction ``c`` (``compacted_by = c.seq``) is dropped
    only when ``c`` itself is in the result: ``c.seq`` is always above the
    row's, so inside a ``seq`` window that leaves the ``after_timestamp``
    filter, checked on ``c`` with a primary-key probe.
    """
    stmt = select(E.c.seq, E.c.event_json).where(_event_key(app, user, sid))
    live = E.c.compacted_by.is_(None)
    if after_ts is not None:
        stmt = stmt.where(E.c.ts >= after_ts)
        C = E.alias("c")
        covering_loaded = (
            select(literal(1))
            .where(C.c.app_name == app, C.c.user_id == user, C.c.session_id == sid)
            .where(C.c.seq == E.c.compacted_by, C.c.ts >= after_ts)
            .exists()
        )
        live = or_(live, ~covering_loaded)
    if min_seq is not None:
        stmt = stmt.where(E.c.seq >= min_seq)
    return stmt.where(live).order_by(E.c.seq.asc())


def select_unarchived_rows(app: str, user: str, sid: str, *, below_seq: int) -> Select:
    """Rows a new compaction event at ``below_seq`` may archive (read inside the append transaction)."""
    return (
        select(E.c.seq, E.c.event_json)
        .where(_event_key(app, user, sid), E.c.seq < below_seq, E.c.compacted_by.is_(None))
        .order_by(E.c.seq.asc())
    )


def archive_seq_ranges(app: str, user: str, sid: str, ranges: Sequence[tuple[int, int]], *, by_seq: int) -> Update:
    """Marks rows in inclusive ``seq`` runs as covered by the compaction event ``by_seq``."""
    runs = or_(*[E.c.seq.between(a, b) for a, b in ranges])
    return update(E).where(_event_key(app, user, sid), runs, E.c.compacted_by.is_(None)).values(compacted_by=by_seq)


def first_seq_of_invocation(app: str, user: str, sid: str, invocation_id: str) -> Select:
    return select(func.min(E.c.seq)).where(_event_key(app, user, sid), E.c.invocation_id == invocation_id)


def unarchive_from(app: str, user: str, sid: str, *, min_seq: int) -> Update:
    """Restores rows whose covering compaction a rewind annulled (compaction ``seq >= min_seq``)."""
    return update(E).where(_event_key(app, user, sid), E.c.compacted_by >= min_seq).values(compacted_by=None)


SELECT_STATE_ROWS = select(ST.c.scope, ST.c.state_key, ST.c.value_json).where(
    ST.c.app_name == bindparam("app"),
    or_(
        and_(ST.c.scope == APP, ST.c.user_id == "", ST.c.session_id == ""),
        and_(ST.c.scope == USER, ST.c.user_id == bindparam("user"), ST.c.session_id == ""),
        and_(ST.c.scope == SESSION, ST.c.user_id == bindparam("user"), ST.c.session_id == bindparam("sid")),
    ),
)
"""App, user and session state rows of one session: three primary-key range seeks."""


def select_user_state(app: str, user: str) -> Select:
    return select(ST.c.state_key, ST.c.value_json).where(
        ST.c.app_name == app, ST.c.scope == USER, ST.c.user_id == user, ST.c.session_id == ""
    )


def select_state_for_list(app: str, user: str | None, session_ids: Sequence[str] | None = None) -> Select:
    """State rows needed to merge state into listed sessions (one query for the whole list).

    For one user every branch is a primary-key prefix seek (app scope, the
    user's scope, then the listed sessions' own rows), so a page of 50 reads
    ~50 sessions' keys, not the user's whole history.
    """
    cols = (ST.c.scope, ST.c.user_id, ST.c.session_id, ST.c.state_key, ST.c.value_json)
    stmt = select(*cols).where(ST.c.app_name == app)
    if user is None:
        return stmt
    session_rows = and_(ST.c.scope == SESSION, ST.c.user_id == user)
    if session_ids is not None:
        session_rows = and_(session_rows, ST.c.session_id.in_(list(session_ids) or [""]))
    return stmt.where(
        or_(
            and_(ST.c.scope == APP, ST.c.user_id == "", ST.c.session_id == ""),
            and_(ST.c.scope == USER, ST.c.user_id == user, ST.c.session_id == ""),
            session_rows,
        )
    )


_LIST_COLS = (S.c.user_id, S.c.session_id, S.c.last_update_time, S.c.last_seq)


def _list_order(user: str | None) -> list:
    """ADK's list order: update time, then user id, then session id.

    For one user the user id is constant, so the order is (update time,
    session id): exactly ``ix_sessions_user_recent``'s column order, which the
    optimizer then scans directly (with the user id in the ORDER BY it chose
    the app-wide index and filtered by user instead).
    """
    if user is not None:
        return [S.c.last_update_time, S.c.session_id]
    return [S.c.last_update_time, S.c.user_id, S.c.session_id]


def select_sessions(app: str, user: str | None) -> Select:
    """Every session of the app (or one user), oldest update first as ADK lists them."""
    stmt = select(*_LIST_COLS).where(S.c.app_name == app)
    if user is not None:
        stmt = stmt.where(S.c.user_id == user)
    return stmt.order_by(*[c.asc() for c in _list_order(user)])


def select_sessions_page(
    app: str, user: str | None, *, limit: int, after: tuple[float, str, str] | None, newest_first: bool
) -> Select:
    """Keyset pagination on (last_update_time, [user_id,] session_id): O(limit) per page at any depth."""
    stmt = select(*_LIST_COLS).where(S.c.app_name == app)
    if user is not None:
        stmt = stmt.where(S.c.user_id == user)
    order = _list_order(user)
    if after is not None:
        ts, after_user, after_sid = after
        bound = [literal(ts), literal(after_sid)] if user is not None else [literal(ts), literal(after_user), literal(after_sid)]
        key, limit_key = tuple_(*order), tuple_(*bound)
        stmt = stmt.where(key < limit_key if newest_first else key > limit_key)
    stmt = stmt.order_by(*[c.desc() if newest_first else c.asc() for c in order])
    return stmt.limit(limit)


def delete_events(app: str, user: str, sid: str) -> Delete:
    return delete(E).where(_event_key(app, user, sid))


def delete_session_state(app: str, user: str, sid: str) -> Delete:
    return delete(ST).where(ST.c.app_name == app, ST.c.scope == SESSION, ST.c.user_id == user, ST.c.session_id == sid)


def delete_session(app: str, user: str, sid: str) -> Delete:
    return delete(S).where(_session_key(app, user, sid))


def session_stats(app: str | None) -> Select:
    """Per app: sessions, distinct users, events and tokens, from the session rows' counters (no event scan)."""
    stmt = (
        select(
            S.c.app_name,
            func.count().label("sessions"),
            func.count(func.distinct(S.c.user_id)).label("users"),
            func.coalesce(func.sum(S.c.event_count), 0).label("events"),
            func.coalesce(func.sum(S.c.total_tokens), 0).label("tokens"),
        )
        .group_by(S.c.app_name)
        .order_by(S.c.app_name)
    )
    return stmt if app is None else stmt.where(S.c.app_name == app)
