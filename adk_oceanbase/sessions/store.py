"""``SessionStore``: the session tables below ADK's contract, as compaction, the importer and adapters use them.

``OceanBaseSessionService`` is ADK's ``BaseSessionService``; code that works
on the stored sessions beyond that contract (token-budgeted loads, replay,
compaction, the ADK importer, a future framework adapter) gets this instead
of reaching into the service: ``service.store``.  It offers

* transactions: :meth:`SessionStore.read` (read-only, on a pooled
  connection) and :meth:`SessionStore.transaction` (a write, on the driver
  connection), both with typed errors (:mod:`adk_oceanbase.gateway`);
* the writes ``append_event`` itself makes, for a batch: event rows,
  state rows and the compaction bookkeeping (:mod:`.archive`);
* what decides a stored row: :meth:`SessionStore.encode_event` (the
  service's token counter and size limit) and ``compaction_overlap``.

Row building is :func:`.codec.event_row` / :func:`.codec.state_rows`; SQL is
:mod:`.queries`.  Sessions never import compaction: the service runs
``compact_session`` through the hook below, which ``adk_oceanbase`` fills
with :func:`adk_oceanbase.compaction.compact_session` on import.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any, Awaitable, Callable, Protocol, TypeVar

from google.adk.events.event import Event
from google.adk.sessions.session import Session
from sqlalchemy.ext.asyncio import AsyncConnection

from ..config import Config
from ..errors import ConfigurationError
from ..rawtx import RawTransaction
from ..tokens import TokenCounter
from . import archive, codec
from . import queries as q

__all__ = ["Compaction", "SessionStore", "compaction", "mark", "revision_of", "set_compaction"]

T = TypeVar("T")

_MARKER = "ob:"


# ---------------------------------------------------------------- the revision a loaded session carries
def mark(session: Session, seq: int) -> None:
    """Records on ``session`` the revision (``last_seq``) it was loaded at, for the stale check of the next append.

    ADK's ``Session`` keeps the stale-write marker in ``_storage_update_marker``
    and its own ``DatabaseSessionService`` sets it the same way; there is no
    public setter.
    """
    session._storage_update_marker = f"{_MARKER}{seq}"


def revision_of(session: Session) -> int | None:
    """The revision ``session`` was loaded at by this package (``None``: built by hand or by another service)."""
    marker = session._storage_update_marker
    return int(marker[len(_MARKER):]) if marker and marker.startswith(_MARKER) else None


# ---------------------------------------------------------------- the compaction hook
class Compaction(Protocol):
    """What ``OceanBaseSessionService.compact_session`` runs (the signature of ``compaction.compact_session``)."""

    def __call__(
        self, service: Any, *, app_name: str, user_id: str, session_id: str, policy: Any, summarizer: Any
    ) -> Awaitable[Any]: ...


_compaction: list[Compaction] = []


def set_compaction(run: Compaction) -> None:
    """Installs what ``compact_session`` runs; ``adk_oceanbase/__init__.py`` installs the compaction package's."""
    _compaction[:] = [run]


def compaction() -> Compaction:
    """The installed :class:`Compaction`; raises ``ConfigurationError`` when none is."""
    if not _compaction:
        raise ConfigurationError("no compaction installed: import adk_oceanbase (it installs adk_oceanbase.compaction)")
    return _compaction[0]


# ---------------------------------------------------------------- the store
class SessionStore:
    """Transactions and batch writes on the session tables, with the settings of the service that owns them.

    Built by ``OceanBaseSessionService`` (``service.store``); it holds no
    connection of its own, so it costs nothing until used.

    Example:
        >>> async def event_ids(store, app, user, sid):  # doctest: +SKIP
        ...     async def load(conn):
        ...         return (await conn.execute(queries.select_events(app, user, sid))).all()
        ...     return [row.event_id for row in await store.read(load)]
    """

    def __init__(
        self,
        *,
        read: Callable[[Callable[[AsyncConnection], Awaitable[Any]]], Awaitable[Any]],
        transaction: Callable[[], AbstractAsyncContextManager[RawTransaction]],
        config: Config,
        token_counter: TokenCounter,
        compaction_overlap: int,
    ):
        self._read = read
        self._transaction = transaction
        self._config = config
        self.token_counter = token_counter
        """Counts each stored event's tokens (``session_events.token_count``)."""
        self.compaction_overlap = compaction_overlap
        """Invocations a compaction leaves loaded for ADK's sliding-window overlap."""

    @property
    def max_event_bytes(self) -> int:
        """The largest stored event JSON (``Config.max_event_bytes``)."""
        return self._config.max_event_bytes

    async def read(self, work: Callable[[AsyncConnection], Awaitable[T]]) -> T:
        """Runs read-only ``work`` in one transaction on a pooled connection; returns what it returns.

        ``work`` may run twice: once more on a fresh connection when the
        pooled one was dropped by the server (it changed nothing).  Driver
        errors come out as :mod:`adk_oceanbase.errors` types.
        """
        return await self._read(work)

    def transaction(self) -> AbstractAsyncContextManager[RawTransaction]:
        """One write transaction on the driver connection: ``async with store.transaction() as tx``.

        Commits when the block ends without an exception (unless it ran a
        ``COMMIT`` itself), rolls back otherwise; never re-run, since a
        write's outcome after a lost connection is unknown.
        """
        return self._transaction()

    def encode_event(self, event: Event) -> tuple[str, int]:
        """``(stored JSON, tokens)`` of ``event`` as ``append_event`` stores it; raises ``EventTooLargeError``."""
        return codec.encode_event(event, counter=self.token_counter, max_bytes=self._config.max_event_bytes)

    async def insert_events(self, tx: RawTransaction, rows: list[dict[str, Any]]) -> None:
        """Inserts event rows (:func:`.codec.event_row` plus ``seq``) in one multi-row statement.

        The caller keeps the session row's ``last_seq`` and counters in step
        and runs :meth:`archive` for a compaction or rewind event after the
        rows before it are in.
        """
        if rows:
            await tx.batch([(q.RAW_INSERT_EVENT, rows)])

    async def upsert_state(self, tx: RawTransaction, rows: list[dict[str, Any]]) -> None:
        """Inserts or overwrites state rows (:func:`.codec.state_rows`) in one multi-row statement."""
        if rows:
            await tx.batch([(q.RAW_UPSERT_STATE, rows)])

    async def archive(self, tx: RawTransaction, app: str, user: str, sid: str, seq: int, event: Event, payload: str) -> int:
        """The compaction bookkeeping of ``event`` stored at ``seq`` (see :func:`.archive.archive_for`); rows archived."""
        return await archive.archive_for(tx, app, user, sid, seq, event, payload, overlap=self.compaction_overlap)
