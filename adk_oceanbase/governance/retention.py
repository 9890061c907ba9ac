"""Retention: per-app TTLs for sessions (by last update) and memories (by last access), swept in bounded batches.

``sweep()`` deletes what expired, one short transaction per batch (100
sessions, 500 memories by default), so no lock is held for long and a sweep
interrupted anywhere leaves whole sessions and whole memories behind.  A
session's rows go in the order appends take them: the session row is locked
first (expiry re-checked under the lock, so a session appended to meanwhile
survives), then its events (archived ones too), session state and debug
archive entries, then the session row.  User- and app-scoped state belongs to
no session and is kept.

A memory expires when neither its ``created_at`` nor its ``last_accessed_at``
(stamped when search returns it) is within the TTL; tombstones of deleted
memories expire the same way.  ``adk-oceanbase gc`` and
:class:`RetentionWorker` (an optional background task) both call ``sweep()``.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta, timezone
from typing import Iterable, Mapping

from ..audit import AuditEntry
from ..engine import Database
from ..errors import ValidationError
from ..sessions.codec import check_id
from . import queries as q
from ._tx import connection, transaction

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


@dataclass(frozen=True)
class Retention:
    """TTLs of one app; ``None`` keeps that kind of data forever.

    Durations are ``"30d"``-style strings, seconds or ``timedelta`` (stored as seconds).
    """

    session_ttl: float | str | timedelta | None = None
    """Sessions not updated (no event appended) for this long are deleted with everything they own."""

    memory_ttl: float | str | timedelta | None = None
    """Memories neither created nor returned by a search for this long are deleted."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                object.__setattr__(self, f.name, parse_duration(value))


@dataclass(frozen=True)
class RetentionPolicy:
    """The default TTLs plus per-app ones; an app listed in ``apps`` uses its entry only (no field-wise fallback).

    Example:
        >>> p = RetentionPolicy(Retention(session_ttl="30d"), apps={"support": Retention("7d", "90d")})
        >>> p.for_app("support").memory_ttl, p.for_app("other").session_ttl
        (7776000.0, 2592000.0)
    """

    default: Retention = field(default_factory=Retention)
    apps: Mapping[str, Retention] = field(default_factory=dict)

    def for_app(self, app: str) -> Retention:
        return self.apps.get(app, self.default)


@dataclass
class SweepCounts:
    """What a sweep deleted (or, with ``dry_run``, would delete; ``None``: not counted in a dry run)."""

    sessions: int = 0
    events: int = 0
    state_rows: int | None = 0
    debug_entries: int | None = 0
    memories: int = 0
    dry_run: bool = False

    def add(self, other: "SweepCounts") -> None:
        for name in ("sessions", "events", "state_rows", "debug_entries", "memories"):
            mine, theirs = getattr(self, name), getattr(other, name)
            setattr(self, name, None if mine is None or theirs is None else mine + theirs)


async def sweep(
    db: Database,
    policy: RetentionPolicy,
    *,
    apps: Iterable[str] | None = None,
    dry_run: bool = False,
    now: float | None = None,
    session_batch: int = 100,
    memory_batch: int = 500,
    audit: bool = False,
) -> SweepCounts:
    """Deletes expired sessions and memories of ``apps`` (default: every app with data); returns the counts.

    Each batch is its own transaction; run it as often as you like (a second
    run right after finds nothing).  ``now`` (epoch seconds) is for tests and replays.
    ``audit=True`` writes one ``retention_sweep`` row to ``audit_log`` in each
    deleting batch's transaction (the app and the rows it deleted).
    """
    if not (isinstance(session_batch, int) and session_batch >= 1 and isinstance(memory_batch, int) and memory_batch >= 1):
        raise ValidationError("session_batch and memory_batch must be positive integers")
    now = time.time() if now is None else float(now)
    if apps is None:
        async with connection(db) as conn:
            targets = sorted({r[0] for r in (await conn.execute(q.select_apps())).all()})
    else:
        targets = [check_id("app_name", a) for a in apps]
    total = SweepCounts(dry_run=dry_run, state_rows=None if dry_run else 0, debug_entries=None if dry_run else 0)
    for app in targets:
        ttl = policy.for_app(app)
        if ttl.session_ttl is not None:
            total.add(await _sweep_sessions(db, app, now - ttl.session_ttl, session_batch, dry_run, audit))
        if ttl.memory_ttl is not None:
            cutoff = datetime.fromtimestamp(now - ttl.memory_ttl, tz=timezone.utc).replace(tzinfo=None)
            total.memories += await _sweep_memories(db, app, cutoff, memory_batch, dry_run, audit)
    if total.sessions or total.memories:
        logger.info("retention %s: %s", "dry run" if dry_run else "sweep", total)
    return total


async def _sweep_sessions(db: Database, app: str, cutoff: float, batch: int, dry_run: bool, audit: bool) -> SweepCounts:
    if dry_run:
        async with connection(db) as conn:
            sessions, events = (await conn.execute(q.expired_sessions_totals(app, cutoff))).one()
        return SweepCounts(sessions=int(sessions), events=int(events), state_rows=None, debug_entries=None, dry_run=True)
    out = SweepCounts()
    while True:
        async with connection(db) as conn:
            keys = [tuple(r) for r in (await conn.execute(q.expired_sessions(app, cutoff, batch))).all()]
        if not keys:
            return out
        async with transaction(db) as conn:
            locked = [tuple(r) for r in (await conn.execute(q.lock_expired_sessions(app, keys, cutoff))).all()]
            if locked:
                out.events += (await conn.execute(q.delete_sessions_events(app, locked))).rowcount
                out.state_rows += (await conn.execute(q.delete_sessions_state(app, locked))).rowcount
                out.debug_entries += (await conn.execute(q.delete_sessions_debug(app, locked))).rowcount
                out.sessions += (await conn.execute(q.delete_sessions_rows(app, locked))).rowcount
                if audit:
                    await conn.execute(AuditEntry("retention_sweep", app, row_count=len(locked)).insert())
        if len(keys) < batch:
            return out


async def _sweep_memories(db: Database, app: str, cutoff: datetime, batch: int, dry_run: bool, audit: bool) -> int:
    if dry_run:
        async with connection(db) as conn:
            return int((await conn.execute(q.count_expired_memories(app, cutoff))).scalar() or 0)
    deleted = 0
    while True:
        async with connection(db) as conn:
            keys = [tuple(r) for r in (await conn.execute(q.expired_memory_ids(app, cutoff, batch))).all()]
        if not keys:
            return deleted
        async with transaction(db) as conn:
            n = (await conn.execute(q.delete_expired_memories(app, keys, cutoff))).rowcount
            if n:
                await conn.execute(q.delete_expired_postings(app, keys))
            if audit and n:
                await conn.execute(AuditEntry("retention_sweep", app, row_count=n).insert())
        deleted += n
        # n == 0: every row of the batch was read by a search meanwhile; a later sweep continues
        if len(keys) < batch or n == 0:
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
