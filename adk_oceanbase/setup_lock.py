"""Setup takes turns and has a deadline: one schema migration at a time per database, one Alembic run per process.

Across processes: ``SELECT ... FOR UPDATE`` on the one row of
``adk_oceanbase_lock``, held in an open transaction on a connection of its
own (the migration's DDL commits implicitly, which would release a lock held
on the migrating connection).  A row lock ends the moment its connection
drops: a waiter got it 0.4 ms after ``kill -9`` of the holder on seekdb.
``GET_LOCK`` does not: seekdb 1.4 still reported a ``GET_LOCK`` of a closed
or killed session as held minutes later, so one crashed setup would block
every later one.  The same row lock serves MySQL/MariaDB.

Within a process: ``alembic.context`` and ``alembic.op`` are module globals,
so two upgrades interleaving on one event loop (their SQL awaits switch
coroutines) or in two threads overwrite each other's migration context
(``KeyError: 'script'``).  Each Alembic command therefore runs alone.

Deadline (issue #24): a new seekdb directory once left ``CREATE TABLE IF NOT
EXISTS adk_oceanbase_lock`` running for 700 s.  Reproduced: after two
read-only processes had opened and closed a new directory (``db current``,
``db check``), the next process's first DDL never finished in 7 of 27 such
directories (three sequences at a time on 2 cores), with no other session
in the processlist, past ``ob_query_timeout``, and ``KILL`` of it did not
return either: the engine, not a lock of ours (0 of 27 with one read-only
process before, or none).  DDL on OceanBase otherwise
waits up to the server's ``_ob_ddl_timeout`` (1000 s), MySQL's on a metadata
lock up to ``lock_wait_timeout`` (a year).  So every wait of a setup is bounded by
:class:`SetupDeadline` (``Config.setup_timeout_s``): its connections carry
the time left as their server-side timeouts, and a statement still running
at the deadline is killed on the server and reported as
:class:`~adk_oceanbase.errors.SetupTimeoutError`, naming the statement.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

from sqlalchemy import event, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.schema import CreateTable

from .engine import Database
from .errors import NO_SUCH_TABLE, TABLE_EXISTS, LockTimeoutError, SetupTimeoutError, driver_error_code, translate_db_error
from .retry import retrying
from .schema import LOCK_TABLE, setup_lock

__all__ = ["SetupDeadline", "alembic_turn", "schema_lock"]

logger = logging.getLogger(__name__)

_ROW = "migrate"
_SESSION_ID = text("SELECT CONNECTION_ID()")
_HAS_ROW = text(f"SELECT name FROM {LOCK_TABLE} WHERE name = :name")
_INSERT_ROW = text(f"INSERT IGNORE INTO {LOCK_TABLE} (name) VALUES (:name)")
_LOCK_ROW = text(f"SELECT name FROM {LOCK_TABLE} WHERE name = :name FOR UPDATE")

_BEING_CREATED = {TABLE_EXISTS, NO_SUCH_TABLE}  # table exists (a concurrent CREATE) / doesn't exist yet (not visible yet)

_ALEMBIC = threading.Lock()

_KILL_WAIT_S = 10.0
"""How long the kill of a statement that overran the deadline may take (the server may be the stuck part)."""


_SERVER_GRACE_S = 2.0
"""The server-side timeouts of a setup session end this much after the deadline (a backstop if we are gone)."""


class SetupDeadline:
    """One setup's time budget (``Config.setup_timeout_s``); every wait inside it gets what is left.

    Args:
        db: the started database.
        action: what the setup does, for the error message ("upgrade", "create the schema").
    """

    def __init__(self, db: Database, action: str):
        self.db = db
        self.action = action
        self.total_s = db.config.setup_timeout_s
        self._at = time.monotonic() + self.total_s

    def remaining(self) -> float:
        """Seconds left (0 once past the deadline)."""
        return max(self._at - time.monotonic(), 0.0)

    def error(self, waited_for: str) -> SetupTimeoutError:
        """The one-line error: what the setup waited for and what to do about it."""
        where = self.db.config.redacted_url()
        if self.db.config.flavor == "seekdb":
            advice = (
                f"close every process using {self.db.config.db_dir} and run it again; if it stops at the same place "
                "again, the embedded engine is stuck on its log: move that directory aside (one that never held data "
                "can be deleted) and start a new one"
            )
        else:
            advice = (
                "look in information_schema.processlist for a transaction or setup holding the table, end it, and run "
                "it again"
            )
        return SetupTimeoutError(
            f"{self.action} of {where} gave up after {self.total_s:g} s (Config.setup_timeout_s) waiting for "
            f"{waited_for}: {advice}"
        )

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConnection]:
        """A connection whose server-side waits end with the deadline; dropped afterwards (its settings are setup's)."""
        async with self.db.engine.connect() as conn:
            try:
                async with self.bound(conn, "the database to answer"):
                    # the server's own bound a little later than ours: ours kills and names the statement
                    for stmt in self.db.dialect.setup_statements(self.remaining() + _SERVER_GRACE_S):
                        await conn.execute(text(stmt))
                yield conn
            finally:
                await conn.invalidate()

    @asynccontextmanager
    async def bound(self, conn: AsyncConnection, waiting_for: str, *, name_statement: bool = True) -> AsyncIterator[None]:
        """Runs the body until the deadline; then kills ``conn``'s statement on the server and raises the error.

        The error names the statement in flight (recorded as it is sent) when
        ``name_statement``, else ``waiting_for``.
        """
        # not the handshake's thread id: seekdb's differs from the session id KILL takes
        thread_id = int((await conn.execute(_SESSION_ID)).scalar_one())
        in_flight: list[str] = []

        def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
            in_flight[:] = [statement]

        sync = conn.sync_connection
        assert sync is not None
        event.listen(sync, "before_cursor_execute", record)
        try:
            async with asyncio.timeout(self.remaining()):
                yield
        except TimeoutError as exc:
            if isinstance(exc, SetupTimeoutError):
                raise
            await self._kill(thread_id)
            await conn.invalidate()
            what = f"`{_one_line(in_flight[0])}`" if in_flight and name_statement else waiting_for
            raise self.error(what) from exc
        finally:
            if event.contains(sync, "before_cursor_execute", record):
                event.remove(sync, "before_cursor_execute", record)

    async def _kill(self, thread_id: int) -> None:
        """Ends the overrunning statement's session on the server, so it holds no lock nor DDL slot afterwards."""
        try:
            async with asyncio.timeout(_KILL_WAIT_S), self.db.engine.connect() as conn:
                await conn.execute(text(f"KILL {thread_id}"))
        except Exception as exc:  # best effort: the server may be what is stuck; the deadline error says so
            logger.warning("could not kill the setup statement of session %d after the deadline (%s)", thread_id,
                           type(exc).__name__)


def _one_line(statement: str, limit: int = 120) -> str:
    flat = " ".join(statement.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


@asynccontextmanager
async def schema_lock(deadline: SetupDeadline) -> AsyncIterator[None]:
    """Holds the database's setup lock for the body; waits for it until the deadline."""
    db = deadline.db
    await _create_lock_row(deadline)
    async with deadline.connection() as conn:
        held = "the schema lock, held by another adk-oceanbase setup of this database"
        async with deadline.bound(conn, held, name_statement=False):
            while True:
                try:
                    await conn.execute(_LOCK_ROW, {"name": _ROW})
                    break
                except DBAPIError as exc:
                    await conn.rollback()
                    if not isinstance(translate_db_error(exc), LockTimeoutError):
                        raise
                    if deadline.remaining() <= 0:
                        raise deadline.error(held) from exc
                    logger.info("waiting for another adk-oceanbase setup of %s to finish", db.config.redacted_url())
        try:
            yield
        finally:
            await conn.rollback()


async def _create_lock_row(deadline: SetupDeadline) -> None:
    """Creates the lock table and row unless present.

    With several processes at it, OceanBase answers the losers' ``IF NOT
    EXISTS`` before the winner's table is visible to them (their INSERT then
    failed with 1146, 2 services in 4 on a fresh database): retried briefly.
    The row is looked for first with a plain read: ``INSERT IGNORE`` of a
    row another setup holds waits for that setup's lock.
    """
    try:
        async with deadline.db.engine.connect() as conn:
            if (await conn.execute(_HAS_ROW, {"name": _ROW})).first() is not None:
                return
    except DBAPIError as exc:
        if driver_error_code(exc) != NO_SUCH_TABLE:
            raise

    async def create() -> None:
        async with deadline.connection() as conn, deadline.bound(conn, "the setup lock table"):
            await conn.execute(CreateTable(setup_lock, if_not_exists=True))
            await conn.execute(_INSERT_ROW, {"name": _ROW})
            await conn.commit()

    await retrying(create, when=lambda exc: isinstance(exc, DBAPIError) and driver_error_code(exc) in _BEING_CREATED,
                   attempts=100, pause_s=lambda _: 0.05, what="creating the setup lock table")


@asynccontextmanager
async def alembic_turn() -> AsyncIterator[None]:
    """This process's only Alembic run while the body lasts (waits without blocking the event loop)."""
    while not _ALEMBIC.acquire(blocking=False):
        await asyncio.sleep(0.02)
    try:
        yield
    finally:
        _ALEMBIC.release()
