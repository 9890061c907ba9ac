"""Connections for maintenance statements that run for minutes: ``Config.maintenance_timeout_s`` instead of ``query_timeout_s``.

Every pooled connection carries ``query_timeout_s`` (60 s) as its server-side
statement timeout (``ob_query_timeout``; ``max_statement_time`` on MariaDB),
which is right for a request and wrong for rebuilding the HNSW index: 85-122 s
at 1M rows (issue #32), so ``memory rebuild-index`` failed with
``QueryTimeoutError`` on any big table.  :func:`connection` hands out a
connection whose statement timeout (and lock wait) is the maintenance
timeout, and closes it afterwards instead of returning it to the pool, so no
request ever runs with the long timeout.

Setup's DDL and data backfills have their own bound, ``Config.setup_timeout_s``
(:mod:`.setup_lock`).
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import AsyncIterator

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from . import gateway
from .engine import Database

__all__ = ["connection", "timeout_statements"]


def timeout_statements(db: Database, timeout_s: float) -> list[str]:
    """What bounds a connection's statements and lock waits to ``timeout_s`` on ``db``'s engine."""
    return [*db.dialect.init_statements(timeout_s), *db.dialect.setup_statements(timeout_s)]


@asynccontextmanager
async def connection(db: Database) -> AsyncIterator[AsyncConnection]:
    """A connection whose server-side timeouts are ``Config.maintenance_timeout_s``; closed (not pooled) afterwards.

    Errors come out typed (:mod:`.gateway`); the caller commits what it writes.
    """
    async with gateway.connection(db) as conn:
        try:
            for stmt in timeout_statements(db, db.config.maintenance_timeout_s):
                await conn.execute(text(stmt))
            yield conn
        finally:
            await conn.invalidate()  # its session variables are maintenance's: never back to the pool
