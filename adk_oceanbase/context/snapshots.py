"""The merged state as of any event of a session, from the nearest checkpoint instead of the whole app's log.

Same answer as :func:`adk_oceanbase.compaction.replay_state` (session keys
from this session up to the event; ``app:``/``user:`` keys from every session
of the app, or of the user, up to the event's time; writes applied in time
order), read differently:

* the session part starts at the session's newest checkpoint at or before the
  event (``state_checkpoints``), else at its creation state, and folds only
  the session's own deltas after it;
* the shared part starts at the user's newest checkpoint before the event's
  time, whatever its session, and folds only other sessions' writes after it
  (``ix_events_app_ts``): a window, not the app's history.

Checkpoints are written by the reads themselves: a read that folded past a
multiple of :data:`CHECKPOINT_EVERY` events stores the state there, once the
event is older than ``settle_s`` (clients stamp events; a write stamped
earlier than a checkpoint but arriving after it would be missed, so recent
history is never frozen).  The first read of a session may read the app's log
up to the event once; the next read of any of its turns folds at most
``CHECKPOINT_EVERY`` of its events plus the shared writes since.

Measured (``benchmarks/context.py``): see ``benchmarks/README.md``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from google.adk.sessions.state import State

from ..engine import Database
from ..errors import SessionMissingError, ValidationError
from ..gateway import connection, raw, retrying, transaction
from ..errors import is_connection_lost
from . import queries as q
from . import signals

__all__ = ["CHECKPOINT_EVERY", "SETTLE_S", "Snapshot", "scope_of", "state_as_of"]

CHECKPOINT_EVERY = 100
"""A checkpoint every this many events of a session: a snapshot folds at most this many of its deltas."""
SETTLE_S = 300.0
"""Events younger than this are never checkpointed: a late write stamped before them could still arrive."""


@dataclass(frozen=True)
class Snapshot:
    """The merged state (ADK's ``Session.state`` view) right after the event at ``seq`` (0: as created)."""

    state: dict[str, Any]
    seq: int
    event_id: str | None
    ts: float | None
    folded: int = 0
    """Deltas folded for this read (the cost a checkpoint bounds)."""


def scope_of(key: str) -> str:
    if key.startswith(State.APP_PREFIX):
        return "app"
    if key.startswith(State.USER_PREFIX):
        return "user"
    return "session"


def _epoch(value: datetime) -> float:
    return value.replace(tzinfo=timezone.utc).timestamp()


def _created(row: Any) -> float:
    """When a session's creation state counts: its creation, or its first event if stamped earlier."""
    created = _epoch(row.created_at)
    return created if row.first_ts is None else min(created, row.first_ts)


def _loads(raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    value = json.loads(raw) if isinstance(raw, (str, bytes)) else raw
    return value if isinstance(value, dict) else {}


def _ordered(state: dict[str, Any]) -> dict[str, Any]:
    """Session keys first, like ADK's merged view."""
    out = {k: v for k, v in state.items() if scope_of(k) == "session"}
    out.update({k: v for k, v in state.items() if scope_of(k) != "session"})
    return out


async def _read(db: Database, work: Any) -> Any:
    async def once() -> Any:
        async with connection(db) as conn:
            return await work(conn)

    return await retrying(once, when=is_connection_lost, what="a snapshot read")


async def state_as_of(
    db: Database, app: str, user: str, sid: str, seq: int, *, until: float | None = None,
    settle_s: float = SETTLE_S, checkpoint: bool = True,
) -> Snapshot:
    """The merged state right after the session's event ``seq`` (``0``: its creation state).

    ``until`` moves the instant shared keys are taken at (default: the
    event's time), e.g. to just before the next turn began.

    Raises:
        SessionMissingError: no such session, or no event ``seq`` in it.
    """
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        raise ValidationError("seq must be a non-negative integer")
    with signals.timed_replay("snapshot"):
        loaded = await _load(db, app, user, sid, seq, until)
        snap, marks = _fold(app, user, sid, seq, loaded)
        if checkpoint and marks:
            now = time.time()
            settled = [m for m in marks if m["ts"] < now - settle_s]
            if settled:
                await _store(db, app, user, sid, settled)
        return snap


class _Row:
    """A result row by column name (the raw batch returns tuples)."""

    def __init__(self, names: tuple[str, ...], values: tuple) -> None:
        self.__dict__.update(zip(names, values))


_COLUMNS = {
    q.RAW_SESSION_ROW: ("created_at", "initial_state", "last_seq"),
    q.RAW_EVENT_AT: ("seq", "ts", "event_id"),
    q.RAW_SESSION_CHECKPOINT: ("seq", "ts", "state_json"),
    q.RAW_USER_CHECKPOINT: ("session_id", "seq", "ts", "state_json"),
    q.RAW_OWN_DELTAS: ("seq", "ts", "delta"),
    q.RAW_OTHER_DELTAS: ("user_id", "session_id", "seq", "ts", "delta"),
    q.RAW_OTHER_INITIALS: ("user_id", "session_id", "created_at", "initial_state", "first_ts"),
    q.RAW_EVENTS_AT: ("seq", "ts", "event_id"),
}


async def _batch(tx: Any, statements: list[tuple[str, dict[str, Any]]]) -> list[list[_Row]]:
    results = await tx.batch(statements)
    return [[_Row(_COLUMNS[sql], r) for r in rows] for (sql, _), (_, rows) in zip(statements, results)]


async def _load(db: Database, app: str, user: str, sid: str, seq: int, at: float | None) -> dict[str, Any]:
    """Two round trips (the second depends on the first's checkpoint and instant), each one batch, in one transaction."""
    key = {"app": app, "user": user, "sid": sid, "seq": seq}

    async def once() -> dict[str, Any]:
        async with raw(db) as tx:
            first = await _batch(tx, [(q.RAW_SESSION_ROW, key), (q.RAW_EVENT_AT, key), (q.RAW_SESSION_CHECKPOINT, key)])
            session, pos, own_cp = (next(iter(rows), None) for rows in first)
            if session is None:
                raise SessionMissingError(f"Session {sid} not found.")
            if seq and pos is None:
                raise SessionMissingError(f"Session {sid} has no event {seq}.")
            created = _epoch(session.created_at)
            until = pos.ts if seq else created
            if at is not None:
                until = max(until, at)
            after_seq = own_cp.seq if own_cp is not None else 0
            # the events a checkpoint may be stored at: multiples of CHECKPOINT_EVERY folded past
            marks = list(range(after_seq - after_seq % CHECKPOINT_EVERY + CHECKPOINT_EVERY, seq + 1, CHECKPOINT_EVERY))
            params = {**key, "until": until, "after": after_seq, "seqs": tuple(marks)}
            second = [(q.RAW_USER_CHECKPOINT, params), (q.RAW_OWN_DELTAS, params), (q.RAW_OTHER_DELTAS, params), (q.RAW_OTHER_INITIALS, params)]
            if marks:
                second.append((q.RAW_EVENTS_AT, params))
            got = await _batch(tx, second)
        shared_cp = next(iter(got[0]), None)
        after_ts = shared_cp.ts if shared_cp is not None else None
        initials = [(_created(r), r) for r in got[3]]
        return {
            "session": session, "created": created, "pos": pos if seq else None, "until": until, "own_cp": own_cp,
            "shared_cp": shared_cp, "own": got[1] if seq else [], "others": got[2],
            "initials": [(ts, r) for ts, r in initials if ts <= until and (after_ts is None or ts > after_ts)],
            "marks": {r.seq: r for r in got[4]} if marks else {},
        }

    return await retrying(once, when=is_connection_lost, what="a snapshot read")


_Write = tuple  # (ts, order, user, session, seq, delta, mine); order 0 = a creation state, first at its instant


def _apply(state: dict[str, Any], writes: list[_Write], user: str, *, upto_seq: int, until: float, shared_ts: float) -> dict[str, Any]:
    """``state`` plus the writes replay counts at (``upto_seq``, ``until``): the session's own up to its
    event, other sessions' shared keys up to the instant; shared keys only when newer than the base."""
    out = dict(state)
    for ts, _, w_user, _, w_seq, delta, mine in writes:
        if (w_seq > upto_seq) if mine else (ts > until):
            continue
        for key, value in delta.items():
            scope = scope_of(key)
            if scope == "session":
                if mine:
                    out[key] = value
            elif ts > shared_ts and (scope == "app" or w_user == user):
                out[key] = value
    return out


def _fold(app: str, user: str, sid: str, seq: int, d: dict[str, Any]) -> tuple[Snapshot, list[dict[str, Any]]]:
    own_cp, shared_cp = d["own_cp"], d["shared_cp"]
    after_seq = own_cp.seq if own_cp is not None else 0
    shared_ts = shared_cp.ts if shared_cp is not None else float("-inf")
    base: dict[str, Any] = {}
    if shared_cp is not None:
        base.update({k: v for k, v in _loads(shared_cp.state_json).items() if scope_of(k) != "session"})
    if own_cp is not None:
        base.update({k: v for k, v in _loads(own_cp.state_json).items() if scope_of(k) == "session"})
    writes: list[_Write] = []
    if own_cp is None:  # creation no later than the first event: clients may stamp events before the server's clock
        first_own = d["own"][0].ts if d["own"] else d["created"]
        writes.append((min(d["created"], first_own), 0, user, sid, 0, _loads(d["session"].initial_state), True))
    writes += [(r.ts, 1, user, sid, r.seq, _loads(r.delta), True) for r in d["own"]]
    writes += [(r.ts, 1, r.user_id, r.session_id, r.seq, _loads(r.delta), False) for r in d["others"]]
    writes += [(ts, 0, r.user_id, r.session_id, 0, _loads(r.initial_state), False) for ts, r in d["initials"]]
    writes.sort(key=lambda w: (w[0], w[1], w[2], w[3], w[4]))
    state = _apply(base, writes, user, upto_seq=seq, until=d["until"], shared_ts=shared_ts)
    marks = [
        _mark(row, _apply(base, writes, user, upto_seq=m, until=row.ts, shared_ts=shared_ts))
        for m, row in sorted(d["marks"].items()) if m > after_seq
    ]
    pos = d["pos"]
    return Snapshot(_ordered(state), seq, pos.event_id if pos is not None else None, d["until"], len(writes)), marks


def _mark(row: Any, state: dict[str, Any]) -> dict[str, Any]:
    return {"seq": row.seq, "event_id": row.event_id, "ts": row.ts, "state_json": json.dumps(state, separators=(",", ":"))}


async def _store(db: Database, app: str, user: str, sid: str, marks: list[dict[str, Any]]) -> None:
    rows = [{"app_name": app, "user_id": user, "session_id": sid, **m} for m in marks]
    async with transaction(db) as conn:
        # rows of a deleted and re-created session hold other events: replaced, not kept
        await conn.execute(q.delete_checkpoints(app, user, sid, [m["seq"] for m in marks]))
        await conn.execute(q.insert_checkpoints(), rows)
