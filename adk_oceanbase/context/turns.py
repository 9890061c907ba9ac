"""Turns of a session: the index (invocation -> events -> state after it), each turn's state diff, snapshots, sandbox replays.

A turn is a run of consecutive events sharing an ``invocation_id`` (one
``Runner.run_async`` call: the user's message, the model's calls, the tools'
answers, the reply); an event without one is a turn of its own.  Turns are
cut from ``session_events`` on every read (seq, invocation id, author, time:
no payload), so nothing is recorded on the append path and an imported or
compacted session has turns too.  Turn 0 is the session as created.

* :func:`list_turns`: the index.
* :func:`turn_snapshot`: the merged state right after a turn
  (:func:`.snapshots.state_as_of`: from the nearest checkpoint, not the app's log).
* :func:`turn_diff`: what the turn's own state deltas changed, key by key and
  by scope (added / changed / removed; ADK has no delete, so a key set to
  ``None`` counts as removed), against the state before the turn.
* :func:`replay_to_sandbox`: a new session holding the events up to a turn,
  written through the session service's public ``append_event`` (redaction,
  audit, erasure and retention apply as to any session).  Into the same app
  only session keys are replayed (shared ``app:``/``user:`` state is live
  state of other sessions and must not be rolled back); into another app
  (``sandbox_app``) the shared keys are replayed too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .. import validation
from ..engine import Database
from ..errors import SessionMissingError, ValidationError
from . import queries as q
from . import signals
from ..errors import is_connection_lost
from ..gateway import raw, retrying
from .snapshots import Snapshot, _loads, _read, scope_of, state_as_of

__all__ = ["Change", "Turn", "TurnDiff", "list_turns", "replay_to_sandbox", "turn_diff", "turn_range", "turn_snapshot"]

_MISSING = object()


@dataclass(frozen=True)
class Turn:
    """One turn: its number (1-based), invocation, event range and authors."""

    number: int
    invocation_id: str | None
    first_seq: int
    last_seq: int
    event_ids: tuple[str, ...]
    started_at: float
    ended_at: float
    authors: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "turn": self.number, "invocation_id": self.invocation_id, "first_seq": self.first_seq,
            "last_seq": self.last_seq, "events": len(self.event_ids), "started_at": self.started_at,
            "ended_at": self.ended_at, "authors": list(self.authors),
        }


@dataclass(frozen=True)
class Change:
    scope: str
    key: str
    kind: str
    """``added``, ``changed`` or ``removed``."""
    before: Any = None
    after: Any = None


@dataclass(frozen=True)
class TurnDiff:
    """What one turn's own deltas changed (other sessions' writes in the meantime are not this turn's)."""

    turn: Turn
    changes: list[Change] = field(default_factory=list)

    def by_scope(self) -> dict[str, dict[str, list[str]]]:
        """``{scope: {kind: [keys]}}``."""
        out: dict[str, dict[str, list[str]]] = {}
        for c in self.changes:
            out.setdefault(c.scope, {}).setdefault(c.kind, []).append(c.key)
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "turn": self.turn.as_dict(),
            "changes": [{"scope": c.scope, "key": c.key, "kind": c.kind, "before": c.before, "after": c.after} for c in self.changes],
        }


def _db(source: Any) -> Database:
    """A session service (its ``database``) or a :class:`Database`."""
    return getattr(source, "database", source)


def _ids(app_name: str, user_id: str, session_id: str) -> tuple[str, str, str]:
    return validation.check_id("app_name", app_name), validation.check_id("user_id", user_id), validation.check_id("session_id", session_id)


def _cut(rows: list[Any]) -> list[Turn]:
    turns: list[Turn] = []
    run: list[Any] = []

    def close() -> None:
        if run:
            authors = tuple(dict.fromkeys(r.author for r in run if r.author))
            turns.append(Turn(len(turns) + 1, run[0].invocation_id or None, run[0].seq, run[-1].seq,
                              tuple(r.event_id for r in run), run[0].ts, run[-1].ts, authors))

    for r in rows:
        if run and (not r.invocation_id or r.invocation_id != run[-1].invocation_id):
            close()
            run = []
        run.append(r)
    close()
    return turns


async def list_turns(source: Any, *, app_name: str, user_id: str, session_id: str) -> list[Turn]:
    """The session's turns, oldest first (``[]``: no events yet).

    Raises:
        SessionMissingError: no such session.
    """
    app, user, sid = _ids(app_name, user_id, session_id)
    key = {"app": app, "user": user, "sid": sid}
    session, rows = await _raw_batch(_db(source), [(q.RAW_SESSION_ROW, key), (q.RAW_TURN_ROWS, key)])
    if not session:
        raise SessionMissingError(f"Session {sid} not found.")
    return _cut([_Event(*r) for r in rows])


@dataclass(frozen=True)
class _Event:
    seq: int
    event_id: str
    invocation_id: str | None
    author: str | None
    ts: float


async def _raw_batch(db: Database, statements: list[tuple[str, dict[str, Any]]]) -> list[list[tuple]]:
    async def once() -> list[list[tuple]]:
        async with raw(db) as tx:
            return [rows for _, rows in await tx.batch(statements)]

    return await retrying(once, when=is_connection_lost, what="a turn read")


