"""The one way into the database: connections and transactions whose driver errors come out typed, and the one retry helper.

Every I/O path of the package (the services, the vectorizer, index upkeep,
consolidation, governance) opens its connection here, so a server error or a
dropped connection reaches the caller as one of :mod:`.errors`' typed errors,
never as a raw PyMySQL / SQLAlchemy exception.  What may be re-run, how often
and with what pause, is said once per call site with :func:`retrying`
(defined in :mod:`.retry`, below the engine, which uses it too).

The few modules that still open the engine themselves are listed, each with
its reason, in ``tests/test_layering.py`` (the engine's own start-up, the
setup lock and Alembic, a foreign import source).
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Awaitable, Callable, Sequence, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection

from .engine import Database
from .errors import driver_error_code, is_connection_lost, typed_errors
from .rawtx import COMMIT, ConnectionLease, RawTransaction, raw_transaction
from .retry import retrying

__all__ = ["connection", "raw", "read", "read_batch", "retrying", "transaction"]

T = TypeVar("T")


@asynccontextmanager
async def transaction(db: Database) -> AsyncIterator[AsyncConnection]:
    """One transaction on a pooled connection: committed on success, rolled back on error; errors come out typed."""
    await db.start()
    with typed_errors():
        async with db.engine.begin() as conn:
            yield conn


@asynccontextmanager
async def connection(db: Database) -> AsyncIterator[AsyncConnection]:
    """A pooled connection for reads, or for statements the caller commits itself; errors come out typed.

    What is left uncommitted when the block ends is rolled back.
    """
    await db.start()
    with typed_errors():
        async with db.engine.connect() as conn:
            yield conn


@asynccontextmanager
async def raw(db: Database, lease: ConnectionLease | None = None) -> AsyncIterator[RawTransaction]:
    """One transaction on the driver connection, for the per-event hot paths (see :mod:`.rawtx`); errors typed."""
    await db.start()
    async with raw_transaction(db.engine, batch=db.config.batch_statements, max_packet=db.max_packet, lease=lease) as tx:
        yield tx


async def read(db: Database, work: Callable[[AsyncConnection], Awaitable[T]]) -> T:
    """Runs read-only ``work`` on a pooled connection; driver errors come out typed.

    A pooled connection the server dropped (restart, ``KILL``, idle
    timeout) fails its first statement with 2006/2013.  The pool's
    checkout check (:mod:`.engine`) sets most aside unused; a read that
    still meets one runs once more on a fresh connection, which is safe
    because it changed nothing.  A second failure is raised.
    """

    async def once() -> T:
        async with connection(db) as conn:
            return await work(conn)

    return await retrying(once, when=is_connection_lost, what="a read")


async def read_batch(
    db: Database, statements: Sequence[tuple[Any, Any]], *, rerun_codes: frozenset[int] = frozenset(),
    lease: ConnectionLease | None = None,
) -> list[Any]:
    """Runs read-only ``statements`` (and a COMMIT) in one round trip; returns each one's ``(count, rows)``.

    For hot reads that need a session variable set first (memory search:
    the query vector): SQLAlchemy would spend a round trip on the ``SET``,
    another on the reset when the connection goes back to the pool, and
    ~1 ms of CPU around the statement (1.8 ms per search at 100k rows,
    issue #12).  Like :func:`read`, a read that meets a dropped pooled
    connection, or fails with a server error in ``rerun_codes``, runs once
    more; it changed nothing.  A second failure is raised.
    """
    batch = [*statements, (COMMIT, None)]

    async def once() -> list[Any]:
        async with raw(db, lease) as tx:
            return (await tx.batch(batch, read_only=True))[: len(statements)]

    def rerun(exc: BaseException) -> bool:  # typed errors keep the driver's as cause
        return is_connection_lost(exc) or driver_error_code(exc.__cause__ or exc) in rerun_codes

    return await retrying(once, when=rerun, what="a read")
