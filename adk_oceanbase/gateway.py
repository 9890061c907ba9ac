"""The one way into the database: connections and transactions whose driver errors come out typed, and the one retry helper.

Every I/O path of the package (the services, the vectorizer, index upkeep,
consolidation, governance) opens its connection here, so a server error or a
dropped connection reaches the caller as one of :mod:`.errors`' typed errors,
never as a raw PyMySQL / SQLAlchemy exception.  What may be re-run, how often
and with what pause, is said once per call site with :func:`retrying`.

The few modules that still open the engine themselves are listed, each with
its reason, in ``tests/test_layering.py`` (the engine's own start-up, the
setup lock and Alembic, a foreign import source).
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager
from typing import AsyncIterator, Awaitable, Callable, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection

from .engine import Database
from .errors import typed_errors
from .rawtx import RawTransaction, raw_transaction

__all__ = ["connection", "raw", "retrying", "transaction"]

logger = logging.getLogger(__name__)

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
async def raw(db: Database) -> AsyncIterator[RawTransaction]:
    """One transaction on the driver connection, for the per-event hot paths (see :mod:`.rawtx`); errors typed."""
    await db.start()
    async with raw_transaction(db.engine, batch=db.config.batch_statements, max_packet=db.max_packet) as tx:
        yield tx


async def retrying(
    work: Callable[[], Awaitable[T]],
    *,
    when: Callable[[BaseException], bool],
    attempts: int = 2,
    pause_s: Callable[[int], float] | None = None,
    what: str = "a database call",
) -> T:
    """Runs ``work()``; while it fails with an error ``when`` accepts, runs it again, ``attempts`` runs in all.

    Only for work whose re-run is harmless: a read, an idempotent write, or
    a transaction the server rolled back (a deadlock victim).  ``pause_s(n)``
    is the pause after the ``n``-th failed run (none by default).  The last
    run's error, or any error ``when`` refuses, is raised unchanged.
    """
    attempt = 1
    while True:
        try:
            return await work()
        except Exception as exc:
            if attempt >= attempts or not when(exc):
                raise
            logger.info("%s failed (%s); running it again (%d of %d)", what, type(exc).__name__, attempt + 1, attempts)
        if pause_s is not None:
            await asyncio.sleep(pause_s(attempt))
        attempt += 1
