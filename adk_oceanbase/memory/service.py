"""``OceanBaseMemoryService``: ADK's memory API with hybrid retrieval scored inside OceanBase.

The service keeps ADK's contract (its methods, their validation and
auditing) and orchestration: the write path is :mod:`.ingest`, opt-out /
taint / restore :mod:`.curation`, embedding upkeep :mod:`.upkeep` (mixins);
search asks the retriever the engine dialect picks (:mod:`.retrieval`,
:mod:`.retrievers`) and never which engine it is on; embedding happens in
:mod:`.vectorizer`'s background worker.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from typing_extensions import override

from .._lifecycle import DatabaseService, adk_uri
from ..audit import AuditSettings, Auditor, audited, by_ids, by_session, current_entry
from ..config import Config
from ..engine import Database
from ..errors import MemoryTooLongError, ValidationError
from ..redaction import RedactionPolicy
from ..telemetry import traced
from ..validation import check_id, check_text
from . import arguments as args
from . import postings
from . import queries as q
from .asker import author_cue
from .consolidation import content_hash
from .embedding import Embedder, default_embedder
from .poisoning import check_author
from .extraction import LlmExtractor, MemoryDraft, memory_id_for
from .results import MemoryHit, entry_text as _text, parse_timestamp as _parse_ts
from .retrieval import HitJoin, ProfileCache, Retriever, SearchRequest
from .retrievers import retriever_for
from .pipeline import ExtractionPipeline, PipelineSettings, chosen_pipeline
from .search_scope import SearchFilters
from .settings import MemorySettings, ScoreWeights
from .shared import SharedKnowledge, check_scope_write, with_shared
from .curation import MemoryCuration
from .ingest import MemoryIngest
from .upkeep import EmbeddingUpkeep
from .vectorizer import Vectorizer

if TYPE_CHECKING:
    from google.adk.events.event import Event
    from google.adk.sessions.session import Session

__all__ = ["MemoryHit", "OceanBaseMemoryService"]

logger = logging.getLogger(__name__)


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


class OceanBaseMemoryService(MemoryIngest, MemoryCuration, EmbeddingUpkeep, DatabaseService, BaseMemoryService):
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
        pipeline: :class:`~adk_oceanbase.memory.pipeline.PipelineSettings`: ``add_session_to_memory``
            and ``add_events_to_memory`` queue the exchanges durably and return; workers
            (here or in other processes) extract; ``flush()`` waits for them.  Unset: the
            default pipeline when an ``extractor`` is given, none without (``chosen_pipeline``);
            ``False``: extraction inside the call (inline); ``True``: the default pipeline.
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
        pipeline: PipelineSettings | bool | None = None,
        shared: SharedKnowledge | None = None,
        uri: str | None = None,
        agents_dir: str | None = None,
    ):
        self._bind_database(adk_uri(url, uri), config, database, engine, auto_setup)
        self._redaction = redaction
        self._auditor = Auditor(audit)
        self._embedder = embedder or default_embedder()
        self._profiles = ProfileCache()
        self.settings = settings or MemorySettings()
        self._extractor = extractor
        self._vectorizer = Vectorizer(self._db, self._embedder, self.settings)
        # issue #31: the durable extraction queue, and knowledge shared beyond one user
        self._pipeline = None if (chosen := chosen_pipeline(pipeline, extractor)) is None else ExtractionPipeline(
            self._db, extractor, chosen, self.settings, related=self._related, write=self._write_extracted)
        self.shared = shared

    @property
    def settings(self) -> MemorySettings:
        """The service's knobs; replacing them (``dataclasses.replace``) takes effect from the next search."""
        return self._settings

    @settings.setter
    def settings(self, value: MemorySettings) -> None:
        self._settings = value
        self._retriever: Retriever | None = None

    @property
    def retriever(self) -> Retriever:
        """The search seam this service asks (:mod:`.retrieval`): the engine's own, or ``settings.scoring``'s.

        Needs a started database (any call of the service starts it).
        """
        if self._retriever is None:
            self._retriever = retriever_for(self._db, self._settings, self._embedder.model_name, self._profiles)
        return self._retriever

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

    async def retry_failed_embeddings(self) -> int:
        """Gives memories whose embedding failed ``max_row_attempts`` rounds fresh rounds; returns how many.

        Such rows are otherwise left alone (full-text search still finds them).
        """
        await self._engine()
        return await self._vectorizer.retry_failed()

    async def flush(self) -> None:
        """Waits until every queued extraction ran (or waits out a retry backoff) and every memory written has its embedding (or was marked failed).

        A bulk write's deferred postings (Agno's ``upsert_memories``; ``memory.postings``) are written by the
        same rounds: after ``flush()`` those memories are found by their words too.
        """
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
        if self._pipeline is not None:  # issue #31: read and queue in three round trips, return
            await self._enqueue_session(app, user, session)
            return
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
        request = await self._request(app_name, user_id, query, top_k, filters, weights, min_score, now)
        if request is None:
            return []
        hits = await self.retriever.search(request)
        if hits and (self.settings.bump_access if bump_access is None else bump_access):
            # Its own transaction: a re-run read must not count its hits twice.
            stmt, params = q.bump_access(request.app_name, request.user_id, [h.memory_id for h in hits], request.now)
            async with self._tx() as conn:
                await conn.execute(stmt, params)
        return hits

    @traced
    @audited(by_ids("memory_search"), read=True, count=len)
    async def search_joined(
        self,
        app_name: str,
        user_id: str,
        query: str,
        *,
        join: HitJoin,
        top_k: int | None = None,
        filters: SearchFilters | Mapping[str, Any] | None = None,
        weights: ScoreWeights | Mapping[str, float] | None = None,
        min_score: float | None = None,
        now: datetime | None = None,
    ) -> list[tuple[Any, ...]]:
        """:meth:`search`'s ranking, answered by ``join``'s rows over the hits (:class:`.retrieval.HitJoin`).

        For a caller whose memories index its own rows (the LangGraph Store): on
        OceanBase the join is the end of the search's one statement, so the
        caller's rows come in the search's round trip.  Counts no access (the
        hits are the caller's index entries, not memories served to an agent).
        """
        request = await self._request(app_name, user_id, query, top_k, filters, weights, min_score, now)
        return [] if request is None else await self.retriever.search_joined(request, join)

    async def _request(self, app_name: str, user_id: str, query: str, top_k: int | None, filters: Any, weights: Any,
                       min_score: float | None, now: datetime | None) -> SearchRequest | None:
        """The validated search, with the query's embedding (None: an empty query, nothing to search)."""
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
            return None
        await self._engine()
        return SearchRequest(
            app_name=app, user_id=user, query=query, query_vector=await self._query_vector(query),
            now=_now() if now is None else q.naive_utc(now), top_k=k, weights=w, filters=flt, min_score=ms,
            author_cue=author_cue(query),  # whose words the question is about (memory.asker)
        )

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


def _confidence(value: Any) -> float:
    """``add_memory``'s confidence: a number in [0, 1], else a ValidationError naming it."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = float("nan")
    if not 0.0 <= x <= 1.0:
        raise ValidationError(f"custom_metadata['confidence'] must be a number between 0 and 1, got {value!r}")
    return x
