"""The memory pipeline off the request path: a durable extraction queue in the database and its workers (issue #31).

Seed 001 asks that remembering never slow the agent.  With a
:class:`PipelineSettings`, ``add_session_to_memory`` filters the session's
exchanges (:mod:`.filtering`: trivial turns and short exchanges never reach a
model), commits one ``memory_extraction_jobs`` row per exchange not seen before,
and returns.  Workers then claim jobs, extract (an LLM condenses long
exchanges; short ones are stored raw), write the memories through the service's
usual write path (guard, consolidation, redaction, audit), and mark the job
``done`` (its payload, the conversation text, dropped).

* **Durable**: a job is a row; a process that dies leaves it ``pending`` (or
  ``running`` under a claim whose lease runs out), and any service on the
  database picks it up — at start, on its next poll, or in ``flush()``.
* **Shared**: several processes work one queue; a claim is a conditional
  UPDATE with a token, so two workers never extract the same job (the
  vectorizer's scheme: :mod:`.vectorizer`).
* **Isolated failures**: a job whose extraction raises is put back with a
  persisted ``next_attempt_at`` (exponential backoff, jitter); after
  ``max_attempts`` it is ``failed`` and left for an operator.  The others go on.
  A job whose user was erased or opted out since it was queued is dropped.
* **Bounded**: at most ``workers`` extractions run at once per process.
* **Synchronous mode** (``mode="sync"``): the call drains the queue before it
  returns, for tests and scripts that search right after remembering.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import sys
import uuid
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Awaitable, Callable, Literal, Sequence

from .. import gateway
from ..audit import RAW_INSERT_AUDIT, AuditEntry
from ..engine import Database
from ..errors import MemoryWriteRaceError, ValidationError, is_deadlock, is_duplicate_key, is_rerunnable
from ..governance import guard
from ..rawtx import COMMIT
from . import pipeline_queries as pq
from . import queries as q
from .extraction import LlmExtractor, MemoryDraft, memory_id_for, turn_drafts
from .filtering import Turn, condensation, exchange_length, kept_exchanges, should_condense, to_events
from .settings import MemorySettings

__all__ = ["ExtractionPipeline", "PipelineSettings", "chosen_pipeline"]

logger = logging.getLogger(__name__)

Related = Callable[[str, str, str], Awaitable[list[tuple[str, str]]]]
"""``(app, user, probe) -> [(memory_id, text)]``: memories an extractor may say a new fact supersedes."""
Write = Callable[[str, str, "str | None", list[MemoryDraft], int], Awaitable[None]]
"""``(app, user, session_id, drafts, generation)``: the service's write path, guard checked against ``generation``."""


class _Busy(Exception):
    """Jobs are still held by a live worker (``flush`` looks again)."""


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


