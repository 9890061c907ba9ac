"""What every service shares: which database it uses, whether it owns it, lazy schema check, transactions.

Both services take ``url`` / ``config=`` / ``database=`` / ``engine=``, start
nothing until first use, create a missing schema on first use (like ADK's own
services) but never alter an existing one implicitly, and release only what
they created.

Every database call of a service goes through :meth:`DatabaseService._read`,
:meth:`~DatabaseService._tx`, :meth:`~DatabaseService._rerunnable_tx` or
:meth:`~DatabaseService._raw_tx`: the schema check on first use, then
:mod:`.gateway`, which turns driver errors into the typed tree of
:mod:`.errors` (by error number), and its :func:`~.gateway.retrying` for what
is safe to re-run.

Alembic is imported on first use, not with the package: importing it logs
seven "setup plugin" INFO lines, and ``adk web`` configures the root logger at
INFO before it loads ``services.py``.  The implicit schema check on first use
(and the migration of an empty database) runs with Alembic's loggers at
WARNING; ``setup()``, ``adk_oceanbase.upgrade()`` and the CLI, which migrate
on request, keep its INFO lines.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from contextlib import asynccontextmanager, contextmanager
from types import ModuleType
from typing import Any, AsyncIterator, Awaitable, Callable, Iterator, Sequence, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from .config import Config
from .engine import Database
from . import gateway
from .errors import (
    ConfigurationError,
    SchemaMissingError,
    SchemaOutdatedError,
    is_rerunnable,
    typed_errors,
)
from .rawtx import ConnectionLease, RawTransaction

__all__ = ["DatabaseService", "adk_uri"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


def adk_uri(url: str | None, uri: str | None) -> str | None:
    """``url``, or ``uri`` (ADK's name for it: ``services.yaml`` builds a service as ``cls(uri=..., agents_dir=...)``)."""
    if url is not None and uri is not None and url != uri:
        raise ConfigurationError("pass url or uri (ADK's name for it), not both")
    return url if url is not None else uri


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
        await _migrations().upgrade(self._db)
        self._checked = False
        await self._engine()

    async def _on_ready(self) -> None:
        """Runs once after the schema check passed (e.g. the memory service checks its embedding model)."""

    async def _engine(self) -> AsyncEngine:
        if not self._checked:
            async with self._check_lock:
                if not self._checked:
                    await self._db.start()
                    migrations = _migrations()
                    with typed_errors(), _quiet_alembic():
                        try:
                            await migrations.check_schema(self._db)
                        except (SchemaMissingError, SchemaOutdatedError):
                            # Outdated may only mean another process is migrating right now:
                            # create_if_new waits for it, and re-raises if the schema is really old.
                            if not self._auto_setup:
                                raise
                            if await migrations.create_if_new(self._db):
                                logger.info("created the adk-oceanbase tables in %s (revision %s)",
                                            self._db.config.redacted_url(), migrations.head_revision())
                        await self._on_ready()
                    self._checked = True
        return self._db.engine

    async def _read(self, work: Callable[[AsyncConnection], Awaitable[T]]) -> T:
        """Runs read-only ``work`` on a pooled connection, once more after a dropped one (:func:`.gateway.read`)."""
        await self._engine()
        return await gateway.read(self._db, work)

    async def _read_batch(self, statements: Sequence[tuple[Any, Any]], *, rerun_codes: frozenset[int] = frozenset(),
                          lease: ConnectionLease | None = None) -> list[Any]:
        """Runs read-only ``statements`` in one round trip on the driver connection (:func:`.gateway.read_batch`)."""
        await self._engine()
        return await gateway.read_batch(self._db, statements, rerun_codes=rerun_codes, lease=lease)

    async def _rerunnable_tx(self, work: Callable[[AsyncConnection], Awaitable[T]]) -> T:
        """Runs ``work`` in one transaction, once more after a deadlock or a lost connection.

        Only for transactions whose re-run is harmless whatever the first run
        did (deletes, idempotent upserts): a deadlock victim was rolled back,
        but after a lost connection the first run may have committed.
        """

        async def once() -> T:
            async with self._tx() as conn:
                return await work(conn)

        return await gateway.retrying(once, when=is_rerunnable, what="a transaction")

    @asynccontextmanager
    async def _tx(self) -> AsyncIterator[AsyncConnection]:
        """One transaction; driver errors come out as our typed errors (by error number)."""
        await self._engine()
        async with gateway.transaction(self._db) as conn:
            yield conn

    @asynccontextmanager
    async def _raw_tx(self, lease: ConnectionLease | None = None) -> AsyncIterator[RawTransaction]:
        """One transaction on the driver connection, for the per-event hot paths (see :mod:`.rawtx`)."""
        await self._engine()
        async with gateway.raw(self._db, lease) as tx:
            yield tx

    async def _release(self) -> None:
        """Releases the engine and embedded seekdb if this service created them."""
        if self._owns_db:
            await self._db.close()
        self._checked = False


def _migrations() -> ModuleType:
    """``adk_oceanbase.migrations``, imported (with Alembic) on first need and without its INFO noise."""
    with _quiet_alembic():
        from . import migrations
    return migrations


_quiet = {"users": 0, "ours": False}
_quiet_lock = threading.Lock()


@contextmanager
def _quiet_alembic() -> Iterator[None]:
    """Alembic's INFO lines ("Context impl MySQLImpl.", "setup plugin ...") raised to WARNING meanwhile.

    Only when the application has not set a level on the ``alembic`` logger
    itself (an explicit choice is left alone); counted, so overlapping first
    uses of several services restore it once, after the last.
    """
    log = logging.getLogger("alembic")
    with _quiet_lock:
        if _quiet["users"] == 0:
            _quiet["ours"] = log.level == logging.NOTSET
            if _quiet["ours"]:
                log.setLevel(logging.WARNING)
        _quiet["users"] += 1
    try:
        yield
    finally:
        with _quiet_lock:
            _quiet["users"] -= 1
            if _quiet["users"] == 0 and _quiet["ours"]:
                log.setLevel(logging.NOTSET)
