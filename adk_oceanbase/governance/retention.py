"""Retention: per-app TTLs for sessions and memories, a TTL for the audit log, swept in bounded batches.

``sweep()`` deletes what expired, one short transaction per batch (100
sessions, 500 memories, 1,000 audit rows by default), so no lock is held for
long and a sweep interrupted anywhere leaves whole sessions and whole
memories behind.  A session's rows go in the order appends take them: the
session row is locked first (expiry re-checked under the lock, so a session
appended to meanwhile survives), then its events (archived ones too), session
state and debug archive entries, then the session row.  User- and app-scoped
state belongs to no session and is kept.

Expiry counts from the server's clock, never from times callers supply
(issue 33: an event stamped 40 days ago by its client must not make a
session appended to seconds ago look 40 days old):

* a session expires when the server has not written it (create, append,
  import: ``touched_at``) for ``session_ttl``.  Reads do not extend its life:
  ADK's Runner appends on every turn, so a session in use is written, while
  ``get_session`` alone is also an operator's export or a UI showing
  history, and must neither keep data alive nor turn the hot read into a write;
* a memory expires when it was neither stored (insert, a merged repeat:
  ``stored_at``) nor served to an agent by a search (``last_served_at``)
  within ``memory_ttl``: "not used for N days";
* a tombstone (a memory its user deleted) counts from the deletion, and is
  kept while any event it was derived from is still stored in this database:
  re-ingesting that session would otherwise bring the memory back.  Sources
  held elsewhere (ADK's in-memory sessions, another store) cannot be seen:
  keep ``memory_ttl`` longer than their lifetime;
* an audit row expires ``audit_ttl`` after it was written (``at``); the TTL
  is the deployment's, for every app (:class:`RetentionPolicy`).

A sweep without ``now`` reads the database clock, the one that wrote those
columns.  On a database without our tables it finds nothing to do
(``SweepCounts.tables`` is False) and creates nothing.  ``adk-oceanbase gc``
and :class:`RetentionWorker` (an optional background task) both call ``sweep()``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable, Mapping, Sequence

from ..audit import AuditEntry
from ..engine import Database
from ..errors import SchemaMissingError, ValidationError, typed_errors
from ..validation import check_id
from . import extensions
from . import langgraph_sweep as lg
from . import queries as q
from .agno_retention import agno_apps, sweep_agno_sessions
from ..gateway import connection, transaction

__all__ = ["Retention", "RetentionPolicy", "RetentionWorker", "SweepCounts", "parse_duration", "sweep"]

logger = logging.getLogger(__name__)

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")


def parse_duration(value: str | float | int | timedelta) -> float:
    """Seconds in ``"30d"``, ``"12h"``, ``"90m"``, ``"45s"``, ``"2w"``, a number of seconds or a ``timedelta``."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str) and (m := _DURATION.match(value.lower())):
        seconds = float(m.group(1)) * _UNITS[m.group(2) or "s"]
    else:
        raise ValidationError(f"a duration is a number with s, m, h, d or w (e.g. '30d'), not {value!r}")
    if seconds <= 0:
        raise ValidationError(f"a TTL must be positive, got {value!r}")
    return seconds


def _parse_fields(obj: Any, names: Iterable[str]) -> None:
    for name in names:
        value = getattr(obj, name)
        if value is not None:
            object.__setattr__(obj, name, parse_duration(value))


@dataclass(frozen=True)
class Retention:
    """TTLs of one app; ``None`` keeps that kind of data forever.

    Durations are ``"30d"``-style strings, seconds or ``timedelta`` (stored as seconds).
    """

    session_ttl: float | str | timedelta | None = None
    """Sessions the server has not written (created, appended to) for this long are deleted with everything they own."""

    memory_ttl: float | str | timedelta | None = None
    """Memories neither stored nor served by a search for this long are deleted (tombstones: see the module)."""

    thread_ttl: float | str | timedelta | None = None
    """LangGraph threads (``OceanBaseSaver``) with no checkpoint written for this long are deleted whole
    (:mod:`.langgraph_sweep`; expired Store items go in every sweep)."""

    def __post_init__(self) -> None:
        _parse_fields(self, [f.name for f in fields(self)])


