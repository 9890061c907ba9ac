"""Writing what :mod:`.source` read into ``OceanBaseSessionService``'s tables, one transaction per unit.

A session is one transaction: its row, every missing event and its own state
commit together or not at all.  Re-running is safe because each unit first
reads what the target already holds: events are matched by id (unique per
session), state keys by value, and only the difference is written.  Event and
state rows are built by the session codec (``codec.event_row``,
``codec.state_rows``) and written through the target's public
:class:`~adk_oceanbase.sessions.store.SessionStore` (``target.store``), and a
compaction or rewind event gets the same bookkeeping as ``append_event``
(``store.archive``), so an imported session reads back like one the service
wrote itself.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from google.adk.events.event import Event

from .. import validation
from ..sessions import codec
from ..sessions import queries as sq
from ..sessions.store import SessionStore
from . import queries as iq
from .source import SourceSession

if TYPE_CHECKING:
    from ..rawtx import RawTransaction
    from ..sessions import OceanBaseSessionService

__all__ = ["SessionOutcome", "write_session", "write_shared_state"]

# Event rows per multi-row INSERT are capped by bytes too, well under the
# servers' packet limit (seekdb and MySQL 8 default to 16 MiB or more; one event
# may be up to Config.max_event_bytes, 8 MiB by default, and then goes alone).
_MAX_BATCH_BYTES = 4 << 20
_ENCODE_INLINE = 64


@dataclass(frozen=True)
class SessionOutcome:
    status: Literal["new", "completed", "skipped"]
    events: int
    state_keys: int


async def write_shared_state(
    target: "OceanBaseSessionService", app_name: str, app_state: dict[str, Any], user_states: dict[str, dict[str, Any]], *, batch: int
) -> tuple[int, int]:
    """Upserts the app's ``app:`` and ``user:`` keys that are missing or different; returns ``(app keys, user keys)``.

    The source's values win: an import copies ADK's current state.
    """
    app = validation.check_id("app_name", app_name)
    app_state = await target.redact_state(app, app_state)
    wanted = [("", scope, key, raw) for scope, key, raw in codec.encode_state({codec.APP: app_state})]
    for user_id, state in user_states.items():
        user = validation.check_id("user_id", user_id)
        state = await target.redact_state(app, state)
        wanted += [(user, scope, key, raw) for scope, key, raw in codec.encode_state({codec.USER: state})]
    if not wanted:
        return 0, 0
    when = codec.to_datetime(time.time())
    store = target.store
    async with store.transaction() as tx:
        _, rows = await tx.run(iq.shared_state(app))
        held = {(scope, user, key): raw for scope, user, key, raw in rows}
        changed = [w for w in wanted if held.get((w[1], w[0], w[2])) != w[3]]
        state_rows = []
        for user, scope, key, raw in changed:
            state_rows += codec.state_rows([(scope, key, raw)], app=app, user=user, sid="", when=when)
        for i in range(0, len(state_rows), batch):
            await store.upsert_state(tx, state_rows[i : i + batch])
    app_keys = sum(1 for w in changed if w[1] == codec.APP)
    return app_keys, len(changed) - app_keys


async def write_session(target: "OceanBaseSessionService", src: SourceSession, *, batch: int) -> SessionOutcome:
    """Imports one session in one transaction: creates it, completes it, or finds nothing missing.

    A session the target already holds (an earlier run, or one the source
    gained events for since) gets the events it lacks appended after its own,
    in the source's order.
    """
    app = validation.check_id("app_name", src.app_name)
    user = validation.check_id("user_id", src.user_id)
    sid = validation.check_id("session_id", src.session_id)
    store = target.store
    # An import is a write like any other: a redacting app's state and events are redacted
    # (before the transaction, as append_event does) and its event rows marked redacted = 1.
    redacting = target.redacts(app)
    events = src.events
    if redacting:
        events = [await target.redact_event(app, e) for e in src.events]
    own_state = codec.encode_state({codec.SESSION: await target.redact_state(app, src.state)})
    when = codec.to_datetime(src.last_update_time)
    async with store.transaction() as tx:
        _, head = await tx.run(sq.lock_session(app, user, sid))
        held_ids: set[str] = set()
        held_state: dict[str, str] = {}
        if head:
            held_ids = {r[0] for r in (await tx.run(iq.event_ids(app, user, sid)))[1]}
            held_state = dict((await tx.run(iq.session_state(app, user, sid)))[1])
        missing = [e for e in events if e.id not in held_ids]
        changed_state = [row for row in own_state if held_state.get(row[1]) != row[2]]
        if head and not missing and not changed_state:
            return SessionOutcome("skipped", 0, 0)

        encoded = await _encode(store, missing)
        tokens = sum(t for _, _, t in encoded)
        if head:
            last_seq, last_update_time = head[0]
        else:
            last_seq, last_update_time = 0, src.last_update_time
            await tx.run(
                iq.insert_session(
                    {
                        "app_name": app,
                        "user_id": user,
                        "session_id": sid,
                        "last_seq": len(encoded),
                        "event_count": len(encoded),
                        "total_tokens": tokens,
                        "last_update_time": src.last_update_time,
                        "created_at": src.create_time,
                        "updated_at": when,
                        "initial_state": _initial_state(own_state, events),
                    }
                )
            )
        await _insert_events(store, tx, app, user, sid, last_seq + 1, encoded, batch, redacting)
        if changed_state:
            await store.upsert_state(tx, codec.state_rows(changed_state, app=app, user=user, sid=sid, when=when))
        if head and encoded:
            newest = max(last_update_time, src.last_update_time)
            await tx.run(
                iq.advance_session(
                    app, user, sid, last_seq=last_seq + len(encoded), added=len(encoded), tokens=tokens,
                    last_update_time=newest, updated_at=codec.to_datetime(newest),
                )
            )
    return SessionOutcome("completed" if head else "new", len(encoded), len(changed_state))


def _initial_state(own_state: list[tuple[str, str, str]], events: list[Event]) -> str | None:
    """The creation state replay starts from, as far as ADK's tables still tell it.

    ADK keeps no creation state: a session key no event ever wrote can only
    have come from ``create_session``, so those keys form the baseline (and a
    replay of the whole log equals the imported state).  Creation values of
    keys later overwritten, and ``app:``/``user:`` keys set at creation, are
    not recoverable.
    """
    written = {k for e in events if e.actions and e.actions.state_delta for k in e.actions.state_delta}
    return codec.state_document([row for row in own_state if row[1] not in written])


async def _encode(store: SessionStore, events: list[Event]) -> list[tuple[Event, str, int]]:
    """``(stored event, JSON, tokens)`` exactly as ``append_event`` stores them (``temp:`` keys dropped)."""

    def encode() -> list[tuple[Event, str, int]]:
        out = []
        for event in events:
            stored = codec.without_temp(event)
            out.append((stored, *store.encode_event(stored)))
        return out

    return encode() if len(events) <= _ENCODE_INLINE else await asyncio.to_thread(encode)


async def _insert_events(
    store: SessionStore,
    tx: "RawTransaction",
    app: str,
    user: str,
    sid: str,
    seq: int,
    encoded: list[tuple[Event, str, int]],
    batch: int,
    redacted: bool = False,
) -> None:
    """Multi-row inserts in ``seq`` order; a compaction or rewind event flushes and archives like an append."""
    chunk: list[dict[str, Any]] = []
    size = 0

    async def flush() -> None:
        nonlocal chunk, size
        await store.insert_events(tx, chunk)
        chunk, size = [], 0

    for event, payload, tokens in encoded:
        row = codec.event_row(event, app=app, user=user, sid=sid, payload=payload, tokens=tokens, redacted=redacted)
        chunk.append({**row, "seq": seq})
        size += len(payload)
        actions = event.actions
        if actions is not None and (actions.compaction is not None or actions.rewind_before_invocation_id):
            await flush()
            await store.archive(tx, app, user, sid, seq, event, payload)
        elif len(chunk) >= batch or size >= _MAX_BATCH_BYTES:
            await flush()
        seq += 1
    await flush()
