"""The memory write path: events and explicit memories become drafts, redacted, written under the write guard.

A mixin of :class:`~.service.OceanBaseMemoryService`, which keeps ADK's
``add_*`` methods and their validation; what becomes a memory is
:mod:`.extraction`, merging is :mod:`.consolidation`.  Every write locks the
user's guard row first (:mod:`..governance.guard`), so an opt-out or erasure
committed meanwhile wins.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from sqlalchemy.ext.asyncio import AsyncConnection

from .. import gateway
from ..audit import audited, by_ids, current_entry
from ..errors import MemoryWriteRaceError, is_deadlock, is_duplicate_key
from ..governance import guard
from ..redaction import RedactionPolicy, redact_value
from ..sessions.codec import decode_event, decode_text_parts
from ..validation import check_id, check_text, check_timestamp
from . import arguments as args
from . import pipeline_queries as pq
from . import queries as q
from .consolidation import write_drafts
from .embedding import Embedder
from .extraction import LlmExtractor, MemoryDraft, clip, event_text, group_exchanges, is_trivial, turn_drafts
from .filtering import Turn, turns_of, visible_text
from .pipeline import ExtractionPipeline
from .shared import check_scope_write
from .poisoning import guard_drafts
from .results import entry_text
from .retrieval import ProfileCache
from .settings import MemorySettings
from .vectorizer import Vectorizer

if TYPE_CHECKING:
    from google.adk.events.event import Event

    from google.adk.sessions.session import Session

    from ..engine import Database

__all__ = ["MemoryIngest"]

logger = logging.getLogger(__name__)


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


class MemoryIngest:
    """The write path of the memory service (a mixin): drafts from events, redaction, the guarded write."""

    _db: "Database"
    _embedder: Embedder
    _extractor: LlmExtractor | None
    _redaction: RedactionPolicy | None
    _vectorizer: Vectorizer
    _profiles: ProfileCache
    _pipeline: ExtractionPipeline | None
    settings: MemorySettings

    async def _stored_events(self, app_name: str, user_id: str, session_id: str) -> list["Event"]:
        app, user = check_id("app_name", app_name), check_id("user_id", user_id)
        stmt, params = q.session_event_log(app, user, check_id("session_id", session_id))

        async def load(conn: AsyncConnection) -> list[str]:
            return [r[0] for r in (await conn.execute(stmt, params)).all()]

        payloads = await self._read(load)
        if not payloads:
            return []
        return await asyncio.to_thread(lambda: [decode_event(p) for p in payloads])

    async def _started(self, app: str, user: str) -> guard.Generation:
        """The user's write-guard generation and opt-out as a memory write starts (see :mod:`..governance.guard`)."""
        await self._engine()
        check_scope_write(user)  # a shared scope's memories are written through memory.shared only
        return await self._read(lambda conn: guard.started(conn, app, user))

    async def _add_events(
        self,
        app_name: str,
        user_id: str,
        events: Sequence["Event"],
        session_id: str | None,
        *,
        custom_metadata: Mapping[str, object] | None,
        whole_session: bool,
        start: guard.Generation | None = None,
        session_time: float | None = None,
    ) -> None:
        app, user = check_id("app_name", app_name), check_id("user_id", user_id)
        sid = check_id("session_id", session_id) if session_id else None  # "" means no session, as before
        meta = args.check_metadata(custom_metadata or {})
        for e in events:
            check_id("event id", e.id)
            check_timestamp(f"timestamp of event {e.id}", e.timestamp)
        start = start or await self._started(app, user)
        if start.opted_out:
            logger.debug("memory opt-out: %d event(s) not remembered", len(events))
            return
        if session_time is None and events:
            session_time = max(e.timestamp for e in events)  # what a batch of turns knew of its session
        if self._pipeline is not None:  # issue #31: queue the exchanges durably; workers extract
            positions = await self._turn_positions(app, user, sid, events, whole_session) if sid else None
            await self._enqueue(app, user, sid, turns_of(events, positions), meta, start, session_time)
            return
        if self._extractor is None:
            positions = await self._turn_positions(app, user, sid, events, whole_session) if sid else None
            drafts = turn_drafts(app, user, sid, events, self.settings, meta, positions)
        else:
            drafts = await self._llm_drafts(app, user, sid, events, meta)
        for d in drafts:
            d.content = clip(check_text(f"text of event {d.event_ids}", d.content), self.settings.max_content_chars)
            if d.author is not None:
                check_text(f"author of event {d.event_ids}", d.author)
        session = (sid, session_time) if sid and session_time is not None else None
        await self._write(app, user, await self._redacted_drafts(app, drafts), start, session)

    async def _enqueue_session(self, app: str, user: str, session: "Session") -> None:
        """``add_session_to_memory`` with the pipeline: what the call does before it returns (issue #31).

        The guard's start read and the stored log (with each event's place)
        go in one packet, in that order (an erasure after the read wins, as
        in :meth:`_started`); the log's events are read for their words only
        (``decode_text_parts``), not validated as ADK events.  Then the
        enqueue's two round trips: three in all, where reading, positioning
        and queueing a 50-turn session took ~9 and 10-13 ms of CPU.
        """
        await self._engine()
        check_scope_write(user)  # a shared scope's memories are written through memory.shared only
        sid = check_id("session_id", session.id)
        (_, guard_rows), (_, log) = await gateway.read_batch(
            self._db, [guard.start_read(app, user), pq.session_turns(app, user, sid)])
        start = guard.generation_of(guard_rows[0])
        if start.opted_out:
            logger.debug("memory opt-out: session %s not remembered", sid)
            return
        if len(log) > _INLINE_DECODE:
            turns, known = await asyncio.to_thread(_stored_turns, log)
        else:
            turns, known = _stored_turns(log)
        extra = [e for e in session.events if e.id not in known]  # a session held only in memory, or its newest turns
        for e in extra:
            check_id("event id", e.id)
            check_timestamp(f"timestamp of event {e.id}", e.timestamp)
        turns += turns_of(extra, range(len(log) + 1, len(log) + len(extra) + 1))
        await self._enqueue(app, user, sid, turns, {}, start, session.last_update_time)

    async def _enqueue(
        self, app: str, user: str, sid: str | None, turns: list[Turn], meta: dict[str, Any],
        start: guard.Generation, session_time: float | None,
    ) -> None:
        """Filters, redacts and queues the exchanges of ``turns`` (:mod:`.pipeline`); drains them in ``sync`` mode."""
        pipe = self._pipeline
        assert pipe is not None
        exchanges = pipe.plan(turns)
        if exchanges and self._redacts(app):  # the queue holds conversation text: redacted before it is stored
            clean = await self._redact(app, [[t.text for t in turns] for turns in exchanges])
            exchanges = [[dataclasses.replace(t, text=x) for t, x in zip(turns, texts)]
                         for turns, texts in zip(exchanges, clean)]
        await pipe.enqueue(app, user, sid, exchanges, meta, start, audit=current_entry(), session_time=session_time)
        if pipe.settings.mode == "sync":
            await pipe.drain()

    async def _related(self, app: str, user: str, probe: str) -> list[tuple[str, str]]:
        """The user's memories an extracted fact may supersede (an uncounted search)."""
        hits = await self.search(app, user, probe, top_k=5, bump_access=False)
        return [(h.memory_id, entry_text(h.entry)) for h in hits]

    @audited(by_ids("memory_extract"))
    async def _write_extracted(
        self, app_name: str, user_id: str, session_id: str | None, drafts: list[MemoryDraft], generation: int
    ) -> None:
        """A pipeline worker's write: checked, redacted and guarded like an inline one; audited as ``memory_extract``."""
        for d in drafts:
            d.content = clip(check_text(f"text of event {d.event_ids}", d.content), self.settings.max_content_chars)
        drafts = await self._redacted_drafts(app_name, drafts)
        await self._write(app_name, user_id, drafts, guard.Generation(generation, False))

    async def _turn_positions(
        self, app: str, user: str, sid: str, events: Sequence["Event"], whole_session: bool
    ) -> list[int | None]:
        """Each event's place in its session, for the context signal's neighbours.

        The stored session log's ``seq`` when this database holds the event
        (exact, whatever order turns are ingested in).  Otherwise: the event's
        1-based index for a whole session, or, for a batch of new events, the
        continuation after the highest position stored for the session.
        """
        ids = [e.id for e in events if e.id]

        async def load(conn: AsyncConnection) -> tuple[dict[str, int], int]:
            logged: dict[str, int] = {}
            if ids:
                stmt, params = q.event_positions(app, user, sid, ids)
                logged = {r[0]: int(r[1]) for r in (await conn.execute(stmt, params)).all()}
            base = 1
            if not whole_session and len(logged) < len(events):
                stmt, params = q.last_turn_pos(app, user, sid)
                base = int((await conn.execute(stmt, params)).scalar() or 0) + 1
            return logged, base

        logged, base = await self._read(load)
        return [logged.get(e.id) if e.id in logged else base + i for i, e in enumerate(events)]

    async def _llm_drafts(
        self, app: str, user: str, session_id: str | None, events: Sequence["Event"], meta: dict[str, Any]
    ) -> list[MemoryDraft]:
        ex = self._extractor
        assert ex is not None
        min_chars = self.settings.min_turn_chars  # issue #31: a "thanks" exchange never reaches the model
        exchanges = [g for g in group_exchanges(events) if any(not is_trivial(event_text(e), min_chars) for e in g)]
        if not exchanges:
            return []
        keys = [ex.exchange_key(app, user, session_id, g) for g in exchanges]
        stmt, params = q.existing_ids(app, user, keys)

        async def load(conn: AsyncConnection) -> set[str]:
            return {r[0] for r in (await conn.execute(stmt, params)).all()}

        done = await self._read(load)
        drafts: list[MemoryDraft] = []
        for key, group in zip(keys, exchanges):
            if key in done:
                continue
            probe = " ".join(event_text(e) for e in group)
            related = await self.search(app, user, probe, top_k=5, bump_access=False)
            facts = await ex.extract(group, [(h.memory_id, entry_text(h.entry)) for h in related])
            drafts.extend(ex.drafts(app, user, session_id, group, facts, meta))
        return drafts

    def _redacts(self, app: str) -> bool:
        return self._redaction is not None and self._redaction.active_for(app)

    async def _redact(self, app: str, value: Any) -> Any:
        redactor = self._redaction.redactor_for(app) if self._redaction is not None else None
        return value if redactor is None else await redact_value(redactor, value)

    async def _redacted_drafts(self, app: str, drafts: list[MemoryDraft]) -> list[MemoryDraft]:
        """Drafts with content, author, topics and metadata (keys too) redacted, in one redactor call.

        The author is redacted with the content: it is embedded and indexed
        with it (``extraction.embedding_text``), so it reaches ``search_text``
        and ``memory_terms``.
        """
        if not drafts or not self._redacts(app):
            return drafts
        clean = await self._redact(app, [[d.content, d.author, d.topics, d.custom_metadata] for d in drafts])
        for d, (content, author, topics, meta) in zip(drafts, clean):
            d.content, d.author, d.topics, d.custom_metadata = content, author, topics, meta
        return drafts

    async def _write(
        self,
        app: str,
        user: str,
        drafts: Sequence[MemoryDraft],
        start: guard.Generation,
        session: tuple[str, float] | None = None,
    ) -> list[str]:
        """Writes drafts in one transaction, again when a concurrent writer of the same memories won.

        The transaction first locks the user's guard row (:mod:`..governance.guard`):
        an opt-out committed since ``start`` drops the drafts; an erasure since
        ``start`` raises :class:`MemoryWriteRaceError` and stores nothing.  So
        does a whole ``session`` (id, last update time) read before the user's
        latest erasure: not stored here any more and last updated before it.

        Two ``add_session_to_memory`` calls for overlapping sessions insert
        the same ids: the loser gets a duplicate key (OceanBase, after the
        winner commits) or a deadlock (MySQL's gap locks); run again, it sees
        the winner's rows and skips or merges into them.
        """
        if not drafts:
            return []
        if tainted := guard_drafts(drafts, self.settings.instruction_detector, self.settings.privileged_authors):
            logger.info("ingest guard: %d memory draft(s) stored tainted (%s)", len(tainted), ", ".join(sorted(set(tainted))))
        self._profiles.learn_authors((app, user), (d.author for d in drafts if d.author))
        now = _now()

        async def write(conn: Any) -> list[str] | None:
            # Checked again under the user's guard lock: an opt-out or erasure committed
            # while the drafts were made wins, and none can commit until this write does.
            now_gen = await guard.lock(conn, app, user, now)
            if now_gen.opted_out:
                return None
            if now_gen.generation != start.generation:
                raise MemoryWriteRaceError(_PREDATES_ERASURE)
            if session is not None and now_gen.predates_erasure(session[1]) \
                    and not await guard.session_stored(conn, app, user, session[0]):
                raise MemoryWriteRaceError(_PREDATES_ERASURE)
            outcome = await write_drafts(conn, app, user, drafts, now, model=self._embedder.model_name,
                                         dim=self._embedder.dim, min_confidence=self.settings.min_confidence)
            if (audit := current_entry()) is not None:
                audit.row_count = len(outcome.inserted)
                await conn.execute(audit.insert())
            return outcome

        # Idempotent (known ids are skipped): a deadlock victim or a lost connection re-runs it
        # (_rerunnable_tx), and so does a write that lost a race for the same new rows (1062).
        outcome = await gateway.retrying(
            lambda: self._rerunnable_tx(write),
            when=lambda exc: is_duplicate_key(exc) or is_deadlock(exc),
            attempts=_WRITE_ATTEMPTS,
            pause_s=lambda attempt: random.uniform(0, 0.005 * 2**attempt),
            what="a memory write",
        )
        if outcome is None:
            logger.debug("memory opt-out: %d memory draft(s) not stored", len(drafts))
            return []
        self._vectorizer.submit((app, user, mid) for mid in [*outcome.inserted, *outcome.reembed])
        return outcome.inserted


def _stored_turns(log: Sequence[Any]) -> tuple[list[Turn], set[str]]:
    """The turns with text among stored ``(seq, event_json)`` rows, each at its ``seq``; and every event id read."""
    turns, known = [], set()
    for seq, payload in log:
        eid, author, ts, parts = decode_text_parts(payload)
        known.add(eid)
        if text := visible_text(parts):
            turns.append(Turn(eid, author, ts, text, int(seq)))
    return turns, known


_INLINE_DECODE = 256
"""Stored events parsed on the event loop (~6 us each, JSON only); a longer log is parsed in a worker thread."""
_PREDATES_ERASURE = (
    "the user's memories were erased (delete_user_data) or opted out while this write was in flight; "
    "nothing was stored: read the session again before remembering it"
)
_WRITE_ATTEMPTS = 8
"""Runs of a memory write that keeps losing races with concurrent writers of the same rows (1062, 1213)."""


