"""The audit log: which operation touched whose data, when, how long it took, and whether it failed.

One ``audit_log`` row per audited call, holding ids and numbers only (never
content, so the log is no second copy of personal data).  Issue #10 and seed
000 §8.1.4 ask for it; the choices:

* **Writes** (create/delete session, append, compaction, memory add/delete)
  put their row in the *same transaction* as the write: no committed write
  without its record, no record of a write that rolled back.
* ``duration_ms`` runs from the call until its row is handed to the
  database.  On the two hot paths (``create_session``, ``append_event``)
  the row travels in the same packet as the write statements, so the
  server's time for that packet (~1 ms on seekdb) is not in it; validation,
  redaction, encoding and the wait for a pooled connection are.  Measured
  (``benchmarks/governance.py``): +~0.1 ms per append this way, +~0.4 ms
  (15% of an append) when the row rode with the COMMIT instead.  Everywhere
  else (compaction, deletes, memory writes, the read and error rows) it
  covers the whole call but the commit.
* **Failed writes** get a row with ``status='error'`` and the error's class
  name in ``error_code``, written afterwards in a small transaction of its
  own (the failed one rolled back).  Validation errors are not recorded:
  they are raised before any I/O, write nothing, and their ids may not even
  fit the columns.  If the error row itself cannot be written (the database
  is gone), that is logged and the original error is raised.
* **Reads** (get/list sessions, memory search) are sampled by
  :attr:`AuditSettings.read_sample` (default 0: off) and written after the
  read, in their own transaction: a read must not pay for a write it does not
  need, and a busy agent reads far more often than it writes.
* A call made *inside* an audited call (``search_memory`` calls ``search``;
  LLM extraction searches while adding) is part of the outer record.

* **Who** (issue 33): ``actor`` is the name set by :func:`audit_actor` around
  the call, else :attr:`AuditSettings.actor`, else NULL.  The CLI sets
  ``cli:<os user>`` or ``--actor``.
* **How long**: rows are append-only.  ``delete_user_data`` keeps the erased
  user's rows (ids, counts, timings and class names: no column holds content)
  and adds its own ``delete_user`` row; the audit retention removes them.

Auditing is off unless a service gets ``audit=AuditSettings(...)``; pass the
same settings object to the session and the memory service.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import logging
import random
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, AsyncContextManager, Awaitable, Callable, Iterator, TypeVar

from sqlalchemy import Insert, insert
from sqlalchemy.ext.asyncio import AsyncConnection

from .errors import ConfigurationError, ValidationError, driver_error_code
from .schema import ID_LEN, audit_log

__all__ = [
    "OPERATIONS",
    "RAW_INSERT_AUDIT",
    "RAW_INSERT_AUDIT_SELECT",
    "AuditEntry",
    "AuditSettings",
    "Auditor",
    "audited",
    "by_appended_event",
    "by_ids",
    "by_session",
    "audit_actor",
    "current_actor",
    "current_entry",
]

logger = logging.getLogger(__name__)

OPERATIONS = (
    "create_session", "get_session", "list_sessions", "delete_session", "append", "compaction",
    "memory_add", "memory_search", "memory_delete", "retention_sweep", "delete_user",
    "memory_taint", "memory_untaint", "memory_opt_out", "memory_opt_in", "memory_restore",
    "procedure_extract", "procedure_outcome", "procedure_recall", "procedure_taint",
)
"""Every value of ``audit_log.operation``."""

RAW_INSERT_AUDIT = """
INSERT INTO audit_log
    (at, operation, app_name, user_id, session_id, event_id, invocation_id,
     duration_ms, status, error_code, row_count, actor)
VALUES
    (%(at)s, %(operation)s, %(app_name)s, %(user_id)s, %(session_id)s, %(event_id)s, %(invocation_id)s,
     %(duration_ms)s, %(status)s, %(error_code)s, %(row_count)s, %(actor)s)
"""
"""The audit row as driver-level SQL, for the batches of :mod:`adk_oceanbase.rawtx`."""

RAW_INSERT_AUDIT_SELECT = """
INSERT INTO audit_log
    (at, operation, app_name, user_id, session_id, event_id, invocation_id,
     duration_ms, status, error_code, row_count, actor)
SELECT %(at)s, %(operation)s, %(app_name)s, %(user_id)s, %(session_id)s, %(event_id)s, %(invocation_id)s,
       %(duration_ms)s, %(status)s, %(error_code)s, %(row_count)s, %(actor)s
  FROM DUAL