@dataclass(frozen=True)
class RetentionPolicy:
    """The default TTLs plus per-app ones; an app listed in ``apps`` uses its entry only (no field-wise fallback).

    ``audit_ttl`` is the audit log's own retention, one for the whole
    deployment (its rows outlive the sessions, memories and even the users
    they record).  ``None``, the default, keeps audit rows until you choose a
    period: deleting evidence is a compliance decision (regimes ask for a
    minimum, from months to years), never a side effect of a session TTL.

    Example:
        >>> p = RetentionPolicy(Retention(session_ttl="30d"), apps={"support": Retention("7d", "90d")}, audit_ttl="400d")
        >>> p.for_app("support").memory_ttl, p.for_app("other").session_ttl, p.audit_ttl
        (7776000.0, 2592000.0, 34560000.0)
    """

    default: Retention = field(default_factory=Retention)
    apps: Mapping[str, Retention] = field(default_factory=dict)
    audit_ttl: float | str | timedelta | None = None
    """``audit_log`` rows older than this (by their ``at``) are deleted: of every app, or of the sweep's ``apps``."""

    def __post_init__(self) -> None:
        _parse_fields(self, ["audit_ttl"])

    def for_app(self, app: str) -> Retention:
        return self.apps.get(app, self.default)


_COUNTED = (
    "sessions", "events", "state_rows", "debug_entries", "memories", "tombstones_kept", "audit_rows",
    "lg_threads", "lg_checkpoints", "lg_store_items", "procedure_runs",
)


@dataclass
class SweepCounts:
    """What a sweep deleted (or, with ``dry_run``, would delete; ``None``: not counted in a dry run)."""

    sessions: int = 0
    events: int = 0
    state_rows: int | None = 0
    debug_entries: int | None = 0
    memories: int = 0
    tombstones_kept: int = 0
    """Expired tombstones kept because an event they were derived from is still stored."""
    audit_rows: int = 0
    lg_threads: int = 0
    """LangGraph threads deleted by ``thread_ttl`` (with their checkpoints, blobs and writes)."""
    lg_checkpoints: int = 0
    lg_store_items: int = 0
    """LangGraph Store items past their own TTL."""
    procedure_runs: int = 0
    """Procedural memory runs (issue 27) not stored for ``memory_ttl``, taken out of the aggregates."""
    dry_run: bool = False
    tables: bool = True
    """False: the database has no adk-oceanbase tables, so there was nothing to sweep (none were created)."""

    def add(self, other: "SweepCounts") -> None:
        for name in _COUNTED:
            mine, theirs = getattr(self, name), getattr(other, name)
            setattr(self, name, None if mine is None or theirs is None else mine + theirs)

    def as_dict(self) -> dict[str, Any]:
        """The counts as one JSON-ready object (``adk-oceanbase gc --json``)."""
        return {**{name: getattr(self, name) for name in _COUNTED}, "dry_run": self.dry_run, "tables": self.tables}


async def _clock(db: Database, now: float | datetime | None) -> datetime:
    """The sweep's "now" as naive UTC: ``now`` when given, else the database clock (the one that wrote the columns)."""
    if now is None:
        async with connection(db) as conn:
            return (await conn.execute(q.DB_NOW)).scalar_one()
    if isinstance(now, datetime):
        return now if now.tzinfo is None else now.astimezone(timezone.utc).replace(tzinfo=None)
    return datetime.fromtimestamp(float(now), tz=timezone.utc).replace(tzinfo=None)


