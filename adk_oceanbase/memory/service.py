"""``OceanBaseMemoryService``: ADK's memory API with hybrid retrieval scored inside OceanBase.

The service does transactions and orchestration only: what becomes a memory
is :mod:`.extraction`, SQL is :mod:`.queries`, merging is
:mod:`.consolidation`, embedding happens in :mod:`.vectorizer`'s background
worker, and the MySQL scoring is :mod:`.scoring`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import random
import time
from collections import namedtuple
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from typing_extensions import override

from .. import gateway, maintenance
from .._lifecycle import DatabaseService, adk_uri
from ..audit import AuditEntry, AuditSettings, Auditor, audited, by_ids, by_session, current_entry
from ..config import Config
from ..engine import Database
from ..errors import (
    OB_INTERNAL_ERROR,
    EmbeddingModelMismatchError,
    MemoryTooLongError,
    MemoryWriteRaceError,
    ValidationError,
    is_deadlock,
    is_duplicate_key,
    is_rerunnable,
)
from ..governance import guard
from ..governance import queries as gq
from ..redaction import RedactionPolicy, redact_value
from ..schema import agent_memories, memory_terms
from ..sessions.codec import decode_event
from ..telemetry import traced
from ..validation import check_id, check_text, check_timestamp
from . import arguments as args
from . import postings
from . import queries as q
from . import search_sql as sq
from .asker import author_cue
from .consolidation import content_hash, write_drafts
from .embedding import Embedder, default_embedder
from .lexical import stem_text
from .poisoning import check_author, guard_drafts
from .queries import ROW_COLUMNS
from .extraction import LlmExtractor, MemoryDraft, clip, event_text, group_exchanges, is_trivial, memory_id_for, turn_drafts
from .pipeline import ExtractionPipeline, PipelineSettings
from .shared import SharedKnowledge, check_scope_write, with_shared
from .search_sql import SearchFilters
from .results import MemoryHit, entry_text as _text, parse_timestamp as _parse_ts, to_hit as _hit
from .scoring import Signals, rank_rows
from .settings import MemorySettings, ScoreWeights
from .vectorizer import Vectorizer

if TYPE_CHECKING:
    from google.adk.events.event import Event
    from google.adk.sessions.session import Session

__all__ = ["MemoryHit", "OceanBaseMemoryService"]

logger = logging.getLogger(__name__)


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _opt_out_entry(call: inspect.BoundArguments) -> AuditEntry:
    a = call.arguments
    return AuditEntry("memory_opt_out" if a["opted_out"] else "memory_opt_in", a["app_name"], a["user_id"])


def _taint_entry(call: inspect.BoundArguments) -> AuditEntry:
    a = call.arguments
    return AuditEntry("memory_taint" if a["tainted"] else "memory_untaint", a["app_name"], a["user_id"])


class OceanBaseMemoryService(DatabaseService, BaseMemoryService):
    """Long-term memory for ADK agents on OceanBase/seekdb (SQL scoring) or MySQL (numpy scoring).

    Args:
        url: ``seekdb:///dir``, ``oceanbase://...`` or ``mysql+aiomysql://...``; default from the environment.
        config: a ready :class:`~adk_oceanbase.config.Config` instead of ``url``.
        database: a shared :class:`~adk_oceanbase.engine.Database` (e.g. the session service's); not closed here.
        engine: a caller-owned SQLAlchemy ``AsyncEngine`` (not disposed here).
        embedder: the embedding model; default MiniLM (384-d), loaded lazily in a worker thread.
        settings: weights, retrieval knobs, ingest policy, vectorizer; see :class:`MemorySettings`.
        extractor: an :class:`LlmExtractor` to store LLM-extracted facts instead of raw turns.
        auto_setup: create the schema on first use when it is missing.
        redaction: a :class:`~adk_oceanbase.redaction.RedactionPolicy`; for the apps
            it covers, memory content (added, ingested turns, LLM-extracted facts),
            authors, topics and metadata (keys and values) are redacted before
            they are written, so the stored content, its ``search_text``, its
            ``memory_terms`` and its embedding all derive from the redacted text. Unset: off.
        audit: :class:`~adk_oceanbase.audit.AuditSettings` (share the session
            service's) to write ``audit_log`` rows. Unset: off.
        pipeline: :class:`~adk_oceanbase.memory.pipeline.PipelineSettings` to take
            extraction off the request path: ``add_session_to_memory`` and
            ``add_events_to_memory`` queue the session's exchanges durably in the
            database and return; workers (in this process or others) extract.
            Unset: extraction runs inside the call, as before.
        shared: :class:`~adk_oceanbase.memory.shared.SharedKnowledge`: app- or
            agent-scoped memories ``search_memory`` adds to every user's hits,
            and who may write them.  Unset: none.
        uri: ``url`` by the name ADK's ``services.yaml`` route passes it; give one of the two.
        agents_dir: passed by ADK's ``services.yaml`` route; not used.

    Example:
        >>> import asyncio
        >>> from adk_oceanbase.memory import OceanBaseMemoryService, HashEmbedder
        >>> async def main():
        ...     async with OceanBaseMemoryService("seekdb:///tmp/adk-doc", embedder=HashEmbedder()) as mem:
        ...         await mem.add_memory(app_name="app", user_id="u1", memories=[...])
        ...         await mem.flush()
        ...         return await mem.search("app", "u1", "where does the user live?", top_k=3)
        >>> asyncio.run(main())  # doctest: +SKIP
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        config: Config | None = None,
        database: Database | None = None,
        engine: AsyncEngine | None = None,
        embedder: Embedder | None = None,
        settings: MemorySettings | None = None,
        extractor: LlmExtractor | None = None,
        auto_setup: bool = True,
        redaction: RedactionPolicy | None = None,
        audit: AuditSettings | None = None,
        pipeline: PipelineSettings | None = None,
        shared: SharedKnowledge | None = None,
        uri: str | None = None,
        agents_dir: str | None = None,
    ):
        self._bind_database(adk_uri(url, uri), config, database, engine, auto_setup)
        self._redaction = redaction
        self._auditor = Auditor(audit)
        self._embedder = embedder or default_embedder()
        self.settings = settings or MemorySettings()
        self._extractor = extractor
        self._vectorizer = Vectorizer(self._db, self._embedder, self.settings)
        self._profiles: dict[tuple[str, str], _UserProfile] = {}
        # issue #31: the durable extraction queue, and knowledge shared beyond one user
        self._pipeline = None if pipeline is None else ExtractionPipeline(
            self._db, extractor, pipeline, self.settings, related=self._related, write=self._write_extracted)
        self.shared = shared

    # ------------------------------------------------------------ lifecycle
    @property
    def embedder(self) -> Embedder:
        return self._embedder

    @property
    def vectorizer(self) -> Vectorizer:
        return self._vectorizer

    @property
    def auditor(self) -> Auditor:
        """The audit writer (shared with :class:`~adk_oceanbase.memory.shared.SharedMemory`)."""
        return self._auditor

    def transaction(self) -> Any:
        """One transaction on this service's database (``async with``), errors typed."""
        return self._tx()

    @property
    def pipeline(self) -> ExtractionPipeline | None:
        """The extraction queue and this process's workers (``pipeline=`` given), else ``None``."""
        return self._pipeline

    async def _on_ready(self) -> None:
        await self._check_embedding_model()
        if self._pipeline is not None:
            self._pipeline.start()  # its first round finds jobs a dead process left
        if not self.settings.background_start:
            return
        start_loading = getattr(self._embedder, "start_loading", None)
        if start_loading is not None:  # a model that loads for seconds does so off the request path
            start_loading()
        self._vectorizer.submit(())  # starts the worker; its first sweep finds leftovers

    async def _check_embedding_model(self) -> None:
        """Refuses to mix embedding models or dimensions silently."""
        want_dim = self._db.config.embedding_dim
        if self._embedder.dim != want_dim:
            raise EmbeddingModelMismatchError(
                f"embedder {self._embedder.model_name} makes {self._embedder.dim}-d vectors but the memory "
                f"column holds {want_dim}-d ones (Config.embedding_dim)"
            )
        async with gateway.connection(self._db) as conn:
            rows = (await conn.execute(q.embedding_models_in_use())).all()
        others = [(m, d, n) for m, d, n in rows if m != self._embedder.model_name or d != self._embedder.dim]
        if others:
            desc = ", ".join(f"{m} ({d}-d, {n} rows)" for m, d, n in others)
            raise EmbeddingModelMismatchError(
                f"stored memories were embedded by {desc}, not {self._embedder.model_name}: use that model, "
                "or call `await service.reembed()` to re-embed everything with the new one"
            )

    @traced
    async def rebuild_vector_index(self) -> bool:
        """Rebuilds the HNSW index after a bulk load (OceanBase/seekdb); ``False`` on MySQL (no index).

        Run it off-peak: it takes minutes at 100k rows, and searches are ~30x
        faster afterwards than on an index grown row by row.  Also gathers the
        table's optimizer statistics, which a bulk load leaves behind
        (``queries.GATHER_TABLE_STATS``: without them a big user's ANN search
        is planned as an exact scan).
        """
        await self._engine()
        if not self._db.dialect.native_vectors:
            return False
        async with maintenance.connection(self._db) as conn:  # minutes at 1M rows: Config.maintenance_timeout_s
            await conn.execute(q.REBUILD_VECTOR_INDEX)
            await conn.commit()
            await self.vectorizer.upkeep.refresh_statistics(conn, force=True)  # a full gather: long too
        return True

    @traced
    async def reembed(self) -> int:
        """Marks rows embedded by another model as pending; the vectorizer re-embeds them. Returns the count.

        Deleted memories (tombstones) stay deleted; the count includes
        tombstones whose model was cleared.
        """
        stmt, params = q.reset_other_models(self._embedder.model_name, self._embedder.dim, _now())

        async def once() -> int:
            # no schema check first: it refuses the other model; one UPDATE of every row: Config.maintenance_timeout_s
            async with maintenance.connection(self._db) as conn:
                count = int((await conn.execute(stmt, params)).rowcount or 0)
                await conn.commit()
                return count

        # ready -> pending for other models is harmless to run twice
        count = await gateway.retrying(once, when=is_rerunnable, what="reembed")
        self._checked = False
        await self._engine()
        return count

    async def stats(self, *, app_name: str | None = None) -> dict[str, dict[str, int]]:
        """Memory rows per app and embedding status (``ready``, ``pending``, ``failed``, ``deleted``).

        ``pending`` rows wait for the vectorizer; ``deleted`` are tombstones
        that keep re-ingestion from bringing a deleted memory back.
        """
        app = check_id("app_name", app_name) if app_name is not None else None
        stmt, params = q.memory_stats(app)

        async def load(conn: AsyncConnection) -> list:
            return (await conn.execute(stmt, params)).all()

        rows = await self._read(load)
        out: dict[str, dict[str, int]] = {}
        for app_row, status, n in rows:
            out.setdefault(app_row, {})[status] = int(n)
        return out

    async def retry_failed_embeddings(self) -> int:
        """Gives memories whose embedding failed ``max_row_attempts`` rounds fresh rounds; returns how many.

        Such rows are otherwise left alone (full-text search still finds them).
        """
        await self._engine()
        return await self._vectorizer.retry_failed()

    async def flush(self) -> None:
        """Waits until every queued extraction ran (or waits out a retry backoff) and every memory written has its embedding (or was marked failed)."""
        await self._engine()
        if self._pipeline is not None:
            await self._pipeline.flush()
        await self._vectorizer.flush()

    async def close(self) -> None:
        """Drains the embedding queue (at most ``close_timeout_s``), then releases the database if this service created it."""
        try:
            if self._pipeline is not None:
                await self._pipeline.close()
            await self._vectorizer.close()
        finally:
            await self._release()

    async def __aenter__(self) -> "OceanBaseMemoryService":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --------------------------------------------------------------- ingest
    @override
    @traced
    @audited(by_session("memory_add"))
    async def add_session_to_memory(self, session: "Session") -> None:
        """Remembers a whole session, from its stored full event log when this database holds it.

        ``OceanBaseSessionService.get_session`` leaves out events a compaction
        archived (``session_events.compacted_by``), so ``session.events`` may
        start with a summary; the stored log still has every turn.  Events the
        log lacks (a session held only in memory) are taken from ``session``.
        """
        app, user = check_id("app_name", session.app_name), check_id("user_id", session.user_id)
        start = await self._started(app, user)  # before the log is read: an erasure after this point wins
        events = list(session.events)
        stored = await self._stored_events(app, user, session.id)
        if stored:
            known = {e.id for e in stored}
            events = stored + [e for e in events if e.id not in known]
        await self._add_events(
            app, user, events, session.id, custom_metadata=None, whole_session=True,
            start=start, session_time=session.last_update_time,
        )

    async def _stored_events(self, app_name: str, user_id: str, session_id: str) -> list["Event"]:
        app, user = check_id("app_name", app_name), check_id("user_id", user_id)
        stmt, params = q.session_event_log(app, user, check_id("session_id", session_id))

        async def load(conn: AsyncConnection) -> list[str]:
            return [r[0] for r in (await conn.execute(stmt, params)).all()]

        payloads = await self._read(load)
        if not payloads:
            return []
        return await asyncio.to_thread(lambda: [decode_event(p) for p in payloads])

    @override
    @traced
    @audited(by_ids("memory_add"))
    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence["Event"],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Stores new turns (or LLM facts) of ``events``; events seen before are skipped (idempotent)."""
        await self._add_events(app_name, user_id, events, session_id, custom_metadata=custom_metadata, whole_session=False)

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
        if self._pipeline is not None:  # issue #31: queue the exchanges durably; workers extract
            await self._enqueue(app, user, sid, events, meta, start, whole_session)
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
        if session_time is None and events:
            session_time = max(e.timestamp for e in events)  # what a batch of turns knew of its session
        session = (sid, session_time) if sid and session_time is not None else None
        await self._write(app, user, await self._redacted_drafts(app, drafts), start, session)

    async def _enqueue(
        self, app: str, user: str, sid: str | None, events: Sequence["Event"], meta: dict[str, Any],
        start: guard.Generation, whole_session: bool,
    ) -> None:
        """Filters, redacts and queues the exchanges of ``events`` (:mod:`.pipeline`); drains them in ``sync`` mode."""
        pipe = self._pipeline
        assert pipe is not None
        positions = await self._turn_positions(app, user, sid, events, whole_session) if sid else None
        exchanges = pipe.plan(events, positions)
        if exchanges and self._redacts(app):  # the queue holds conversation text: redacted before it is stored
            clean = await self._redact(app, [[t.text for t in turns] for turns in exchanges])
            exchanges = [[dataclasses.replace(t, text=x) for t, x in zip(turns, texts)]
                         for turns, texts in zip(exchanges, clean)]
        await pipe.enqueue(app, user, sid, exchanges, meta, start, audit=current_entry())
        if pipe.settings.mode == "sync":
            await pipe.drain()

    async def _related(self, app: str, user: str, probe: str) -> list[tuple[str, str]]:
        """The user's memories an extracted fact may supersede (an uncounted search)."""
        hits = await self.search(app, user, probe, top_k=5, bump_access=False)
        return [(h.memory_id, _text(h.entry)) for h in hits]

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
            facts = await ex.extract(group, [(h.memory_id, _text(h.entry)) for h in related])
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
        self._learn_authors(app, user, drafts)
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
            outcome = await write_drafts(conn, app, user, drafts, now, min_confidence=self.settings.min_confidence)
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

    @override
    @traced
    @audited(by_ids("memory_add"))
    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Stores explicit memories. ``custom_metadata`` keys ``topics``, ``importance`` and ``confidence`` are honoured.

        ``confidence`` (0..1, default 1) is how sure the source is; below
        ``MemorySettings.min_confidence`` the memory is stored but never returned.
        """
        app, user = check_id("app_name", app_name), check_id("user_id", user_id)
        given = []
        for entry in memories:
            body = _text(entry)
            if not body:
                continue
            if len(body) > self.settings.max_content_chars:
                raise MemoryTooLongError(
                    f"memory content is {len(body):,} characters; the limit is {self.settings.max_content_chars:,} "
                    "(MemorySettings.max_content_chars): store it as several memories"
                )
            check_text("memory content", body)
            if entry.author is not None:
                check_text("memory author", entry.author)
                check_author(entry.author, self.settings.privileged_authors)
            meta = {**dict(custom_metadata or {}), **(entry.custom_metadata or {})}
            topics = args.check_topics(meta.pop("topics", None) or [])
            importance = args.check_importance(meta.pop("importance", 0.5))
            confidence = _confidence(meta.pop("confidence", 1.0))
            meta = args.check_metadata(meta)
            sid = meta.pop("session_id", None)
            if sid is not None:
                sid = check_id("custom_metadata['session_id']", sid)
            given.append((entry, body, topics, meta, importance, confidence, sid))
        start = await self._started(app, user)  # the call's moment: an erasure after it wins
        authors = [entry.author for entry, *_ in given]
        if given and self._redacts(app):  # before the ids: a content-derived id must not hash the raw text
            clean = await self._redact(app, [[body, author, topics, meta] for (_, body, topics, meta, *_), author in zip(given, authors)])
            given = [(g[0], body, topics, meta, *g[4:]) for g, (body, _, topics, meta) in zip(given, clean)]
            authors = [author for _, author, _, _ in clean]
        drafts = []
        for (entry, body, topics, meta, importance, confidence, sid), author in zip(given, authors):
            mid = entry.id or memory_id_for(app, user, "manual", content_hash(body))
            check_id("memory id", mid, max_len=64)
            drafts.append(
                MemoryDraft(
                    memory_id=mid, content=body, author=author, created_at=_parse_ts(entry.timestamp),
                    session_id=sid, event_ids=[], extractor="manual",
                    topics=topics, importance=importance, custom_metadata=meta, confidence=confidence,
                )
            )
        await self._write(app, user, drafts, start)

    @override
    @traced
    @audited(by_ids("memory_delete"))
    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: str | None = None) -> bool:  # type: ignore[override]
        """Erases a memory's content and vector; a tombstone keeps re-ingestion from bringing it back.

        Returns whether a memory was erased (``False``: no such memory, or
        deleted already), which ADK's ``None`` leaves unsaid; ``adk-oceanbase
        memory delete`` exits 1 on it.
        """
        if not memory_id:
            return False
        app, user = check_id("app_name", app_name), check_id("user_id", user_id)
        check_scope_write(user)
        memory_id = check_id("memory_id", memory_id, max_len=64)
        stmt, params = q.delete_memory(app, user, memory_id, _now())

        async def delete(conn: AsyncConnection) -> bool:
            deleted = await conn.execute(stmt, params)
            if deleted.rowcount:
                await conn.execute(*postings.delete_postings(app, user, [memory_id]))
            if (audit := current_entry()) is not None:
                audit.row_count = deleted.rowcount
                await conn.execute(audit.insert())
            return bool(deleted.rowcount)

        return await self._rerunnable_tx(delete)

    # ----------------------------------------------------------- governance
    @audited(_opt_out_entry)
    async def set_memory_opt_out(
        self, app_name: str, user_id: str, opted_out: bool = True, *, purge: bool = False
    ) -> int:
        """Stops (or, with ``opted_out=False``, resumes) remembering this user; returns memories purged.

        While opted out, ``add_session_to_memory``, ``add_events_to_memory``
        and ``add_memory`` store nothing for the user; sessions are not
        affected.  ``purge=True`` also deletes every stored memory of the user
        (tombstones included), in the same transaction as the opt-out.

        Opting out (or purging) moves the user's write-guard generation on
        first (:mod:`..governance.guard`): a memory write in flight either
        commits before it (and is purged) or stores nothing.  With auditing on,
        a ``memory_opt_out`` / ``memory_opt_in`` row counts the purged memories.
        """
        app, user = check_id("app_name", app_name), check_id("user_id", user_id)
        purged = 0
        now = _now()
        async with self._tx() as conn:
            if opted_out or purge:
                await guard.bump(conn, app, user, now, erased=False)
            if opted_out:
                await conn.execute(gq.upsert_opt_out(app, user, now))
            else:
                await conn.execute(gq.delete_opt_out(app, user))
            if purge:
                purged = int((await conn.execute(gq.delete_user_rows(agent_memories, app, user))).rowcount or 0)
                await conn.execute(gq.delete_user_rows(memory_terms, app, user))
            if (audit := current_entry()) is not None:
                audit.row_count = purged
                await conn.execute(audit.insert())
        return purged

    async def is_memory_opted_out(self, app_name: str, user_id: str) -> bool:
        """Whether the user asked not to be remembered (:meth:`set_memory_opt_out`)."""
        app, user = check_id("app_name", app_name), check_id("user_id", user_id)

        async def read(conn: Any) -> bool:
            return (await conn.execute(gq.opt_out_of(app, user))).first() is not None

        return await self._read(read)

    @audited(_taint_entry)
    async def mark_tainted(
        self, app_name: str, user_id: str, memory_ids: Sequence[str], tainted: bool = True
    ) -> int:
        """Marks memories as tainted (possibly poisoned): search never returns them, so nothing injects them.

        Whatever a newly tainted memory superseded is live again (only a memory
        search could return may supersede), in the same transaction; clearing
        the mark later does not supersede it again.  ``tainted=False`` clears
        the mark.  Only this user's memories are touched; returns how many ids matched.
        """
        app, user = check_id("app_name", app_name), check_id("user_id", user_id)
        if isinstance(memory_ids, str):
            raise ValidationError("memory_ids must be a list of ids, not one string")
        ids = [check_id("memory_id", m, max_len=64) for m in memory_ids]
        if not ids:
            return 0
        now = _now()
        async with self._tx() as conn:
            res = await conn.execute(gq.set_tainted(app, user, ids, tainted, now))
            if tainted:
                await conn.execute(*q.unsupersede_displaced_by(app, user, ids, now))
            if (audit := current_entry()) is not None:
                audit.row_count = int(res.rowcount or 0)
                await conn.execute(audit.insert())
        return int(res.rowcount or 0)

    @traced
    @audited(by_ids("memory_restore"))
    async def restore_superseded(self, app_name: str, user_id: str, memory_id: str) -> bool:
        """Undoes a supersession: ``memory_id`` (hidden by a newer fact or a near duplicate) is returned by search again.

        The newer memory stays as it is (taint it, or delete it, if it was the
        wrong one).  Returns ``False`` when the memory is not superseded (or not
        this user's, or deleted).  Audited as ``memory_restore`` when auditing is on.
        """
        app, user = check_id("app_name", app_name), check_id("user_id", user_id)
        memory_id = check_id("memory_id", memory_id, max_len=64)
        stmt, params = q.unsupersede(app, user, memory_id, _now())

        async def restore(conn: AsyncConnection) -> bool:
            res = await conn.execute(stmt, params)
            if (audit := current_entry()) is not None:
                audit.row_count = res.rowcount
                await conn.execute(audit.insert())
            return bool(res.rowcount)

        await self._engine()
        return await self._rerunnable_tx(restore)

    # --------------------------------------------------------------- search
    @override
    @traced
    @audited(by_ids("memory_search"), read=True, count=lambda r: len(r.memories))
    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        """ADK's search (its memory tools call it): ``search_memory_top_k`` hits, counted as an access
        unless ``search_memory_counts_access`` says otherwise (see :class:`MemorySettings`).

        Its hits go to an agent, so they are always *served* (``last_served_at``,
        retention's clock), counted or not: a memory the agent keeps being given is in use.
        """
        s = self.settings
        counts = s.bump_access if s.search_memory_counts_access is None else s.search_memory_counts_access
        hits = await self.search(app_name, user_id, query, top_k=s.search_memory_top_k, bump_access=counts)
        if self.shared is not None and self.shared.include:  # issue #31: app/agent knowledge beside the user's
            hits = await with_shared(self, self.shared, app_name, query, hits, top_k=s.search_memory_top_k,
                                     bump_access=counts)
        if hits and not counts:
            stmt, params = q.mark_served(check_id("app_name", app_name), check_id("user_id", user_id),
                                         [h.memory_id for h in hits])
            async with self._tx() as conn:
                await conn.execute(stmt, params)
        return SearchMemoryResponse(memories=[h.entry for h in hits])

    @traced
    @audited(by_ids("memory_search"), read=True, count=len)
    async def search(
        self,
        app_name: str,
        user_id: str,
        query: str,
        *,
        top_k: int | None = None,
        filters: SearchFilters | Mapping[str, Any] | None = None,
        weights: ScoreWeights | Mapping[str, float] | None = None,
        min_score: float | None = None,
        bump_access: bool | None = None,
        now: datetime | None = None,
    ) -> list[MemoryHit]:
        """Hybrid search: semantic + full-text + recency + frequency + importance + context + version + author, best first.

        On OceanBase/seekdb the whole ranking is one SQL statement; on MySQL a
        SQL prefilter feeds the same formula in numpy.  Returned rows get their
        ``access_count`` bumped (one UPDATE) unless ``bump_access=False``; the
        same UPDATE marks them served (``last_served_at``, database clock), which
        keeps them from the retention sweep.  A search that does not count
        (``bump_access=False``: the CLI, an extractor's look-ups) leaves no trace.

        Args:
            now: the moment the question is asked (UTC; naive means UTC).  Caps
                the recency reference and stamps ``last_accessed_at``; default
                the wall clock.  Replays and benchmarks pass their own clock.
        """
        app, user = check_id("app_name", app_name), check_id("user_id", user_id)
        if not isinstance(query, str):
            raise ValidationError(f"query must be a string, got {type(query).__name__}")
        check_text("query", query)
        s = self.settings
        k = args.top_k(top_k, s.top_k)
        flt = args.search_filters(filters)
        if flt is not None and flt.session_id is not None:
            check_id("filters.session_id", flt.session_id)
        w = args.score_weights(weights, s.weights)
        ms = args.min_score(min_score, s.min_score)
        if now is not None and not isinstance(now, datetime):
            raise ValidationError(f"now must be a datetime, got {type(now).__name__}")
        if not query.strip():
            return []
        await self._engine()
        profile = await self._profile(app, user)
        drop = profile.author_terms if s.fulltext_drop_authors else frozenset()
        # A zero full-text weight skips the BM25 candidates altogether, unless the relevance
        # gate's lexical floor needs their coverage (ft_cov) or there is no query vector.
        lexical_floor = s.relevance_min_lexical is not None
        ft_query = sq.fulltext_query(query, drop_stopwords=s.fulltext_stopwords, drop_terms=drop) \
            if w.fulltext or lexical_floor else ""
        qvec = await self._query_vector(query)
        if qvec is None and not ft_query:
            ft_query = sq.fulltext_query(query, drop_stopwords=s.fulltext_stopwords, drop_terms=drop)
        now = _now() if now is None else q.naive_utc(now)
        cue = author_cue(query)  # whose words the question is about (memory.asker)
        use_sql = s.scoring == "sql" or (s.scoring == "auto" and self._db.dialect.native_vectors)

        async def rank(conn: AsyncConnection) -> list[MemoryHit]:
            return await self._search_numpy(conn, app, user, ft_query, qvec, now, k, w, flt, ms, profile, cue)

        if use_sql:
            hits = await self._search_sql(app, user, ft_query, qvec, now, k, w, flt, ms, profile, cue)
        else:
            hits = await self._read(rank)
        if hits and (s.bump_access if bump_access is None else bump_access):
            # Its own transaction: a re-run read must not count its hits twice.
            stmt, params = q.bump_access(app, user, [h.memory_id for h in hits], now)
            async with self._tx() as conn:
                await conn.execute(stmt, params)
        return hits

    async def _profile(self, app: str, user: str) -> _UserProfile:
        """The user's author-name stems and memory count (capped), cached ``author_cache_s``.

        Authors feed ``fulltext_drop_authors``; the count decides, for
        ``vector_search="auto"``, the exact vector scan (below ``exact_scan_rows``).
        """
        key = (app, user)
        hit = self._profiles.get(key)
        clock = time.monotonic()
        if hit is not None and clock - hit.at < self.settings.author_cache_s:
            return hit
        cap = max(self.settings.exact_scan_rows, self.settings.fulltext_overfetch_rows)

        async def load(conn: AsyncConnection) -> tuple[list[str], int]:
            stmt, params = sq.user_authors(app, user)
            names = [r[0] for r in (await conn.execute(stmt, params)).all()]
            stmt, params = sq.user_rows_capped(app, user, cap)
            return names, int((await conn.execute(stmt, params)).scalar() or 0)

        names, rows = await self._read(load)
        if len(self._profiles) > 10_000:
            self._profiles.clear()
        profile = _UserProfile(clock, _name_terms(names), rows)
        self._profiles[key] = profile
        return profile

    def _learn_authors(self, app: str, user: str, drafts: Sequence[MemoryDraft]) -> None:
        hit = self._profiles.get((app, user))
        if hit is not None:
            new = _name_terms(d.author for d in drafts if d.author)
            if not new <= hit.author_terms:
                self._profiles[(app, user)] = dataclasses.replace(hit, author_terms=hit.author_terms | new)

    async def _query_vector(self, query: str) -> Any:
        wait_loaded = getattr(self._embedder, "wait_loaded", None)
        if (
            wait_loaded is not None
            and not getattr(self._embedder, "loaded", True)
            and not await asyncio.to_thread(wait_loaded, self.settings.model_wait_s)
        ):
            logger.warning(
                "embedding model %s still loading after %.0f s; searching without the semantic signal",
                self._embedder.model_name, self.settings.model_wait_s,
            )
            return None
        try:
            return (await asyncio.to_thread(self._embedder.embed, [query]))[0]
        except Exception:  # degrade to full-text only rather than failing the agent's turn
            logger.warning("query embedding failed; searching full-text only", exc_info=True)
            return None

    def _overfetch(self, profile: _UserProfile, flt: SearchFilters | None, hnsw: bool = True) -> int | None:
        """The postings-first full-text form's factor for big users without caller filters, else None.

        ``hnsw``: the statement takes its vector candidates from the HNSW index.  Next to an exact
        vector scan, or with no query vector, seekdb plans the postings-first form slowly or not at
        all (``MemorySettings.fulltext_overfetch_rows``); MariaDB (the numpy path) plans it well.
        """
        s = self.settings
        filtered = flt is not None and any(v for v in dataclasses.astuple(flt))
        if s.fulltext_overfetch is None or filtered or not hnsw or profile.rows < s.fulltext_overfetch_rows:
            return None
        return s.fulltext_overfetch

    def _approximate(self, profile: _UserProfile) -> bool:
        """Whether the vector candidates come from the HNSW index (else: exact scan of the user's rows)."""
        mode = self.settings.vector_search
        return mode == "ann" or (mode == "auto" and profile.rows >= self.settings.exact_scan_rows)

    async def _search_sql(self, app, user, query, qvec, now, k, w, flt, ms, profile, cue) -> list[MemoryHit]:
        """The one-statement ranking, sent with its query-vector ``SET`` in one round trip (``_read_batch``)."""
        dialect, s = self._db.dialect, self.settings
        approximate = self._approximate(profile)
        encoded = None if qvec is None else dialect.encode_vector(qvec)
        overfetch = self._overfetch(profile, flt, hnsw=encoded is not None and approximate)
        # Big users: the BM25 statistics go into session variables first (postings.bm25_statistics:
        # constants in the postings sum), in the same round trip and snapshot.
        stats = None if overfetch is None or s.fulltext_statistics == "inline" \
            else sq.set_fulltext_statistics(app, user, query)
        batch = [sq.snapshot_reads()] if stats is not None else []
        if encoded is not None:
            # ef below the candidate LIMIT makes the filtered HNSW scan repeat itself:
            # 88 ms vs 12 ms at pool 200 on seekdb (benchmarks/_scale.py)
            ef = max(s.ef_search or 64, s.vector_pool(True, k)) if approximate else None
            batch.append(sq.bind_query_vector(encoded, ef))
        if stats is not None:
            batch.append(stats)
        batch.append(sq.hybrid_search(
            app_name=app, user_id=user, query_vector=encoded,
            query_text=query, embedding_model=self._embedder.model_name, now=now, top_k=k, weights=w,
            settings=s, filters=flt, min_score=ms, approximate=approximate, fulltext_overfetch=overfetch,
            fulltext_statistics="inline" if stats is None else "variables", author_cue=cue,
        ))
        # seekdb answered 4016 ("Internal error") once in ~1,000 hybrid searches over 100k rows in
        # one user, never twice in a row; a search is a pure read, so it runs once more.
        _, tuples = (await self._read_batch(batch, rerun_codes=frozenset({OB_INTERNAL_ERROR})))[-1]
        rows = [_SearchRow(*t) for t in tuples]
        return [
            _hit(r, Signals(float(r.sem), float(r.rec), float(r.freq), float(r.ft), float(r.imp), float(r.score),
                            float(r.ctx), float(r.ver), ft_cov=float(r.ft_cov), author=float(r.auth)))
            for r in rows
        ]

    async def _search_numpy(self, conn, app, user, query, qvec, now, k, w, flt, ms, profile, cue) -> list[MemoryHit]:
        stmt, params = sq.numpy_prefilter(app_name=app, user_id=user, query_text=query, settings=self.settings,
                                          filters=flt, fulltext_overfetch=self._overfetch(profile, flt))
        rows = (await conn.execute(stmt, params)).all()
        ranked = await asyncio.to_thread(
            rank_rows, rows, query_vector=qvec, embedding_model=self._embedder.model_name,
            decode=self._db.dialect.decode_vector, now=now, top_k=k, weights=w, settings=self.settings, min_score=ms,
            author_cue=cue,
        )
        return [_hit(r, sig) for r, sig in ranked]


def _confidence(value: Any) -> float:
    """``add_memory``'s confidence: a number in [0, 1], else a ValidationError naming it."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = float("nan")
    if not 0.0 <= x <= 1.0:
        raise ValidationError(f"custom_metadata['confidence'] must be a number between 0 and 1, got {value!r}")
    return x


def _name_terms(names: Any) -> frozenset[str]:
    """Match keys of single-word author names ("Caroline", "assistant").

    Multi-word names ("travel_agent", "Dr Smith") are left alone: dropping
    "travel" from every query of a travel agent would cost more than it saves.
    """
    out = set()
    for name in names:
        words = stem_text(name).split()
        if len(words) == 1:
            out.add(words[0])
    return frozenset(out)


@dataclass(frozen=True)
class _UserProfile:
    """What search needs to know about a user, cached per (app, user)."""

    at: float
    author_terms: frozenset[str]
    rows: int
    """The user's memory rows, counted up to ``exact_scan_rows`` (or ``fulltext_overfetch_rows``, the larger)."""


_SearchRow = namedtuple("_SearchRow", (*ROW_COLUMNS, *sq.SIGNAL_COLUMNS))  # type: ignore[misc]
"""A row of ``search_sql.hybrid_search``, by its documented column order."""
_PREDATES_ERASURE = (
    "the user's memories were erased (delete_user_data) or opted out while this write was in flight; "
    "nothing was stored: read the session again before remembering it"
)
_WRITE_ATTEMPTS = 8
"""Runs of a memory write that keeps losing races with concurrent writers of the same rows (1062, 1213)."""