"""
"""``RAW_INSERT_AUDIT`` as ``INSERT ... SELECT``: the caller appends the ``WHERE`` that decides whether it is written.

The append's packet writes its row only if its event row went in (see
``sessions.queries.APPENDED``), so an append whose compare-and-set missed
records nothing in its own packet (its error row is written afterwards, see
``audited``).
"""


@dataclass(frozen=True)
class AuditSettings:
    """Turns the audit log on; share one instance between the session and memory services.

    Args:
        read_sample: fraction of reads (get/list sessions, memory search)
            recorded, 0..1.  0 (the default) records writes only.
        actor: who the service acts for, in ``audit_log.actor`` (e.g.
            ``"svc:booking-agent"``) unless a call runs inside
            :func:`audit_actor`; ``None`` leaves it empty.

    Example:
        >>> audit = AuditSettings(read_sample=0.05)
        >>> # OceanBaseSessionService(url, audit=audit); OceanBaseMemoryService(database=..., audit=audit)
    """

    read_sample: float = 0.0
    actor: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.read_sample, (int, float)) or not 0.0 <= self.read_sample <= 1.0:
            raise ConfigurationError(f"AuditSettings.read_sample must be a number between 0 and 1, got {self.read_sample!r}")
        if self.actor is not None:
            _check_actor(self.actor)


def _check_actor(actor: Any) -> str:
    if not isinstance(actor, str) or not actor or len(actor) > ID_LEN:
        raise ValidationError(f"an audit actor must be a non-empty string of at most {ID_LEN} characters, got {actor!r}")
    return actor


_actor: contextvars.ContextVar[str | None] = contextvars.ContextVar("adk_oceanbase_audit_actor", default=None)


@contextlib.contextmanager
def audit_actor(actor: str) -> Iterator[None]:
    """Records ``actor`` as who made the audited calls inside the block (this task and the tasks it starts).

    Wins over :attr:`AuditSettings.actor`; the CLI wraps each command in it
    (``--actor``, default ``cli:<os user>``).

    Example:
        >>> with audit_actor("admin:alice"):
        ...     pass  # await sessions.delete_user_data(app_name="app", user_id="u1")
    """
    token = _actor.set(_check_actor(actor))
    try:
        yield
    finally:
        _actor.reset(token)


def current_actor() -> str | None:
    """The actor set by the innermost :func:`audit_actor`, if any."""
    return _actor.get()


def _id(value: Any, limit: int = ID_LEN) -> str | None:
    """An id as stored: text cut to its column (an audit row must never fail on what it records)."""
    return None if value is None else str(value)[:limit]


def _utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


@dataclass
class AuditEntry:
    """One audited call in progress; the service fills in what it learns (a new session id, row counts)."""

    operation: str
    app_name: str
    user_id: str | None = None
    session_id: str | None = None
    event_id: str | None = None
    invocation_id: str | None = None
    row_count: int | None = None
    actor: str | None = field(default_factory=current_actor)
    """Who made the call; the audited decorator falls back to :attr:`AuditSettings.actor`."""
    started: float = field(default_factory=time.perf_counter)
    taken: bool = False
    """Set once a transaction took the row (:meth:`row`); otherwise the decorator records the call alone."""

    def row(self, status: str = "ok", error_code: str | None = None) -> dict[str, Any]:
        """The ``audit_log`` values, with the duration measured now."""
        self.taken = True
        return {
            "at": _utcnow(),
            "operation": self.operation,
            "app_name": _id(self.app_name),
            "user_id": _id(self.user_id),
            "session_id": _id(self.session_id),
            "event_id": _id(self.event_id),
            "invocation_id": _id(self.invocation_id, 256),
            "duration_ms": (time.perf_counter() - self.started) * 1000.0,
            "status": status,
            "error_code": error_code,
            "row_count": self.row_count,
            "actor": self.actor,
        }

    def rolled_back(self) -> None:
        """The transaction that took the row rolled back: nothing was written (yet)."""
        self.taken, self.row_count = False, 0

    def insert(self) -> Insert:
        """The row as a Core statement, for a transaction on a SQLAlchemy connection."""
        return insert(audit_log).values(**self.row())


_current: contextvars.ContextVar[AuditEntry | None] = contextvars.ContextVar("adk_oceanbase_audit", default=None)
_inside: contextvars.ContextVar[bool] = contextvars.ContextVar("adk_oceanbase_audited_call", default=False)


def current_entry() -> AuditEntry | None:
    """The entry of the audited write running in this task, if auditing is on (the write adds it to its transaction)."""
    return _current.get()


class Auditor:
    """A service's audit switch and sampler (``None`` settings: everything is a no-op)."""

    def __init__(self, settings: AuditSettings | None, *, sample: Callable[[], float] = random.random):
        self.settings = settings
        self._sample = sample

    @property
    def enabled(self) -> bool:
        return self.settings is not None

    def wants_read(self) -> bool:
        return self.settings is not None and self._sample() < self.settings.read_sample

    async def write_alone(
        self, transaction: Callable[[], AsyncContextManager[AsyncConnection]], entry: AuditEntry, status: str = "ok",
        error_code: str | None = None,
    ) -> None:
        """Records ``entry`` in a transaction of its own (the service's ``_tx``); a failure is logged, never raised."""
        try:
            async with transaction() as conn:
                await conn.execute(insert(audit_log).values(**entry.row(status, error_code)))
        except Exception:  # noqa: BLE001 - the audited call's own outcome must win
            logger.warning("could not write the audit row of %s (%s)", entry.operation, status, exc_info=True)