async def sweep(
    db: Database,
    policy: RetentionPolicy,
    *,
    apps: Iterable[str] | None = None,
    dry_run: bool = False,
    now: float | datetime | None = None,
    session_batch: int = 100,
    memory_batch: int = 500,
    audit_batch: int = 1000,
    audit: bool = False,
) -> SweepCounts:
    """Deletes expired sessions, memories and audit rows of ``apps`` (default: every app with data); returns the counts.

    Each batch is its own transaction; run it as often as you like (a second
    run right after finds nothing).  ``now`` (epoch seconds or naive-UTC
    datetime; default the database clock) is for tests and replays.
    ``audit=True`` writes one ``retention_sweep`` row to ``audit_log`` in each
    deleting batch's transaction (the app and the rows it deleted).
    A schema behind this package's raises ``SchemaOutdatedError`` naming the command to run.
    """
    for name, size in (("session_batch", session_batch), ("memory_batch", memory_batch), ("audit_batch", audit_batch)):
        if not (isinstance(size, int) and not isinstance(size, bool) and size >= 1):
            raise ValidationError(f"{name} must be a positive integer, got {size!r}")
    wanted = None if apps is None else [check_id("app_name", a) for a in apps]
    total = SweepCounts(dry_run=dry_run, state_rows=None if dry_run else 0, debug_entries=None if dry_run else 0)
    from ..migrations import check_schema  # here, as the services do: importing governance loads no Alembic

    try:
        with typed_errors():
            await check_schema(db)
    except SchemaMissingError:
        logger.info("retention: %s has no adk-oceanbase tables; nothing to do", db.config.redacted_url())
        total.tables = False
        return total
    clock = await _clock(db, now)
    if wanted is None:
        async with connection(db) as conn:
            found = {r[0] for r in (await conn.execute(q.select_apps())).all()}
            for query in (lg.APPS, agno_apps(), *extensions.retention_apps()):  # + procedural memory's (issue 27)
                found |= {r[0] for r in (await conn.execute(query)).all()}
            targets = sorted(found)
    else:
        targets = wanted
    for app in targets:
        ttl = policy.for_app(app)
        if ttl.session_ttl is not None:
            cutoff = clock - timedelta(seconds=ttl.session_ttl)
            total.add(await _sweep_sessions(db, app, cutoff, session_batch, dry_run, audit))
            # Agno sessions count as sessions, their runs as events (adk_oceanbase.agno)
            agno_sessions, agno_runs = await sweep_agno_sessions(db, app, cutoff, session_batch, dry_run, audit)
            total.sessions += agno_sessions
            total.events += agno_runs
        if ttl.memory_ttl is not None:
            cutoff = clock - timedelta(seconds=ttl.memory_ttl)
            deleted, kept = await _sweep_memories(db, app, cutoff, memory_batch, dry_run, audit)
            total.memories += deleted
            total.tombstones_kept += kept
            for field, sweep in extensions.retention_sweeps().items():  # procedural memory's runs (issue 27)
                swept = await sweep(db, app, cutoff, batch=memory_batch, dry_run=dry_run, audit=audit)
                setattr(total, field, getattr(total, field) + swept)
            if not dry_run:  # finished extraction jobs (memory.pipeline): derived rows, not counted
                async with transaction(db) as conn:
                    await conn.execute(q.delete_finished_jobs(app, cutoff))
        if ttl.thread_ttl is not None:
            cutoff = clock - timedelta(seconds=ttl.thread_ttl)
            threads, checkpoints = await lg.sweep_threads(db, app, cutoff, session_batch, dry_run, audit)
            total.lg_threads += threads
            total.lg_checkpoints += checkpoints
        total.lg_store_items += await lg.sweep_store(db, app, dry_run, audit)
    if policy.audit_ttl is not None:
        cutoff = clock - timedelta(seconds=policy.audit_ttl)
        total.audit_rows = await _sweep_audit(db, cutoff, wanted, audit_batch, dry_run, audit)
    if (total.sessions or total.memories or total.audit_rows or total.lg_threads or total.lg_store_items
            or total.procedure_runs):
        logger.info("retention %s: %s", "dry run" if dry_run else "sweep", total)
    return total


