"""``OceanBaseSessionService``: ADK's ``BaseSessionService`` on OceanBase, seekdb and MySQL.

Each method is one transaction; SQL comes from :mod:`.queries`, conversions
from :mod:`.codec`.  ``append_event`` is a compare-and-set on the session's
``last_seq``: the session update, the event insert and every state scope
commit together or not at all, and a writer holding an older copy gets
``StaleSessionError`` instead of silently interleaving.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any, Optional

from google.adk.events.event import Event
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig, ListSessionsResponse
from google.adk.sessions.session import Session
import pymysql
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from .._lifecycle import DatabaseService, adk_uri
from ..audit import RAW_INSERT_AUDIT, RAW_INSERT_AUDIT_IF_WRITTEN, AuditSettings, Auditor, audited, by_appended_event, by_ids, current_entry
from ..rawtx import COMMIT, RawTransaction
from ..config import Config
from ..engine import Database
from ..errors import (
    ConnectionLostError,
    DeadlockError,
    DuplicateKeyError,
    EventTooLargeError,
    PacketTooLargeError,
    SessionAlreadyExistsError,
    SessionMissingError,
    StaleSessionConflictError,
    StateTooLargeError,
    ValidationError,
    is_duplicate_key,
)
from ..compaction import coverage
from ..governance import debug_archive as dbg
from ..governance import erasure
from ..governance import queries as gq
from ..redaction import RedactionPolicy, redact_event, redact_value
from ..tokens import EstimatingTokenCounter, TokenCounter
from ..telemetry import traced
from .. import validation
from . import codec
from . import queries as q

__all__ = ["OceanBaseSessionService", "SessionPage"]

logger = logging.getLogger(__name__)

_MARKER = "ob:"
_STALE = (
    "The session has been modified in storage since it was loaded. "
    "Reload it with get_session() before appending more events."
)


@dataclass(frozen=True)
class SessionPage:
    """One page of :meth:`OceanBaseSessionService.list_sessions_page`."""

    sessions: list[Session]
    next_cursor: str | None
    """Opaque cursor for the next page; ``None`` on the last page."""


class OceanBaseSessionService(DatabaseService, BaseSessionService):
    """ADK session service storing sessions, events and state in OceanBase/seekdb/MySQL.

    Args:
        url: ``seekdb:///dir``, ``oceanbase://user:pw@host:port/db`` or
            ``mysql+aiomysql://...``; default ``ADK_OCEANBASE_URL`` or the embedded home.
        config: a ready :class:`Config` instead of a URL.
        database: a shared :class:`Database` (e.g. the memory service's); not closed by us.
        engine: a ready aiomysql ``AsyncEngine``; not disposed by us.
        token_counter: counts each event's tokens for ``token_count``.
        auto_setup: create the tables on first use when the database has none
            (like ADK's own services). An existing but outdated schema is never
            altered implicitly: that raises ``SchemaOutdatedError``.
        compaction_overlap: invocations a compaction leaves loaded for ADK's
            sliding-window overlap; set it to your ``EventsCompactionConfig.overlap_size``
            (they are archived by the next compaction).
        compaction_policy: default policy of :meth:`compact_session`
            (``adk_oceanbase.compaction.TokenThresholdPolicy()`` when unset).
        compaction_summarizer: default ADK ``BaseEventsSummarizer`` of
            :meth:`compact_session` (offline ``ExtractiveSummarizer`` when unset;
            ``compaction.llm_summarizer(model)`` for model-written summaries).
        debug_archive: keep the ``temp:`` state and tool scratch values ADK
            discards, per session in a bounded FIFO (:meth:`debug_entries`,
            :meth:`export_debug_jsonl`); off when ``None`` (the default).
        redaction: a :class:`~adk_oceanbase.redaction.RedactionPolicy`; for the
            apps it covers, state (keys and values) and every appended event
            (all of it but ids, names and other structural fields, see
            :mod:`adk_oceanbase.redaction.walk`; the debug archive's ``temp:``
            entries too) are redacted before the transaction starts, the stored rows carry
            ``redacted = 1``, and the caller's session receives the redacted
            event: what is stored is what the agent sees next. Unset: off.
        audit: :class:`~adk_oceanbase.audit.AuditSettings` to write ``audit_log``
            rows (writes in their own transaction, reads sampled). Unset: off.
        uri: ``url`` by the name ADK's ``services.yaml`` route passes it
            (``cls(uri=..., agents_dir=...)``); give one of the two.
        agents_dir: passed by ADK's ``services.yaml`` route; not used.

    Example:
        >>> import asyncio
        >>> from adk_oceanbase import OceanBaseSessionService
        >>> async def main():
        ...     async with OceanBaseSessionService("seekdb:///tmp/adk-doc") as svc:
        ...         s = await svc.create_session(app_name="app", user_id="u1", state={"user:lang": "en"})
        ...         return (await svc.get_session(app_name="app", user_id="u1", session_id=s.id)).state
        >>> asyncio.run(main())  # doctest: +SKIP
        {'user:lang': 'en'}
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        config: Config | None = None,
        database: Database | None = None,
        engine: AsyncEngine | None = None,
        token_counter: TokenCounter | None = None,
        auto_setup: bool = True,
        compaction_overlap: int = 1,
        compaction_policy: Any = None,
        compaction_summarizer: Any = None,
        debug_archive: dbg.DebugArchiveSettings | None = None,
        redaction: RedactionPolicy | None = None,
        audit: AuditSettings | None = None,
        uri: str | None = None,
        agents_dir: str | None = None,
    ):
        self._bind_database(adk_uri(url, uri), config, database, engine, auto_setup)
        self._counter = token_counter or EstimatingTokenCounter()
        self._overlap = max(0, int(compaction_overlap))
        self._compaction_policy = compaction_policy
        self._compaction_summarizer = compaction_summarizer
        self._debug_archive = debug_archive
        self._redaction = redaction
        self._auditor = Auditor(audit)

    # ---------------------------------------------------------------- lifecycle
    async def close(self) -> None:
        """Releases the engine and embedded seekdb if this service created them."""
        await self._release()

    async def __aenter__(self) -> "OceanBaseSessionService":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---------------------------------------------------------------- helpers
    @staticmethod
    def _ids(app_name: Any, user_id: Any, session_id: Any = None) -> tuple[str, str, str | None]:
        app = validation.check_id("app_name", app_name)
        user = validation.check_id("user_id", user_id)
        sid = None
        if session_id is not None:
            sid = validation.check_id("session_id", session_id)
        return app, user, sid

    @staticmethod
    def _state_rows(app: str, user: str, sid: str, encoded: list[tuple[str, str, str]], when: Any) -> list[dict]:
        rows = []
        for scope, key, raw in encoded:
            rows.append(
                {
                    "app_name": app,
                    "scope": scope,
                    "user_id": "" if scope == codec.APP else user,
                    "session_id": sid if scope == codec.SESSION else "",
                    "state_key": key,
                    "value_json": raw,
                    "updated_at": when,
                }
            )
        return rows

    @staticmethod
    def _mark(session: Session, seq: int) -> None:
        session._storage_update_marker = f"{_MARKER}{seq}"

    def _redacts(self, app: str) -> bool:
        return self._redaction is not None and self._redaction.active_for(app)

    # ---------------------------------------------------------------- redaction (also used by import-adk)
    def redacts(self, app_name: str) -> bool:
        """Whether the redaction policy covers ``app_name``: its rows are redacted and stored with ``redacted = 1``."""
        return self._redacts(app_name)

    async def redact_state(self, app_name: str, state: dict[str, Any]) -> dict[str, Any]:
        """``state`` as this service would store it for ``app_name``: keys and values redacted (as is when off)."""
        redactor = self._redaction.redactor_for(app_name) if self._redaction is not None else None
        if redactor is None or not state:
            return state
        return await redact_value(redactor, state)

    async def redact_event(self, app_name: str, event: Event) -> Event:
        """``event`` as this service would store it for ``app_name`` (see :mod:`adk_oceanbase.redaction.walk`)."""
        redactor = self._redaction.redactor_for(app_name) if self._redaction is not None else None
        if redactor is None:
            return event
        return await redact_event(redactor, event, keep_binary=self._redaction.keep_binary)

    # ---------------------------------------------------------------- ADK API
    @traced
    @audited(by_ids("create_session"))
    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: Optional[dict[str, Any]] = None,
        session_id: Optional[str] = None,
    ) -> Session:
        app, user, sid = self._ids(app_name, user_id, session_id)
        sid = sid or str(uuid.uuid4())
        state = await self.redact_state(app, state) if state else state
        encoded = codec.encode_state(codec.split_state(state))
        document = codec.state_document(encoded)
        codec.check_state_size(document, self.config.max_event_bytes)
        await self._engine()  # first use sets the schema up (seconds): the time is taken after it, at the write
        now = time.time()
        when = codec.to_datetime(now)
        row = {"app": app, "user": user, "sid": sid, "ts": now, "when": when, "initial_state": document}
        # One round trip: the session row, its state, the merged state read back, COMMIT.
        # A duplicate id fails the first statement; the server runs none after it.
        statements = [(q.RAW_INSERT_SESSION, row)]
        if encoded:
            statements.append((q.RAW_UPSERT_STATE, self._state_rows(app, user, sid, encoded, when)))
        select_at = len(statements)
        statements.append((q.RAW_SELECT_STATE_ROWS, {"app": app, "user": user, "sid": sid}))
        if (audit := current_entry()) is not None:
            audit.session_id, audit.row_count = sid, 1
            statements.append((RAW_INSERT_AUDIT, audit.row()))  # same packet: see adk_oceanbase.audit
        statements.append((COMMIT, None))
        try:
            try:
                async with self._raw_tx() as tx:
                    state_rows = (await tx.batch(statements))[select_at][1]
            except ConnectionLostError:
                # The first run may have committed: a row with our creation time is ours.
                if await self._read(lambda conn: _created_at(conn, app, user, sid)) == when:
                    logger.info("create_session committed before the connection was lost")
                    return await self.get_session(app_name=app, user_id=user, session_id=sid)
                async with self._raw_tx() as tx:
                    state_rows = (await tx.batch(statements))[select_at][1]
        except DuplicateKeyError as exc:
            raise SessionAlreadyExistsError(f"Session with id {sid} already exists.") from exc
        except PacketTooLargeError as exc:
            raise StateTooLargeError(f"the state of session {sid} is too large to write: {exc}") from exc
        session = Session(
            id=sid, app_name=app, user_id=user, state=codec.merge_state(state_rows), last_update_time=now
        )
        self._mark(session, 0)
        return session

    @traced
    @audited(by_ids("get_session"), read=True, count=lambda s: len(s.events) if s else 0)
    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: Optional[GetSessionConfig] = None,
        include_compacted: bool = False,
    ) -> Optional[Session]:
        """ADK's ``get_session``, without the raw events a loaded compaction summary covers.

        ADK's prompt assembly hides those events anyway, so the Runner builds
        the same request from this load as from the full history (see
        :mod:`adk_oceanbase.compaction.coverage`). ``num_recent_events`` and
        ``after_timestamp`` select the same window as a full load; archived
        rows are then dropped from it. ``include_compacted=True`` returns
        every stored event (audit, replay).
        """
        app, user, sid = self._ids(app_name, user_id, session_id)
        num = config.num_recent_events if config else None
        after = config.after_timestamp if config and config.after_timestamp else None
        key = {"app": app, "user": user, "sid": sid}

        async def load(conn: AsyncConnection) -> tuple[Any, list, list] | None:
            head = (await conn.execute(q.SELECT_SESSION, key)).first()
            if head is None:
                return None
            if num != 0 and include_compacted:
                stmt = q.select_events(app, user, sid, num_recent=num, after_ts=after)
                rows = (await conn.execute(stmt)).all()
                if num is not None:
                    rows.reverse()
            elif num != 0:
                floor = None
                if num is not None:
                    floor = (await conn.execute(q.window_start_seq(app, user, sid, num_recent=num, after_ts=after))).scalar()
                rows = (await conn.execute(q.select_live_events(app, user, sid, after_ts=after, min_seq=floor))).all()
            else:
                rows = []
            return head, rows, (await conn.execute(q.SELECT_STATE_ROWS, key)).all()

        if after is None and not include_compacted and (num is None or num > 0):
            loaded = await self._load_default(key, num)
        else:
            loaded = await self._read(load)
        if loaded is None:
            return None
        (last_seq, last_update_time), rows, state_rows = loaded
        events = await _decode_events([r[1] for r in rows])
        session = Session(
            id=sid,
            app_name=app,
            user_id=user,
            state=codec.merge_state(state_rows),
            events=events,
            last_update_time=last_update_time,
        )
        self._mark(session, last_seq)
        return session

    async def _load_default(self, key: dict[str, str], num: int | None) -> tuple[Any, list, list] | None:
        """``get_session``'s common loads (no ``after_timestamp``, archived rows skipped) in one round trip.

        Session head, events, state and a COMMIT ending the read go in one
        packet on the driver connection, and rows come back as plain tuples:
        5,000 event rows cost 18 ms of CPU this way, 65 ms as SQLAlchemy rows
        (measured, issue #11).  Re-run once on a fresh connection if the pooled
        one was dropped by the server, like :meth:`_read`.
        """
        if num is None:
            events = (q.RAW_SELECT_LIVE_EVENTS, key)
        else:
            events = (q.RAW_SELECT_LIVE_EVENTS_IN_WINDOW, {**key, "skip": num - 1})
        statements = [(q.RAW_SELECT_SESSION_HEAD, key), events, (q.RAW_SELECT_STATE_ROWS, key), (COMMIT, None)]
        # The driver builds a tuple and a string per event row; with the cyclic collector running,
        # a 5,000-row read took 238 ms instead of 52 (a process holding many objects, as the
        # benchmark does: each collection walks them all).  Paused for the read only, like the decode.
        with codec.gc_paused():
            try:
                async with self._raw_tx() as tx:
                    results = await tx.batch(statements)
            except ConnectionLostError:
                logger.info("a pooled connection was dropped by the server; re-running the read")
                async with self._raw_tx() as tx:
                    results = await tx.batch(statements)
        head = results[0][1]
        return (head[0], results[1][1], results[2][1]) if head else None

    @traced
    @audited(by_ids("list_sessions"), read=True, count=lambda r: len(r.sessions))
    async def list_sessions(self, *, app_name: str, user_id: Optional[str] = None) -> ListSessionsResponse:
        app = validation.check_id("app_name", app_name)
        user = validation.check_id("user_id", user_id) if user_id is not None else None

        async def load(conn: AsyncConnection) -> tuple[list, list]:
            rows = (await conn.execute(q.select_sessions(app, user))).all()
            return rows, (await conn.execute(q.select_state_for_list(app, user))).all()

        rows, state_rows = await self._read(load)
        return ListSessionsResponse(sessions=self._sessions_with_state(app, rows, state_rows))

    @traced
    @audited(by_ids("list_sessions"), read=True, count=lambda p: len(p.sessions))
    async def list_sessions_page(
        self,
        *,
        app_name: str,
        user_id: Optional[str] = None,
        limit: int = 50,
        cursor: Optional[str] = None,
        newest_first: bool = True,
    ) -> SessionPage:
        """One page of sessions (no events), newest first by default, with an opaque cursor.

        Keyset pagination: each page costs O(limit) whatever its depth, unlike
        ADK's unbounded ``list_sessions`` (ADK issues #4621/#4871).
        """
        app = validation.check_id("app_name", app_name)
        user = validation.check_id("user_id", user_id) if user_id is not None else None
        if not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise ValidationError("limit must be an integer between 1 and 1000")
        after = _decode_cursor(cursor) if cursor else None

        async def load(conn: AsyncConnection) -> tuple[list, list]:
            stmt = q.select_sessions_page(app, user, limit=limit + 1, after=after, newest_first=newest_first)
            rows = (await conn.execute(stmt)).all()
            sids = [r.session_id for r in rows[:limit]]
            return rows, (await conn.execute(q.select_state_for_list(app, user, sids))).all() if rows else []

        rows, state_rows = await self._read(load)
        more = len(rows) > limit
        rows = rows[:limit]
        sessions = self._sessions_with_state(app, rows, state_rows)
        next_cursor = None
        if more and rows:
            last = rows[-1]
            next_cursor = _encode_cursor((last.last_update_time, last.user_id, last.session_id))
        return SessionPage(sessions=sessions, next_cursor=next_cursor)

    def _sessions_with_state(self, app: str, rows: list, state_rows: list) -> list[Session]:
        app_rows: list[tuple[str, str, str]] = []
        user_rows: dict[str, list[tuple[str, str, str]]] = {}
        sess_rows: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
        for r in state_rows:
            item = (r.scope, r.state_key, r.value_json)
            if r.scope == codec.APP:
                app_rows.append(item)
            elif r.scope == codec.USER:
                user_rows.setdefault(r.user_id, []).append(item)
            else:
                sess_rows.setdefault((r.user_id, r.session_id), []).append(item)
        sessions = []
        for r in rows:
            merged = codec.merge_state(
                sess_rows.get((r.user_id, r.session_id), []) + app_rows + user_rows.get(r.user_id, [])
            )
            s = Session(id=r.session_id, app_name=app, user_id=r.user_id, state=merged, last_update_time=r.last_update_time)
            self._mark(s, r.last_seq)
            sessions.append(s)
        return sessions

    @traced
    @audited(by_ids("delete_session"))
    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Deletes the session with its events and session-scoped state in one transaction.

        The session row goes first: its lock is the one every writer of a
        session takes first (the append's compare-and-set, the create's
        insert), so a delete waits for an append in flight and then deletes
        what it committed (READ COMMITTED: each statement sees the latest
        commits), and an append after it finds no session.  Deleting events
        first left an in-flight append's rows behind, or locked the two in a
        cycle until the lock wait timed out.  Events and state go only with
        the row: a delete of a missing session must not take the state of a
        create of the same id committing meanwhile.
        """
        app, user, sid = self._ids(app_name, user_id, session_id)

        async def delete(conn: AsyncConnection) -> None:
            events = 0
            if (await conn.execute(q.delete_session(app, user, sid))).rowcount:
                events = (await conn.execute(q.delete_events(app, user, sid))).rowcount
                await conn.execute(q.delete_session_state(app, user, sid))
                await conn.execute(gq.delete_debug_session(app, user, sid))
            if (audit := current_entry()) is not None:
                audit.row_count = events
                await conn.execute(audit.insert())

        await self._rerunnable_tx(delete)  # deleting twice is deleting once

    async def stats(self, *, app_name: Optional[str] = None) -> list[dict[str, Any]]:
        """Per app (or one app): ``sessions``, ``users``, ``events``, ``tokens``; what ``adk-oceanbase stats`` prints.

        Read from the session rows' counters, so it costs one grouped scan of
        ``agent_sessions``, never of the events.
        """
        app = validation.check_id("app_name", app_name) if app_name is not None else None

        async def load(conn: AsyncConnection) -> list:
            return (await conn.execute(q.session_stats(app))).all()

        rows = await self._read(load)
        return [{k: (v if k == "app_name" else int(v)) for k, v in r._mapping.items()} for r in rows]

    @traced
    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        app, user, _ = self._ids(app_name, user_id)

        async def load(conn: AsyncConnection) -> list:
            return (await conn.execute(q.select_user_state(app, user))).all()

        rows = await self._read(load)
        return {r.state_key: codec.decode_value(r.value_json) for r in rows}

    @traced
    @audited(by_appended_event)
    async def append_event(self, session: Session, event: Event) -> Event:
        """Persists ``event`` and its state delta atomically, then applies it to ``session``.

        With a redaction policy active for the app, the event is redacted
        before the transaction (a redactor failure writes nothing) and the
        redacted copy is what is stored, appended to ``session`` and returned.

        Raises:
            StaleSessionConflictError: (an ADK ``StaleSessionError``) when
                ``session`` is older than storage; nothing is written.
            SessionMissingError: (an ADK ``SessionNotFoundError``) when the
                session does not exist.
            ValidationError: bad ids, non-JSON state, oversized event; nothing
                is written and ``session`` is untouched.
        """
        if event.partial:
            return event
        app, user, sid = self._ids(session.app_name, session.user_id, session.id)
        # Everything that can fail on input is computed before the transaction,
        # on a copy: neither the database nor the caller's objects change on error.
        # Redacted once, temp: keys included: the debug archive keeps the temp: values storage drops.
        redacting = self._redacts(app)
        debug_source = await self.redact_event(app, event) if redacting else event
        changed = debug_source is not event
        delta = dict(debug_source.actions.state_delta) if debug_source.actions and debug_source.actions.state_delta else {}
        persisted = {k: v for k, v in delta.items() if not k.startswith("temp:")}
        stored_event = debug_source
        if len(persisted) != len(delta):
            actions = debug_source.actions.model_copy(update={"state_delta": persisted})
            stored_event = debug_source.model_copy(update={"actions": actions})
        encoded_state = codec.encode_state(codec.split_state(persisted))
        payload, tokens = codec.encode_event(stored_event, counter=self._counter, max_bytes=self.config.max_event_bytes)
        when = codec.to_datetime(event.timestamp)
        marker = session._storage_update_marker
        expected = int(marker[len(_MARKER):]) if marker and marker.startswith(_MARKER) else None

        row = self._event_row(app, user, sid, stored_event, payload, tokens, when, redacting)
        state_rows = self._state_rows(app, user, sid, encoded_state, when) if encoded_state else None
        try:
            seq = await self._store_event(session, expected, row, state_rows, stored_event, payload, rerun=False, debug_source=debug_source)
        except (ConnectionLostError, DeadlockError):
            # A deadlock victim was rolled back; after a lost connection the
            # first run may have committed.  One more run is safe either way:
            # it looks for the event's id first, and the compare-and-set does the rest.
            logger.info("append_event of %s re-run after a deadlock or a lost connection", event.id)
            seq = await self._store_event(session, expected, row, state_rows, stored_event, payload, rerun=True, debug_source=debug_source)
        except PacketTooLargeError as exc:
            # The event JSON carries the state delta, which goes again as state rows, both escaped.
            raise EventTooLargeError(f"event {event.id} with its state delta is too large to write: {exc}") from exc
        if seq is None:
            return event  # same event delivered twice: the first copy stands

        # Committed: now mirror ADK's in-memory bookkeeping on the caller's session.
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        if changed:
            event = stored_event  # the caller's session holds what storage holds
        self._commit_event_to_session(session, event)
        session.last_update_time = event.timestamp
        self._mark(session, seq)
        return event

    async def _store_event(
        self,
        session: Session,
        expected: int | None,
        row: dict,
        state_rows: list[dict] | None,
        event: Event,
        payload: str,
        *,
        rerun: bool,
        debug_source: Event | None = None,
    ) -> int | None:
        """The append transaction; returns the event's new ``seq``, or ``None`` for a redelivered event.

        ``rerun`` after an attempt whose outcome is unknown: an event id
        already stored where that attempt put it means it committed (with
        its audit row, which rode in the same packet).  ``debug_source`` is
        the event as given (``temp:`` keys included) for the debug archive.
        """
        app, user, sid, event_id = row["app"], row["user"], row["sid"], row["event_id"]
        compacting = event.actions is not None and event.actions.compaction is not None
        async with self._raw_tx() as tx:
            if rerun:
                found = await self._stored_seq(tx, app, user, sid, event_id)
                if found is not None:
                    return found if expected is None or found == expected + 1 else None
            seq = await self._check_markerless(tx, app, user, sid, session) if expected is None else expected
            params = {"app": app, "user": user, "sid": sid, "ts": row["ts"], "when": row["event_time"],
                      "tokens": row["token_count"], "expected_seq": seq}
            # Compare-and-set, then the event row, the audit row and the state,
            # each written only if the statement before it wrote its row (SQL
            # ROW_COUNT()), so a missed CAS writes nothing.  That lets a plain
            # append COMMIT in the same packet: one round trip in all.  Work
            # that needs the new seq first (compaction, rewind, debug archive)
            # commits after it, as before.
            statements = [(q.RAW_BUMP_SESSION_CAS, params), (q.RAW_INSERT_EVENT_IF_BUMPED, {**row, "seq": seq + 1})]
            audit = current_entry()
            if audit is not None and not compacting:
                audit.row_count = 1
                statements.append((RAW_INSERT_AUDIT_IF_WRITTEN, audit.row()))  # same packet: see adk_oceanbase.audit
            if state_rows:
                statements.append((q.raw_upsert_state_if_written(len(state_rows)), q.numbered_state_params(state_rows)))
            follow_up = compacting or bool(event.actions is not None and event.actions.rewind_before_invocation_id) or (
                self._debug_archive is not None and debug_source is not None
            )
            if not follow_up:
                statements.append((COMMIT, None))
            try:
                matched = (await tx.batch(statements))[0][0] == 1
            except pymysql.err.IntegrityError as exc:
                if not is_duplicate_key(exc):
                    raise
                # seq taken (a concurrent writer) or event id taken (a redelivery):
                # the server stopped there, before any COMMIT.
                matched = False
            if not matched:
                # Nothing of this append was written (or it is rolled back here).
                await tx.rollback()
                if audit is not None:
                    audit.rolled_back()
                if await self._stored_seq(tx, app, user, sid, event_id) is not None:
                    return None
                raise StaleSessionConflictError(_STALE)
            archived = await self._archive_for(tx, app, user, sid, seq + 1, event, payload)
            if self._debug_archive is not None and debug_source is not None:
                await dbg.archive_event(tx, self._debug_archive, app, user, sid, seq + 1, debug_source, row["event_time"])
            if audit is not None and compacting:
                # a compaction's row waits for its archive count and rides with the COMMIT
                audit.row_count = 1 + archived
                await tx.batch([(RAW_INSERT_AUDIT, audit.row()), (COMMIT, None)])
        return seq + 1

    async def _archive_for(
        self, tx: RawTransaction, app: str, user: str, sid: str, seq: int, event: Event, payload: str
    ) -> int:
        """Compaction bookkeeping inside the append transaction (no-op for ordinary events); returns rows archived.

        A compaction event archives the rows it covers (``compacted_by``); a
        rewind restores rows whose covering compaction it annuls. Both commit
        with the event itself, so a load never sees one without the other.
        """
        actions = event.actions
        if actions is None:
            return 0
        if actions.rewind_before_invocation_id:
            _, found = await tx.run(q.first_seq_of_invocation(app, user, sid, actions.rewind_before_invocation_id))
            first = found[0][0] if found else None
            if first is not None:
                await tx.run(q.unarchive_from(app, user, sid, min_seq=first))
        if actions.compaction is None:
            return 0
        _, rows = await tx.run(q.select_unarchived_rows(app, user, sid, below_seq=seq))
        stored = [coverage.StoredRow(row_seq, json.loads(event_json)) for row_seq, event_json in rows]
        seqs = coverage.rows_to_archive(stored, compaction=json.loads(payload), overlap=self._overlap)
        ranges = coverage.seq_ranges(seqs)
        for i in range(0, len(ranges), 200):
            await tx.run(q.archive_seq_ranges(app, user, sid, ranges[i : i + 200], by_seq=seq))
        if seqs:
            logger.debug("compaction seq %d archived %d event(s) of session %s", seq, len(seqs), sid)
        return len(seqs)

    # ---------------------------------------------------------------- governance
    @traced
    @audited(by_ids("delete_user"))
    async def delete_user_data(self, *, app_name: str, user_id: str) -> dict[str, int]:
        """Erases the user from every table in one transaction; returns rows deleted per table.

        Sessions, events (archived too), session and user state, memories,
        memory opt-out, debug archive: see :func:`adk_oceanbase.governance.delete_user_data`.
        """
        await self._engine()
        return await erasure.delete_user_data(self._db, app_name, user_id)

    async def debug_entries(
        self, *, app_name: str, user_id: str, session_id: str, tool: str | None = None, limit: int | None = None
    ) -> list[dbg.DebugEntry]:
        """The session's debug archive, oldest first; ``tool`` keeps what that tool wrote, ``limit`` the newest n."""
        app, user, sid = self._ids(app_name, user_id, session_id)
        if limit is not None and (not isinstance(limit, int) or limit < 1):
            raise ValidationError("limit must be a positive integer or None")

        async def read(conn: AsyncConnection) -> list:
            return (await conn.execute(gq.select_debug_entries(app, user, sid, tool=tool, limit=limit))).all()

        return [dbg.to_entry(r) for r in await self._read(read)]

    async def export_debug_jsonl(
        self, *, app_name: str, user_id: str, session_id: str, tool: str | None = None, path: str | None = None
    ) -> str:
        """The session's debug archive as JSON lines (one entry per line); also written to ``path`` when given."""
        text = dbg.to_jsonl(await self.debug_entries(app_name=app_name, user_id=user_id, session_id=session_id, tool=tool))
        if path is not None:
            await asyncio.to_thread(_write_text, path, text)
        return text

    @traced
    async def compact_session(
        self, *, app_name: str, user_id: str, session_id: str, policy: Any = None, summarizer: Any = None
    ) -> Any:
        """Compacts one session by the service's policy, off the request path (see ``compaction.compact_session``)."""
        from ..compaction.compactor import compact_session
        from ..compaction.policy import TokenThresholdPolicy

        return await compact_session(
            self,
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            policy=policy or self._compaction_policy or TokenThresholdPolicy(),
            summarizer=summarizer or self._compaction_summarizer,
        )

    async def _stored_seq(self, tx: RawTransaction, app: str, user: str, sid: str, event_id: str) -> int | None:
        """Where the session holds ``event_id`` (``None``: not stored); raises when the session is gone."""
        _, head = await tx.run(q.select_session(app, user, sid))
        if not head:
            raise SessionMissingError(f"Session {sid} not found.")
        _, found = await tx.run(q.event_exists(app, user, sid, event_id))
        return found[0][0] if found else None

    async def _check_markerless(self, tx: RawTransaction, app: str, user: str, sid: str, session: Session) -> int:
        """Stale check for sessions we did not load (built by hand or by another service)."""
        _, head = await tx.run(q.lock_session(app, user, sid))
        if not head:
            raise SessionMissingError(f"Session {sid} not found.")
        last_seq, last_update_time = head[0]
        if last_update_time > session.last_update_time:
            _, latest = await tx.run(q.latest_event_id(app, user, sid))
            mine = session.events[-1].id if session.events else None
            if (latest[0][0] if latest else None) != mine:
                raise StaleSessionConflictError(_STALE)
        return last_seq

    @staticmethod
    def _event_row(
        app: str, user: str, sid: str, event: Event, payload: str, tokens: int, when: Any, redacted: bool = False
    ) -> dict:
        """The event's row, all but its ``seq`` (known inside the transaction)."""
        return {
            "app": app,
            "user": user,
            "sid": sid,
            "event_id": event.id,
            "invocation_id": event.invocation_id or None,
            "author": (event.author or "")[:256] or None,
            "branch": (event.branch or "")[:512] or None,
            "event_type": codec.event_type(event),
            "ts": event.timestamp,
            "event_time": when,
            "token_count": tokens,
            "is_final": 1 if event.is_final_response() else 0,
            "event_json": payload,
            "redacted": 1 if redacted else 0,
        }


_DECODE_INLINE = 64


async def _created_at(conn: AsyncConnection, app: str, user: str, sid: str) -> Any:
    """The session's creation time (``None``: no such session); tells a create whether a row is its own."""
    return (await conn.execute(q.select_created_at(app, user, sid))).scalar()


async def _decode_events(payloads: list[str]) -> list[Event]:
    """Parses stored events; big loads go to a worker thread so the event loop stays responsive.

    Pydantic validation of ~5,000 events takes hundreds of milliseconds: on the
    loop that would stall every other request of the process.
    """
    if len(payloads) <= _DECODE_INLINE:
        return [codec.decode_event(p) for p in payloads]
    return await asyncio.to_thread(codec.decode_events, payloads)


def _write_text(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _encode_cursor(key: tuple[float, str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode()


def _decode_cursor(cursor: str) -> tuple[float, str, str]:
    try:
        ts, user, sid = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        return float(ts), str(user), str(sid)
    except Exception as exc:  # any malformed cursor is the caller's error, not ours
        raise ValidationError("malformed cursor: pass back next_cursor exactly as returned") from exc