def error_code(exc: BaseException) -> str:
    """What ``audit_log.error_code`` says: the class name, plus the driver's error number when there is one."""
    code = driver_error_code(exc)
    name = type(exc).__name__
    return (f"{name}:{code}" if code is not None else name)[:64]


T = TypeVar("T")
Describe = Callable[[inspect.BoundArguments], "AuditEntry | None"]
Count = Callable[[Any], int | None]


def audited(describe: Describe, *, read: bool = False, count: Count | None = None) -> Callable[[T], T]:
    """Audits a service method (the service has ``_auditor`` and ``_tx()``).

    ``describe`` builds the entry from the call's arguments (``None``: the call
    is not audited, e.g. a partial event, which is never stored).  Writes: the
    entry is made current for the method body, which adds it to its
    transaction (:func:`current_entry`); a call that returns without writing
    (nothing to store) is recorded on its own, as is a failure other than a
    validation error.  Reads (``read=True``): sampled, recorded after the call
    with ``count(result)`` rows.
    """

    def wrap(method: Callable[..., Awaitable[Any]]) -> Any:
        signature = inspect.signature(method)

        @functools.wraps(method)
        async def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            auditor: Auditor = self._auditor
            if not auditor.enabled or (read and _inside.get()):
                return await method(self, *args, **kwargs)
            if read and not auditor.wants_read():
                skipped = _inside.set(True)  # one draw per outer read: inner calls are part of it
                try:
                    return await method(self, *args, **kwargs)
                finally:
                    _inside.reset(skipped)
            bound = signature.bind(self, *args, **kwargs)
            bound.apply_defaults()
            entry = describe(bound)
            if entry is None:
                return await method(self, *args, **kwargs)
            if entry.actor is None:
                entry.actor = auditor.settings.actor
            outer = _inside.set(True)
            mine = _current.set(None if read else entry)
            try:
                result = await method(self, *args, **kwargs)
            except ValidationError:
                raise
            except Exception as exc:
                entry.row_count = None
                await auditor.write_alone(self._tx, entry, "error", error_code(exc))
                raise
            finally:
                _current.reset(mine)
                _inside.reset(outer)
            if read:
                entry.row_count = count(result) if count else None
            if not entry.taken:
                await auditor.write_alone(self._tx, entry)
            return result

        return call

    return wrap  # type: ignore[return-value]


# ------------------------------------------------------------------ describing a call
def by_ids(operation: str) -> Describe:
    """An entry from ``app_name`` / ``user_id`` / ``session_id`` arguments (those the method has)."""

    def describe(call: inspect.BoundArguments) -> AuditEntry:
        a = call.arguments
        return AuditEntry(operation, a["app_name"], a.get("user_id"), a.get("session_id"))

    return describe


def by_session(operation: str) -> Describe:
    """An entry from a ``session`` argument (an ADK ``Session``)."""

    def describe(call: inspect.BoundArguments) -> AuditEntry:
        s = call.arguments["session"]
        return AuditEntry(operation, s.app_name, s.user_id, s.id)

    return describe


def by_appended_event(call: inspect.BoundArguments) -> AuditEntry | None:
    """``append_event(session, event)``: ``compaction`` for a compaction event, else ``append``; partial events are never stored."""
    session, event = call.arguments["session"], call.arguments["event"]
    if event.partial:
        return None
    operation = "compaction" if event.actions is not None and event.actions.compaction is not None else "append"
    return AuditEntry(operation, session.app_name, session.user_id, session.id, event.id, event.invocation_id or None)
