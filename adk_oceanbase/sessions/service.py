"""``OceanBaseSessionService``: ADK's ``BaseSessionService`` on OceanBase, seekdb and MySQL.

Each method is one transaction; SQL comes from :mod:`.queries`, rows and
conversions from :mod:`.codec`, the reads of ``get_session`` from
:mod:`.loads`, the write transactions from :mod:`.writes`; erasure, the
debug archive, statistics and compaction from :mod:`.operations`.
``append_event`` is a compare-and-set on the session's ``last_seq``: the
session update, the event insert and every state scope commit together or
not at all, and a writer holding an older copy gets ``StaleSessionError``
instead of silently interleaving.  What compaction and the importer use lies
below, in :mod:`.store` (``service.store``).
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any, Optional

from google.adk.events.event import Event
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig, ListSessionsResponse
from google.adk.sessions.session import Session
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from .._lifecycle import adk_uri
from ..audit import AuditSettings, Auditor, audited, by_appended_event, by_ids, current_entry
from ..config import Config
from ..engine import Database
from ..errors import (
    ConnectionLostError,
    DeadlockError,
    EventTooLargeError,
    PacketTooLargeError,
    ValidationError,
)
from ..governance import debug_archive as dbg
from ..governance import queries as gq
from ..redaction import RedactionPolicy, redact_event, redact_value
from ..tokens import EstimatingTokenCounter, TokenCounter
from ..telemetry import traced
from .. import validation
from . import codec, loads, writes
from . import queries as q
from . import store as st
from .operations import SessionOperations

__all__ = ["OceanBaseSessionService", "SessionPage"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SessionPage:
    """One page of :meth:`OceanBaseSessionService.list_sessions_page`."""

    sessions: list[Session]
    next_cursor: str | None
    """Opaque cursor for the next page; ``None`` on the last page."""


class OceanBaseSessionService(SessionOperations, BaseSessionService):
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
        self.store = st.SessionStore(
            read=self._read, transaction=self._raw_tx, config=self.config,
            token_counter=self._counter, compaction_overlap=self._overlap,
        )
        """The session tables below ADK's contract, for compaction, the importer and adapters (:mod:`.store`)."""

    # ---------------------------------------------------------------- lifecycle
    async def close(self) -> None:
        """Releases the engine and embedded seekdb if this service created them."""
        await self._release()

    async def __aenter__(self) -> "OceanBaseSessionService":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---------------------------------------------------------------- helpers
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
        state_rows = codec.state_rows(encoded, app=app, user=user, sid=sid, when=when) if encoded else None
        stored = await writes.insert_session(self.store, row, state_rows)
        if stored is None:  # committed before the connection was lost
            return await self.get_session(app_name=app, user_id=user, session_id=sid)
        session = Session(
            id=sid, app_name=app, user_id=user, state=codec.merge_state(stored), last_update_time=now
        )
        st.mark(session, 0)
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
        :mod:`adk_oceanbase.sessions.archive`). ``num_recent_events`` and
        ``after_timestamp`` select the same window as a full load; archived
        rows are then dropped from it. ``include_compacted=True`` returns
        every stored event (audit, replay).
        """
        app, user, sid = self._ids(app_name, user_id, session_id)
        num = config.num_recent_events if config else None
        after = config.after_timestamp if config and config.after_timestamp else None
        key = {"app": app, "user": user, "sid": sid}
        loaded = await loads.load_session(self.store, key, num=num, after=after, include_compacted=include_compacted)
        if loaded is None:
            return None
        (last_seq, last_update_time), rows, state_rows = loaded
        events = await loads.decode_events([r[1] for r in rows])
        session = Session(
            id=sid,
            app_name=app,
            user_id=user,
            state=codec.merge_state(state_rows),
            events=events,
            last_update_time=last_update_time,
        )
        st.mark(session, last_seq)
        return session

    @traced
    @audited(by_ids("list_sessions"), read=True, count=lambda r: len(r.sessions))
    async def list_sessions(self, *, app_name: str, user_id: Optional[str] = None) -> ListSessionsResponse:
        app = validation.check_id("app_name", app_name)
        user = validation.check_id("user_id", user_id) if user_id is not None else None

        async def load(conn: AsyncConnection) -> tuple[list, list]:
            rows = (await conn.execute(q.select_sessions(app, user))).all()
            return rows, (await conn.execute(q.select_state_for_list(app, user))).all()

        rows, state_rows = await self._read(load)
        return ListSessionsResponse(sessions=loads.sessions_with_state(app, rows, state_rows))

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
        after = loads.decode_cursor(cursor) if cursor else None

        async def load(conn: AsyncConnection) -> tuple[list, list]:
            stmt = q.select_sessions_page(app, user, limit=limit + 1, after=after, newest_first=newest_first)
            rows = (await conn.execute(stmt)).all()
            sids = [r.session_id for r in rows[:limit]]
            return rows, (await conn.execute(q.select_state_for_list(app, user, sids))).all() if rows else []

        rows, state_rows = await self._read(load)
        more = len(rows) > limit
        rows = rows[:limit]
        sessions = loads.sessions_with_state(app, rows, state_rows)
        next_cursor = None
        if more and rows:
            last = rows[-1]
            next_cursor = loads.encode_cursor((last.last_update_time, last.user_id, last.session_id))
        return SessionPage(sessions=sessions, next_cursor=next_cursor)

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
        stored_event = codec.without_temp(debug_source)
        delta = stored_event.actions.state_delta if stored_event.actions and stored_event.actions.state_delta else {}
        encoded_state = codec.encode_state(codec.split_state(delta))
        payload, tokens = self.store.encode_event(stored_event)
        when = codec.to_datetime(event.timestamp)
        expected = st.revision_of(session)

        row = codec.event_row(stored_event, app=app, user=user, sid=sid, payload=payload, tokens=tokens, when=when, redacted=redacting)
        state_rows = codec.state_rows(encoded_state, app=app, user=user, sid=sid, when=when) if encoded_state else None
        debug = {"debug_archive": self._debug_archive, "debug_source": debug_source}
        try:
            seq = await writes.store_event(self.store, session, expected, row, state_rows, stored_event, rerun=False, **debug)
        except (ConnectionLostError, DeadlockError):
            # A deadlock victim was rolled back; after a lost connection the
            # first run may have committed.  One more run is safe either way:
            # it looks for the event's id first, and the compare-and-set does the rest.
            logger.info("append_event of %s re-run after a deadlock or a lost connection", event.id)
            seq = await writes.store_event(self.store, session, expected, row, state_rows, stored_event, rerun=True, **debug)
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
        st.mark(session, seq)
        return event