async def turn_range(source: Any, *, app_name: str, user_id: str, session_id: str, turn: int) -> tuple[int, int, float]:
    """``(first_seq, last_seq, started_at)`` of turn ``turn``, cut by the server: no per-event rows read.

    Raises:
        SessionMissingError: no such session or turn.
    """
    app, user, sid = _ids(app_name, user_id, session_id)
    if not isinstance(turn, int) or isinstance(turn, bool) or turn < 1:
        raise ValidationError("turn must be a positive integer (0 is the session as created: use turn_snapshot)")
    key = {"app": app, "user": user, "sid": sid, "turn": turn}
    session, found = await _raw_batch(_db(source), [(q.RAW_SESSION_ROW, key), (q.RAW_TURN_RANGE, key)])
    if not session:
        raise SessionMissingError(f"Session {sid} not found.")
    first, last, started, count = found[0]
    if not count:
        raise SessionMissingError(f"the session has no turn {turn}")
    return int(first), int(last), float(started)


def _pick(turns: list[Turn], number: int) -> Turn:
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        raise ValidationError("turn must be a positive integer (0 is the session as created: use turn_snapshot)")
    if number > len(turns):
        raise SessionMissingError(f"the session has {len(turns)} turn(s), not {number}")
    return turns[number - 1]


async def turn_snapshot(source: Any, *, app_name: str, user_id: str, session_id: str, turn: int) -> Snapshot:
    """The merged state right after turn ``turn`` (0: the session as created)."""
    app, user, sid = _ids(app_name, user_id, session_id)
    if turn == 0:
        return await state_as_of(_db(source), app, user, sid, 0)
    _, last_seq, _ = await turn_range(source, app_name=app, user_id=user, session_id=sid, turn=turn)
    return await state_as_of(_db(source), app, user, sid, last_seq)


async def turn_diff(source: Any, *, app_name: str, user_id: str, session_id: str, turn: int) -> TurnDiff:
    """Added / changed / removed keys of turn ``turn``, by scope, against the state right before it."""
    app, user, sid = _ids(app_name, user_id, session_id)
    db = _db(source)
    with signals.timed_replay("diff"):
        chosen = _pick(await list_turns(db, app_name=app, user_id=user, session_id=sid), turn)
        # right before the turn: the session up to its previous event, shared keys up to the turn's start
        just_before = math.nextafter(chosen.started_at, -math.inf)
        before = (await state_as_of(db, app, user, sid, chosen.first_seq - 1, until=just_before)).state
        key = {"app": app, "user": user, "sid": sid, "after": chosen.first_seq - 1, "seq": chosen.last_seq}
        (rows,) = await _raw_batch(db, [(q.RAW_OWN_DELTAS, key)])
    written: dict[str, Any] = {}
    for _seq, _ts, delta in rows:
        written.update(_loads(delta))
    changes = []
    for key, after in written.items():
        old = before.get(key, _MISSING)
        if old is _MISSING:
            kind = "removed" if after is None else "added"
            if after is None:
                continue  # set to None where it never was: nothing changed
        elif after is None and old is not None:
            kind = "removed"
        elif old == after:
            continue
        else:
            kind = "changed"
        changes.append(Change(scope_of(key), key, kind, None if old is _MISSING else old, after))
    return TurnDiff(chosen, changes)


async def replay_to_sandbox(
    sessions: Any,
    *,
    app_name: str,
    user_id: str,
    session_id: str,
    turn: int,
    sandbox_session_id: str | None = None,
    sandbox_app: str | None = None,
) -> Any:
    """Creates a session holding ``session_id``'s events up to turn ``turn``; returns it (an ADK ``Session``).

    Args:
        sessions: the :class:`~adk_oceanbase.OceanBaseSessionService` to read and write through.
        sandbox_session_id: the new session's id (default ``<session_id>-turn<turn>``); it must not exist.
        sandbox_app: write into this app instead, shared ``app:``/``user:`` keys included.

    Raises:
        SessionMissingError: no such session or turn.
        SessionAlreadyExistsError: the sandbox session exists.
    """
    app, user, sid = _ids(app_name, user_id, session_id)
    target_app = validation.check_id("sandbox_app", sandbox_app) if sandbox_app is not None else app
    target_sid = validation.check_id("sandbox_session_id", sandbox_session_id or f"{sid}-turn{turn}")
    keep_shared = target_app != app
    db = _db(sessions)
    with signals.timed_replay("sandbox"):
        turns = await list_turns(db, app_name=app, user_id=user, session_id=sid)
        last_seq = _pick(turns, turn).last_seq if turn else 0
        wanted = {e for t in turns if t.last_seq <= last_seq for e in t.event_ids}
        row = await _read(db, lambda conn: _first(conn, q.session_row(app, user, sid)))
        source = await sessions.get_session(app_name=app, user_id=user, session_id=sid, include_compacted=True)
        if row is None or source is None:
            raise SessionMissingError(f"Session {sid} not found.")

        def keep(state: dict[str, Any]) -> dict[str, Any]:
            return {k: v for k, v in state.items() if keep_shared or scope_of(k) == "session"}

        sandbox = await sessions.create_session(app_name=target_app, user_id=user, session_id=target_sid, state=keep(_loads(row.initial_state)))
        for event in source.events:
            if event.id not in wanted:
                continue
            copy = event.model_copy(deep=True)
            copy.actions.state_delta = keep(dict(copy.actions.state_delta or {}))
            await sessions.append_event(sandbox, copy)
    return sandbox


async def _first(conn: Any, stmt: Any) -> Any:
    return (await conn.execute(stmt)).first()
