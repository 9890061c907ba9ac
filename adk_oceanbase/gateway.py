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
from typing import AsyncIterator

from sqlalchemy.ext.asyncio import AsyncConnection

from .engine import Database
from .errors import typed_errors
from .rawtx import RawTransaction, raw_transaction
from .retry import retrying

__all__ = ["connection", "raw", "retrying", "transaction"]


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