async def _sweep_sessions(db: Database, app: str, cutoff: datetime, batch: int, dry_run: bool, audit: bool) -> SweepCounts:
    if dry_run:
        async with connection(db) as conn:
            sessions, events = (await conn.execute(q.expired_sessions_totals(app, cutoff))).one()
        return SweepCounts(sessions=int(sessions), events=int(events), state_rows=None, debug_entries=None, dry_run=True)
    out = SweepCounts()
    while True:
        async with connection(db) as conn:
            keys = [tuple(r) for r in (await conn.execute(q.expired_sessions(app, cutoff, batch))).all()]
        if not keys:
            return await _drop_orphan_checkpoints(db, app, out)
        async with transaction(db) as conn:
            locked = [tuple(r) for r in (await conn.execute(q.lock_expired_sessions(app, keys, cutoff))).all()]
            if locked:
                out.events += (await conn.execute(q.delete_sessions_events(app, locked))).rowcount
                out.state_rows += (await conn.execute(q.delete_sessions_state(app, locked))).rowcount
                out.debug_entries += (await conn.execute(q.delete_sessions_debug(app, locked))).rowcount
                await conn.execute(q.delete_sessions_checkpoints(app, locked))  # derived rows: not counted
                out.sessions += (await conn.execute(q.delete_sessions_rows(app, locked))).rowcount
                if audit:
                    await conn.execute(AuditEntry("retention_sweep", app, row_count=len(locked)).insert())
        if len(keys) < batch:
            return await _drop_orphan_checkpoints(db, app, out)


async def _drop_orphan_checkpoints(db: Database, app: str, out: SweepCounts) -> SweepCounts:
    """Turn-snapshot checkpoints of sessions deleted since the last sweep (derived rows: not counted)."""
    async with transaction(db) as conn:
        await conn.execute(q.delete_orphan_checkpoints(app))
    return out


def _event_ids(raw: str | None) -> list[str]:
    try:
        ids = json.loads(raw) if raw else []
    except ValueError:
        return []
    return [str(i) for i in ids] if isinstance(ids, list) else []


async def _sourced_tombstones(conn: Any, app: str, rows: Sequence[Any]) -> set[tuple[str, str]]:
    """The batch's tombstones that an event still stored here could re-create: kept.

    One query per user with tombstones in the batch, over the user's events
    (the unique key's ``(app_name, user_id)`` prefix).
    """
    wanted: dict[str, dict[str, list[str]]] = {}
    for r in rows:
        if r.embed_status == "deleted" and (ids := _event_ids(r.event_ids)):
            wanted.setdefault(r.user_id, {})[r.memory_id] = ids
    kept: set[tuple[str, str]] = set()
    for user, tombstones in wanted.items():
        every = sorted({i for ids in tombstones.values() for i in ids})
        stored = {r[0] for r in (await conn.execute(q.stored_events(app, user, every))).all()}
        kept.update((user, mid) for mid, ids in tombstones.items() if stored.intersection(ids))
    return kept


async def _sweep_memories(
    db: Database, app: str, cutoff: datetime, batch: int, dry_run: bool, audit: bool
) -> tuple[int, int]:
    """``(deleted, tombstones kept)``; a dry run walks the same batches and deletes nothing."""
    deleted = kept = 0
    after = None
    while True:
        async with connection(db) as conn:
            rows = (await conn.execute(q.expired_memories(app, cutoff, batch, after))).all()
        if not rows:
            return deleted, kept
        after = (rows[-1].stored_at, rows[-1].user_id, rows[-1].memory_id)
        # The source check runs in the deleting transaction, next to the re-checked delete.
        async with (connection(db) if dry_run else transaction(db)) as conn:
            sourced = await _sourced_tombstones(conn, app, rows)
            keys = [(r.user_id, r.memory_id) for r in rows if (r.user_id, r.memory_id) not in sourced]
            kept += len(sourced)
            if dry_run:
                deleted += len(keys)
            elif keys:
                n = (await conn.execute(q.delete_expired_memories(app, keys, cutoff))).rowcount
                if n:
                    await conn.execute(q.delete_expired_postings(app, keys))
                    if audit:
                        await conn.execute(AuditEntry("retention_sweep", app, row_count=n).insert())
                deleted += n  # fewer than keys: a search served some meanwhile; they stay
        if len(rows) < batch:
            return deleted, kept


