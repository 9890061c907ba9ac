"""What every service shares: which database it uses, whether it owns it, lazy schema check, transactions.

Both services take ``url`` / ``config=`` / ``database=`` / ``engine=``, start
nothing until first use, create a missing schema on first use (like ADK's own
services) but never alter an existing one implicitly, and release only what
they created.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from typing import AsyncIterator

from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from . import migrations
from .config import Config
from .engine import Database
from .errors import ConfigurationError, SchemaMissingError, SchemaOutdatedError, translate_db_error
from .rawtx import RawTransaction, raw_transaction

__all__ = ["DatabaseService"]


class DatabaseService:
    """Mixin for services backed by a :class:`Database`; subclasses may override :meth:`_on_ready`."""

    _db: Database
    _owns_db: bool

    def _bind_database(
        self,
        url: str | None,
        config: Config | None,
        database: Database | None,
        engine: AsyncEngine | None,
        auto_setup: bool,
    ) -> None:
        if sum(x is not None for x in (url, config, database, engine)) > 1 and not (engine and config):
            raise ConfigurationError("pass only one of url, config, database or engine (engine may come with config)")
        if database is not None:
            self._db, self._owns_db = database, False
        else:
            cfg = config or (Config.from_url(url) if url else Config.from_env())
            self._db, self._owns_db = Database(cfg, engine=engine), True
        self._auto_setup = auto_setup
        self._checked = False
        self._check_lock = asyncio.Lock()

    @property
    def database(self) -> Database:
        """The database handle; share it between services with ``database=``."""
        return self._db

    @property
    def config(self) -> Config:
        return self._db.config

    async def setup(self) -> None:
        """Creates or upgrades the schema to this package's head (same code as ``adk-oceanbase db upgrade``)."""
        await migrations.upgrade(self._db)
        self._checked = False
        await self._engine()

    async def _on_ready(self) -> None:
        """Runs once after the schema check passed (e.g. the memory service checks its embedding model)."""

    async def _engine(self) -> AsyncEngine:
        if not self._checked:
            async with self._check_lock:
                if not self._checked:
                    await self._db.start()
                    try:
                        await migrations.check_schema(self._db)
                    except (SchemaMissingError, SchemaOutdatedError):
                        # Outdated may only mean another process is migrating right now:
                        # create_if_new waits for it, and re-raises if the schema is really old.
                        if not self._auto_setup:
                            raise
                        await migrations.create_if_new(self._db)
                    await self._on_ready()
                    self._checked = True
        return self._db.engine

    @asynccontextmanager
    async def _tx(self) -> AsyncIterator[AsyncConnection]:
        """One transaction; driver errors come out as our typed errors (by error number)."""
        engine = await self._engine()
        try:
            async with engine.begin() as conn:
                yield conn
        except DBAPIError as exc:
            mapped = translate_db_error(exc)
            if mapped is exc:
                raise
            raise mapped from exc

    @asynccontextmanager
    async def _raw_tx(self) -> AsyncIterator[RawTransaction]:
        """One transaction on the driver connection, for the per-event hot paths (see :mod:`.rawtx`)."""
        engine = await self._engine()
        async with raw_transaction(engine, batch=self.config.batch_statements) as tx:
            yield tx

    async def _release(self) -> None:
        """Releases the engine and embedded seekdb if this service created them."""
        if self._owns_db:
            await self._db.close()
        self._checked = False
