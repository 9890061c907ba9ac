"""Statements for turns, snapshots and state checkpoints: pure, no I/O.

The reads are plain SQL constants (``RAW_*``, ``%(name)s`` parameters) sent
in batches on a raw transaction (:mod:`adk_oceanbase.rawtx`): a snapshot is a
handful of small statements, and compiling Core statements cost more than the
server took to answer them.  Deltas are cut out of ``event_json`` by the
server (``JSON_EXTRACT`` of ``$.actions.state_delta``) so only the delta text
crosses the wire, and only for events that carry one.  Every statement
filters on ``app_name`` first; other sessions' writes are read through
``ix_events_app_ts`` (revision 0016), inside a window that starts at the
user's newest checkpoint.
"""

from __future__ import annotations

from sqlalchemy import Delete, Insert, Select, delete, insert, select

from ..schema import agent_sessions as S
from ..schema import state_checkpoints as C

__all__ = [
    "RAW_EVENTS_AT",
    "RAW_EVENT_AT",
    "RAW_OTHER_DELTAS",
    "RAW_OTHER_INITIALS",
    "RAW_OWN_DELTAS",
    "RAW_SESSION_CHECKPOINT",
    "RAW_SESSION_ROW",
    "RAW_TURN_RANGE",
    "RAW_TURN_ROWS",
    "RAW_USER_CHECKPOINT",
    "delete_checkpoints",
    "insert_checkpoints",
    "session_row",
]


def session_row(app: str, user: str, sid: str) -> Select:
    return select(S.c.created_at, S.c.initial_state, S.c.last_seq).where(
        S.c.app_name == app, S.c.user_id == user, S.c.session_id == sid
    )


def delete_checkpoints(app: str, user: str, sid: str, seqs: list[int]) -> Delete:
    return delete(C).where(C.c.app_name == app, C.c.user_id == user, C.c.session_id == sid, C.c.seq.in_(seqs))


def insert_checkpoints() -> Insert:
    """``INSERT IGNORE``: two readers materialising the same checkpoint write the same row; the first wins."""
    return insert(C).prefix_with("IGNORE")


_SESSION_KEY = "app_name = %(app)s AND user_id = %(user)s AND session_id = %(sid)s"
_DELTA_SQL = "JSON_EXTRACT(event_json, '$.actions.state_delta')"
_VALID_SQL = (
    "EXISTS (SELECT 1 FROM session_events e WHERE e.app_name = c.app_name AND e.user_id = c.user_id "
    "AND e.session_id = c.session_id AND e.seq = c.seq AND e.event_id = c.event_id)"
)

RAW_SESSION_ROW = f"SELECT created_at, initial_state, last_seq FROM agent_sessions WHERE {_SESSION_KEY}"
RAW_EVENT_AT = f"SELECT seq, ts, event_id FROM session_events WHERE {_SESSION_KEY} AND seq = %(seq)s"
RAW_SESSION_CHECKPOINT = (
    "SELECT c.seq, c.ts, c.state_json FROM state_checkpoints c WHERE c.app_name = %(app)s AND c.user_id = %(user)s "
    f"AND c.session_id = %(sid)s AND c.seq <= %(seq)s AND {_VALID_SQL} ORDER BY c.seq DESC LIMIT 1"
)
_USER_CHECKPOINT_WHERE = f"c.app_name = %(app)s AND c.user_id = %(user)s AND c.ts <= %(until)s AND {_VALID_SQL}"
RAW_USER_CHECKPOINT = f"SELECT c.session_id, c.seq, c.ts, c.state_json FROM state_checkpoints c WHERE {_USER_CHECKPOINT_WHERE} ORDER BY c.ts DESC LIMIT 1"
RAW_OWN_DELTAS = (
    f"SELECT seq, ts, {_DELTA_SQL} AS delta FROM session_events WHERE {_SESSION_KEY} "
    f"AND seq > %(after)s AND seq <= %(seq)s AND JSON_LENGTH({_DELTA_SQL}) > 0 ORDER BY seq"
)
RAW_OTHER_DELTAS = (
    f"SELECT user_id, session_id, seq, ts, {_DELTA_SQL} AS delta FROM session_events "
    "WHERE app_name = %(app)s AND ts <= %(until)s "
    f"AND ts > COALESCE((SELECT c.ts FROM state_checkpoints c WHERE {_USER_CHECKPOINT_WHERE} ORDER BY c.ts DESC LIMIT 1), -1e300) "
    f"AND JSON_LENGTH({_DELTA_SQL}) > 0 AND (user_id <> %(user)s OR session_id <> %(sid)s)"
)
RAW_OTHER_INITIALS = (
    "SELECT s.user_id, s.session_id, s.created_at, s.initial_state, (SELECT MIN(e.ts) FROM session_events e "
    "WHERE e.app_name = s.app_name AND e.user_id = s.user_id AND e.session_id = s.session_id) AS first_ts "
    "FROM agent_sessions s WHERE s.app_name = %(app)s AND s.initial_state IS NOT NULL "
    "AND (s.user_id <> %(user)s OR s.session_id <> %(sid)s)"
)
RAW_EVENTS_AT = f"SELECT seq, ts, event_id FROM session_events WHERE {_SESSION_KEY} AND seq IN %(seqs)s"

# One turn's event range, cut by the server (a turn starts where the invocation id changes or is empty),
# so "the state as of turn N" reads no per-event rows: ~2 ms at 5,000 events where listing every
# event's (seq, invocation_id) took ~200 ms through the Core reader (benchmarks/context.py).
RAW_TURN_RANGE = (
    "SELECT MIN(seq), MAX(seq), MIN(ts), COUNT(*) FROM ("
    "SELECT seq, ts, SUM(starts) OVER (ORDER BY seq ROWS UNBOUNDED PRECEDING) AS turn FROM ("
    "SELECT seq, ts, CASE WHEN COALESCE(invocation_id, '') = '' "
    "OR invocation_id <> COALESCE(LAG(invocation_id) OVER (ORDER BY seq), '') THEN 1 ELSE 0 END AS starts "
    f"FROM session_events WHERE {_SESSION_KEY}) marked) numbered WHERE turn = %(turn)s"
)
RAW_TURN_ROWS = f"SELECT seq, event_id, invocation_id, author, ts FROM session_events WHERE {_SESSION_KEY} ORDER BY seq"
