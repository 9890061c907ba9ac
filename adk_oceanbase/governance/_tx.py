"""Connections and transactions on a :class:`Database` with driver errors translated: what the governance functions share."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import AsyncIterator

from sqlalchemy.ext.asyncio import AsyncConnection

from ..engine import Database
from ..errors import typed_errors

__all__ = ["connection", "transaction"]


@asynccontextmanager
async def _translated(db: Database, begin: bool) -> AsyncIterator[AsyncConnection]:
    await db.start()
    with typed_errors():
        async with (db.engine.begin() if begin else db.engine.connect()) as conn:
            yield conn


def transaction(db: Database):
    """One transaction: committed on success, rolled back on error; errors come out typed (by error number)."""
    return _translated(db, begin=True)


def connection(db: Database):
    """A connection for reads (no transaction left open); errors come out typed."""
    return _translated(db, begin=False)
