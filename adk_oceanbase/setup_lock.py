"""The setup lock: one schema migration at a time per database, across processes, and one Alembic run per process.

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
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from contextlib import asynccontextmanager
from typing import AsyncIterator

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.schema import CreateTable

from .engine import Database
from .errors import LockTimeoutError, driver_error_code, translate_db_error
from .schema import LOCK_TABLE, setup_lock

__all__ = ["alembic_turn", "schema_lock"]

logger = logging.getLogger(__name__)

LOCK_WAIT_S = 900.0
"""How long a setup waits for another one to finish (migrating 100k memories takes minutes)."""

_ROW = "migrate"
_INSERT_ROW = text(f"INSERT IGNORE INTO {LOCK_TABLE} (name) VALUES (:name)")
_LOCK_ROW = text(f"SELECT name FROM {LOCK_TABLE} WHERE name = :name FOR UPDATE")

_BEING_CREATED = {1050, 1146}  # table exists (a concurrent CREATE) / doesn't exist yet (not visible yet)

_ALEMBIC = threading.Lock()


@asynccontextmanager
async def schema_lock(db: Database) -> AsyncIterator[None]:
    """Holds the database's setup lock for the body; waits up to :data:`LOCK_WAIT_S` for it."""
    await _create_lock_row(db)
    deadline = time.monotonic() + LOCK_WAIT_S
    async with db.engine.connect() as conn:
        while True:
            try:
                await conn.execute(_LOCK_ROW, {"name": _ROW})
                break
            except DBAPIError as exc:
                await conn.rollback()
                if not isinstance(translate_db_error(exc), LockTimeoutError):
                    raise
                if time.monotonic() > deadline:
                    raise LockTimeoutError(
                        f"another adk-oceanbase setup of {db.config.redacted_url()} held the schema lock "
                        f"for more than {LOCK_WAIT_S:.0f} s"
                    ) from exc
                logger.info("waiting for another adk-oceanbase setup of %s to finish", db.config.redacted_url())
        try:
            yield
        finally:
            await conn.rollback()


async def _create_lock_row(db: Database) -> None:
    """Creates the lock table and row unless present.

    With several processes at it, OceanBase answers the losers' ``IF NOT
    EXISTS`` before the winner's table is visible to them (their INSERT then
    failed with 1146, 2 services in 4 on a fresh database): retried briefly.
    """
    for attempt in range(100):
        try:
            async with db.engine.begin() as conn:
                await conn.execute(CreateTable(setup_lock, if_not_exists=True))
                await conn.execute(_INSERT_ROW, {"name": _ROW})
            return
        except DBAPIError as exc:
            if driver_error_code(exc) not in _BEING_CREATED or attempt == 99:
                raise
            await asyncio.sleep(0.05)


@asynccontextmanager
async def alembic_turn() -> AsyncIterator[None]:
    """This process's only Alembic run while the body lasts (waits without blocking the event loop)."""
    while not _ALEMBIC.acquire(blocking=False):
        await asyncio.sleep(0.02)
    try:
        yield
    finally:
        _ALEMBIC.release()