@dataclass(frozen=True)
class PipelineSettings:
    """How the extraction pipeline filters, queues and works (``OceanBaseMemoryService(pipeline=...)``)."""

    mode: Literal["background", "sync"] = "background"
    """``background``: ``add_session_to_memory`` returns after the enqueue; ``sync``: it also drains the queue."""
    workers: int = 4
    """Extractions running at once in this process; 0 queues only (other processes extract; ``flush()`` still drains)."""
    min_turn_chars: int = 8
    """Turns shorter than this (CJK characters count 3), or trivial ("ok", "thanks", "好的"), are dropped first."""
    min_exchange_chars: int = 16
    """An exchange with fewer characters left after that never reaches the model, nor the store."""
    summarization_threshold: int = 200
    """Exchanges this long or longer are condensed by the extractor; shorter ones are stored raw, one memory per turn."""
    max_attempts: int = 5
    """Extraction attempts per job; then it is ``failed`` and left alone."""
    retry_base_s: float = 2.0
    """Pause before the second attempt; doubled each time (with jitter), at most ``retry_max_s``."""
    retry_max_s: float = 300.0
    claim_lease_s: float = 300.0
    """A claim older than this belongs to a dead process and is taken over.  Longer than any extraction."""
    poll_interval_s: float = 2.0
    """How often an idle background worker looks for jobs other processes queued (its own wake it at once)."""
    close_timeout_s: float = 10.0
    """``close()`` waits this long for running extractions, then gives their jobs back."""

    def __post_init__(self) -> None:
        if self.mode not in ("background", "sync"):
            raise ValidationError(f"PipelineSettings.mode must be 'background' or 'sync', got {self.mode!r}")
        for name in ("workers", "min_turn_chars", "min_exchange_chars", "summarization_threshold"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 0:
                raise ValidationError(f"PipelineSettings.{name} must be a non-negative integer")
        if self.max_attempts < 1:
            raise ValidationError("PipelineSettings.max_attempts must be at least 1")

    def backoff_s(self, attempts: int) -> float:
        """Pause after the ``attempts``-th failed attempt: exponential, full jitter on its upper half."""
        cap = min(self.retry_max_s, self.retry_base_s * 2 ** max(attempts - 1, 0))
        return random.uniform(cap / 2, cap)


def chosen_pipeline(pipeline: "PipelineSettings | bool | None", extractor: LlmExtractor | None) -> "PipelineSettings | None":
    """The pipeline a memory service runs (its ``pipeline=``): given, the default one when an extractor is, else none.

    With a model, extraction leaves the request path by default: inline, a
    50-turn session waited for every exchange's model call (18 s at 500 ms a
    call, ``benchmarks/README.md``).  ``False`` keeps it inline.
    """
    if pipeline is None:
        pipeline = extractor is not None
    if isinstance(pipeline, PipelineSettings):
        return pipeline
    if isinstance(pipeline, bool):
        return PipelineSettings() if pipeline else None
    raise ValidationError(f"pipeline must be PipelineSettings, True, False or None, got {type(pipeline).__name__}")


class ExtractionPipeline:
    """The queue and this process's workers; the service owns one when given :class:`PipelineSettings`."""

    def __init__(
        self,
        db: Database,
        extractor: LlmExtractor | None,
        settings: PipelineSettings,
        memory_settings: MemorySettings,
        *,
        related: Related,
        write: Write,
    ):
        self._db = db
        self._extractor = extractor
        self.settings = settings
        self._memory_settings = memory_settings
        self._related = related
        self._write = write
        self._slots: asyncio.Semaphore | None = None
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._claims: set[str] = set()
        self._active = 0  # jobs this process is settling: flush waits for them even if erasure deleted their rows
        self.stats: dict[str, int] = defaultdict(int)
        """Counters: ``enqueued``, ``condensed`` / ``raw`` (jobs done each way), ``extractor_calls``,
        ``failed_attempts``, ``failed_jobs`` (out of attempts), ``dropped`` (user erased or opted out)."""

    # ------------------------------------------------------------- enqueue
    def plan(self, turns: Sequence[Turn]) -> list[list[Turn]]:
        """The exchanges of ``turns`` worth remembering (pure: filtering only)."""
        s = self.settings
        return kept_exchanges(turns, min_turn_chars=max(s.min_turn_chars, self._memory_settings.min_turn_chars),
                              min_exchange_chars=s.min_exchange_chars)

    def _job(self, app: str, user: str, sid: str | None, turns: list[Turn]) -> tuple[str, bool] | None:
        """``(job_id, condense)``; the id is the first memory the job writes, so a done job is seen in the store."""
        ex = self._extractor
        if ex is not None and should_condense(turns, self.settings.summarization_threshold):
            return ex.exchange_key(app, user, sid, turns), True  # type: ignore[arg-type]  # reads .id/.timestamp
        authors = self._memory_settings.memory_authors
        first = next((t for t in turns if authors is None or t.author in authors), None)
        return None if first is None else (memory_id_for(app, user, "turn", sid or "", first.id), False)

    async def enqueue(
        self,
        app: str,
        user: str,
        sid: str | None,
        exchanges: list[list[Turn]],
        meta: dict[str, Any],
        start: guard.Generation,
        audit: AuditEntry | None = None,
        session_time: float | None = None,
    ) -> int:
        """Commits a job per exchange not queued nor stored before; returns how many.  Then wakes the workers.

        The transaction locks the user's guard row like a memory write: an
        erasure since ``start`` raises :class:`MemoryWriteRaceError`, an
        opt-out stores nothing, and none can commit in between.  So does a
        session last updated (``session_time``) before the user's latest
        erasure and no longer stored: it was read before the erasure.

        Two round trips (measured: each statement sent alone was one, ~9 per
        call): the guard's lock, the opt-out and the existence query in one
        packet; the jobs (one multi-row INSERT), the audit row and the COMMIT
        in the next.  The payloads are built for the new jobs only.
        """
        jobs: dict[str, tuple[list[Turn], bool]] = {}
        for turns in exchanges:
            made = self._job(app, user, sid, turns)
            if made is not None:
                jobs.setdefault(made[0], (turns, made[1]))
        ids = list(jobs)
        probe = sid is not None and start.predates_erasure(session_time)

        async def once() -> int:
            now = _now()
            reads = guard.lock_reads(app, user)
            if ids:
                reads.append(pq.existing_jobs(app, user, ids))
            if probe:
                reads.append(guard.session_probe(app, user, sid or ""))
            async with gateway.raw(self._db) as tx:
                found = await tx.batch(reads)
                gen, missing = guard.locked_generation(found[0][1], found[1][1])
                if gen.opted_out:
                    return 0
                if gen.generation != start.generation or (probe and not found[-1][1]):
                    raise MemoryWriteRaceError(
                        "the user's memories were erased while this session was being queued, or the session "
                        "was read before the erasure: nothing was queued")
                seen = {r[0] for r in found[2][1]} if ids else set()
                new = [j for j in ids if j not in seen]
                writes: list[tuple[Any, Any]] = []
                if missing:  # the user's first write: the guard row, held from here as lock() would
                    writes.append(guard.first_row(app, user, now))
                if new:
                    writes.append((pq.RAW_ENQUEUE_JOBS, [
                        {"app_name": app, "user_id": user, "job_id": j, "session_id": sid, "now": now,
                         "generation": start.generation,
                         "payload": json.dumps({"turns": [t.as_dict() for t in jobs[j][0]], "meta": meta,
                                                "condense": jobs[j][1]}, default=str)}
                        for j in new
                    ]))
                if audit is not None:
                    audit.row_count = len(new)
                    writes.append((RAW_INSERT_AUDIT, audit.row()))
                await tx.batch([*writes, (COMMIT, None)])
                return len(new)

        async def audited_once() -> int:
            try:
                return await once()
            except BaseException:
                if audit is not None:
                    audit.rolled_back()
                raise

        # Idempotent (queued jobs are skipped): the loser of a race for the same new job runs again.
        count = await gateway.retrying(audited_once,
                                       when=lambda e: is_duplicate_key(e) or is_deadlock(e) or is_rerunnable(e),
                                       attempts=5, what="an extraction enqueue")
        self.stats["enqueued"] += count
        if count:
            self._wake_workers()
        return count

    # ------------------------------------------------------------- workers
    def start(self) -> None:
        """Starts this process's background worker (``mode="background"`` and ``workers > 0``); idempotent."""
        if self.settings.mode != "background" or self.settings.workers == 0:
            return
        self._events()
        if self._task is None or self._task.done():
            self._closing = False
            self._task = asyncio.get_running_loop().create_task(self._run(), name="adk-oceanbase-extraction")

    def _events(self) -> tuple[asyncio.Semaphore, asyncio.Event]:
        if self._slots is None or self._wake is None:
            self._slots = asyncio.Semaphore(max(self.settings.workers, 1))
            self._wake = asyncio.Event()
        return self._slots, self._wake

    def _wake_workers(self) -> None:
        if self._task is not None and not self._task.done():
            self._events()[1].set()
        else:
            self.start()

    async def _run(self) -> None:
        _, wake = self._events()
        while not self._closing:
            try:
                await self.drain()
            except Exception:  # the database went away for a moment: the next poll tries again
                logger.warning("extraction worker round failed; retrying in %.1f s", self.settings.poll_interval_s,
                               exc_info=True)
            try:
                await asyncio.wait_for(wake.wait(), self.settings.poll_interval_s)
            except asyncio.TimeoutError:
                pass
            wake.clear()

    async def drain(self) -> int:
        """Claims and processes due jobs until none is left; returns how many this call processed."""
        total = 0
        while not self._closing:
            done = await self._round()
            if done == 0:
                return total
            total += done
        return total

    async def _round(self) -> int:
        slots, _ = self._events()
        now = _now()
        stale = now - timedelta(seconds=self.settings.claim_lease_s)
        stmt, params = pq.due_jobs(now, stale, max(self.settings.workers, 1))
        async with gateway.connection(self._db) as conn:
            keys = (await conn.execute(stmt, params)).all()
        if not keys:
            return 0
        claim = uuid.uuid4().hex
        self._claims.add(claim)  # until the round settles: close() gives back what a cancelled round held
        by_user: dict[tuple[str, str], list[str]] = defaultdict(list)
        for app, user, job in keys:
            by_user[(app, user)].append(job)
        async with gateway.transaction(self._db) as conn:
            for (app, user), ids in by_user.items():
                await conn.execute(*pq.claim_jobs(app, user, ids, claim, now, stale))
        rows: list[Any] = []
        async with gateway.connection(self._db) as conn:
            for (app, user), ids in by_user.items():
                rows += (await conn.execute(*pq.claimed_jobs(app, user, ids, claim))).all()

        async def one(row: Any) -> None:
            self._active += 1
            try:
                async with slots:
                    await self._settle(row, claim)
            finally:
                self._active -= 1

        for outcome in await asyncio.gather(*(one(r) for r in rows), return_exceptions=True):
            if isinstance(outcome, Exception):  # its job's update failed: the lease hands it to a worker again
                logger.warning("extraction job left claimed (%s)", type(outcome).__name__)
        self._claims.discard(claim)
        return max(len(rows), 1)  # 0 claimed: another worker won them; look again

    async def _settle(self, row: Any, claim: str) -> None:
        """Processes one job; whatever happens to it, the others of the round go on."""
        app, user, job = row.app_name, row.user_id, row.job_id
        try:
            kind = await self._process(row)
        except MemoryWriteRaceError:
            self.stats["dropped"] += 1  # erased or opted out since it was queued: nothing to store
            await self._finish(app, user, job, claim)
        except Exception as exc:  # the extractor or the write failed: back to the queue, later
            attempts = int(row.attempts)
            out_of_attempts = attempts >= self.settings.max_attempts
            self.stats["failed_attempts"] += 1
            self.stats["failed_jobs"] += out_of_attempts
            logger.warning("extraction job failed (%s), attempt %d of %d", type(exc).__name__, attempts,
                           self.settings.max_attempts)
            next_at = _now() + timedelta(seconds=self.settings.backoff_s(attempts))
            stmt, params = pq.reschedule_job(app, user, job, claim, failed=out_of_attempts, next_at=next_at,
                                             error=type(exc).__name__)
            await self._execute(stmt, params)
        else:
            self.stats[kind] += 1
            await self._finish(app, user, job, claim)

    async def _finish(self, app: str, user: str, job: str, claim: str) -> None:
        await self._execute(*pq.complete_job(app, user, job, claim))

    async def _execute(self, stmt: Any, params: dict[str, Any]) -> None:
        async def once() -> None:
            async with gateway.transaction(self._db) as conn:
                await conn.execute(stmt, params)

        await gateway.retrying(once, when=is_rerunnable, attempts=3, what="an extraction job update")

    async def _process(self, row: Any) -> str:
        """Extracts one job's memories and writes them; returns ``condensed`` or ``raw``."""
        app, user, sid = row.app_name, row.user_id, row.session_id
        payload = json.loads(row.payload)
        turns = [Turn.from_dict(t) for t in payload["turns"]]
        meta = dict(payload.get("meta") or {})
        events = to_events(turns)
        if payload.get("condense") and self._extractor is not None:
            ex = self._extractor
            stmt, params = q.existing_ids(app, user, [row.job_id])
            async with gateway.connection(self._db) as conn:
                if (await conn.execute(stmt, params)).first() is not None:
                    return "condensed"  # written before its job was deleted (a crash in between)
            related = await self._related(app, user, " ".join(t.text for t in turns))
            self.stats["extractor_calls"] += 1
            facts = await ex.extract(events, related)
            drafts = ex.drafts(app, user, sid, events, facts, meta)
            length = exchange_length(turns)
            for d in drafts:
                d.condensation = condensation(d.content, length, True)
            kind = "condensed"
        else:
            drafts = turn_drafts(app, user, sid, events, self._memory_settings, meta, [t.pos for t in turns])
            for d in drafts:
                d.condensation = condensation(d.content, len(d.content), False)
            kind = "raw"
        await self._write(app, user, sid, drafts, int(row.generation))
        return kind

    # --------------------------------------------------------- flush/close
    async def flush(self) -> None:
        """Returns once no job is due nor held by a live worker (this process's or another's).

        Jobs waiting out a retry backoff do not hold it up; nor do ``failed`` ones.
        """
        async def settled() -> None:
            await self.drain()
            stale = _now() - timedelta(seconds=self.settings.claim_lease_s)
            async with gateway.connection(self._db) as conn:
                running = int((await conn.execute(*pq.running_elsewhere("", stale))).scalar() or 0)
                due = (await conn.execute(*pq.due_jobs(_now(), stale, 1))).first()
            if running or due is not None or self._active:
                raise _Busy()

        # Another worker (another process, or this one's background round) holds jobs: look again
        # until they settle; a dead one's claims fall due after the lease and drain() takes them.
        await gateway.retrying(settled, when=lambda exc: isinstance(exc, _Busy), attempts=sys.maxsize,
                               pause_s=lambda n: min(0.02 * n, 1.0), what="waiting for extraction workers")

    async def counts(self, app: str | None = None) -> dict[str, dict[str, int]]:
        """Jobs per app and status: ``pending``, ``running``, ``done``, ``failed``."""
        async with gateway.connection(self._db) as conn:
            rows = (await conn.execute(*pq.job_counts(app))).all()
        out: dict[str, dict[str, int]] = {}
        for app_row, status, n in rows:
            out.setdefault(app_row, {})[status] = int(n)
        return out

    async def close(self) -> None:
        """Stops the worker: running extractions get ``close_timeout_s``, then their jobs go back to the queue."""
        self._closing = True
        task, self._task = self._task, None
        if task is not None:
            self._events()[1].set()
            try:
                await asyncio.wait_for(asyncio.shield(task), self.settings.close_timeout_s)
            except (asyncio.TimeoutError, Exception):
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        for claim in list(self._claims):
            try:
                await self._execute(*pq.release_claims(claim))
            except Exception:  # the lease hands them to another worker anyway
                logger.warning("could not give back extraction claims; they return after the lease", exc_info=True)
        self._claims.clear()