async def _sweep_audit(
    db: Database, cutoff: datetime, apps: Sequence[str] | None, batch: int, dry_run: bool, audit: bool
) -> int:
    """Deletes ``audit_log`` rows written before ``cutoff`` (of ``apps``, else all), oldest first."""
    if dry_run:
        async with connection(db) as conn:
            return int((await conn.execute(q.count_expired_audit_rows(cutoff, apps))).scalar() or 0)
    deleted = 0
    while True:
        async with connection(db) as conn:
            rows = (await conn.execute(q.expired_audit_rows(cutoff, apps, batch))).all()
        if not rows:
            return deleted
        async with transaction(db) as conn:
            n = (await conn.execute(q.delete_audit_rows([r.audit_id for r in rows], cutoff))).rowcount
            if audit and n:
                per_app: dict[str, int] = {}
                for r in rows:
                    per_app[r.app_name] = per_app.get(r.app_name, 0) + 1
                for app, count in sorted(per_app.items()):  # the record is newer than the cutoff: it stays
                    await conn.execute(AuditEntry("retention_sweep", app, row_count=count).insert())
        deleted += n
        if len(rows) < batch or n == 0:
            return deleted


class RetentionWorker:
    """Runs :func:`sweep` every ``interval_s`` in a background task of the running event loop.

    Example:
        >>> async def main(db):
        ...     worker = RetentionWorker(db, RetentionPolicy(Retention(session_ttl="30d")), interval_s=3600)
        ...     worker.start()
        ...     ...
        ...     await worker.close()
    """

    def __init__(
        self,
        database: Database,
        policy: RetentionPolicy,
        *,
        interval_s: float = 3600.0,
        apps: Iterable[str] | None = None,
        audit: bool = False,
    ):
        if not interval_s > 0:
            raise ValidationError("interval_s must be positive")
        self._db = database
        self._policy = policy
        self._interval = float(interval_s)
        self._apps = list(apps) if apps is not None else None
        self._audit = audit
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.last: SweepCounts | None = None
        """The counts of the latest finished sweep."""
        self.sweeps = 0
        """How many sweeps finished (failed ones are logged and not counted)."""

    def start(self) -> None:
        """Starts the task (first sweep at once); a second call is a no-op while it runs."""
        if self._task is None or self._task.done():
            self._stop.clear()
            self._task = asyncio.get_running_loop().create_task(self._run(), name="adk-oceanbase-retention")

    async def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.last = await sweep(self._db, self._policy, apps=self._apps, audit=self._audit)
                self.sweeps += 1
            except Exception:  # keep sweeping later: a database outage must not end the worker
                logger.exception("retention sweep failed; retrying in %.0f s", self._interval)
            try:
                await asyncio.wait_for(self._stop.wait(), self._interval)
            except asyncio.TimeoutError:
                pass

    async def close(self, timeout_s: float = 10.0) -> None:
        """Stops the task: lets the batch in flight finish for up to ``timeout_s``, then cancels it.

        A cancelled batch rolls back whole, so no session is left half-deleted.
        """
        task, self._task = self._task, None
        if task is None:
            return
        self._stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout_s)
        except asyncio.TimeoutError:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

    async def __aenter__(self) -> "RetentionWorker":
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
