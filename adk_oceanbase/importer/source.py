"""Reading an ADK ``DatabaseSessionService`` database: URL and driver checks, schema version, rows, events.

ADK 2.13 reads and writes two layouts of the same tables (``sessions``,
``events``, ``app_states``, ``user_states``): schema ``"1"`` keeps each event
as JSON in ``events.event_data`` and records its version in
``adk_internal_metadata``; the legacy schema ``"0"`` keeps one column per
event field with ``EventActions`` pickled.  The version is detected with
ADK's own check, and rows are read and decoded through ADK's own storage
classes for that version (``StorageEvent.to_event``, the restricted
unpickler for v0), so an imported event is exactly the event ADK's own
``get_session`` returns.  Nothing here writes to the source.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, AsyncIterator

from google.adk.events.event import Event
from google.adk.sessions.migration import _schema_check_utils
from google.adk.sessions.schemas import v0, v1
from sqlalchemy import inspect, select, tuple_
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, InvalidRequestError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine

from ..errors import AdkOceanBaseError, ConfigurationError, ConnectionFailedError

__all__ = ["AdkSource", "SourceDriverMissingError", "SourceSchemaError", "SourceSession", "open_source"]

# The asyncio driver ADK itself expects per backend (DatabaseSessionService's
# _ASYNC_DRIVER_BY_BACKEND): used when a URL names none, e.g. ``sqlite:///x.db``.
_DEFAULT_ASYNC_DRIVER = {"sqlite": "aiosqlite", "postgresql": "asyncpg", "mysql": "aiomysql", "mariadb": "aiomysql"}

# Event decoding is pydantic validation: more than this many events go to a worker thread.
_DECODE_INLINE = 64


class SourceDriverMissingError(ConfigurationError):
    """The source URL's asyncio driver is not installed; the message names the package to install."""


class SourceSchemaError(AdkOceanBaseError):
    """The source database has no ADK ``DatabaseSessionService`` tables, or a schema version we cannot read."""


@dataclass(frozen=True)
class SourceSession:
    """One ADK session as stored: its own (session-scoped) state and its events in ADK's order."""

    app_name: str
    user_id: str
    session_id: str
    state: dict[str, Any]
    create_time: datetime
    """Naive UTC."""
    last_update_time: float
    """What ADK's ``get_session`` reports as ``Session.last_update_time``."""
    events: list[Event]


def _source_url(source_url: str) -> URL:
    try:
        url = make_url(source_url)
    except ArgumentError as exc:
        raise ConfigurationError("source_url is not a SQLAlchemy database URL (e.g. sqlite+aiosqlite:///sessions.db)") from exc
    backend = url.get_backend_name()
    if backend not in _DEFAULT_ASYNC_DRIVER:
        raise ConfigurationError(f"source_url: backend {backend!r} is not one ADK's DatabaseSessionService imports from here (sqlite, mysql, mariadb, postgresql)")
    if "+" not in url.drivername:
        url = url.set(drivername=f"{backend}+{_DEFAULT_ASYNC_DRIVER[backend]}")
    if backend == "sqlite":
        # aiosqlite would create a missing file: a typo must not import "nothing" successfully.
        if not url.database or url.database == ":memory:" or not Path(url.database).is_file():
            raise ConfigurationError(f"source_url: no SQLite database file at {url.database!r}")
    return url


def _engine(url: URL) -> AsyncEngine:
    try:
        return create_async_engine(url)
    except ImportError as exc:
        package = exc.name or url.get_driver_name()
        raise SourceDriverMissingError(
            f"source_url needs the {package!r} driver for {url.get_backend_name()}: pip install {package}"
        ) from exc
    except InvalidRequestError as exc:  # a synchronous driver named explicitly (mysql+pymysql://)
        backend = url.get_backend_name()
        raise ConfigurationError(
            f"source_url names the synchronous driver {url.get_driver_name()!r}; "
            f"use {backend}+{_DEFAULT_ASYNC_DRIVER[backend]}://"
        ) from exc


def _inspect_source(connection: Any) -> tuple[str | None, set[str]]:
    tables = set(inspect(connection).get_table_names())
    if not {"sessions", "events"} <= tables:
        return None, tables
    return _schema_check_utils.get_db_schema_version_from_connection(connection), tables


class AdkSource:
    """A read-only view of one ADK session database; use :func:`open_source`."""

    def __init__(self, engine: AsyncEngine, version: str, tables: set[str]):
        self.engine = engine
        self.version = version
        """ADK's schema version of the source: ``"0"`` (pickled actions) or ``"1"`` (JSON events)."""
        self._tables = tables
        schema = v1 if version == _schema_check_utils.SCHEMA_VERSION_1_JSON else v0
        self._Session, self._Event = schema.StorageSession, schema.StorageEvent
        self._AppState, self._UserState = schema.StorageAppState, schema.StorageUserState
        self._orm = async_sessionmaker(engine, expire_on_commit=False)

    async def close(self) -> None:
        await self.engine.dispose()

    async def app_names(self, only: str | None = None) -> list[str]:
        """Every app with sessions or shared state (or just ``only``, if the source has it)."""
        names: set[str] = set()
        async with self._orm() as orm:
            for model in self._state_models() + [self._Session]:
                stmt = select(model.app_name).distinct()
                if only is not None:
                    stmt = stmt.where(model.app_name == only)
                names.update((await orm.execute(stmt)).scalars().all())
        return sorted(names)

    async def shared_state(self, app_name: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """``(app state, {user_id: user state})`` of one app, without prefixes (as ADK stores them)."""
        async with self._orm() as orm:
            app_state: dict[str, Any] = {}
            if "app_states" in self._tables:
                row = await orm.get(self._AppState, app_name)
                app_state = dict(row.state or {}) if row is not None else {}
            users: dict[str, dict[str, Any]] = {}
            if "user_states" in self._tables:
                rows = (await orm.execute(select(self._UserState).where(self._UserState.app_name == app_name))).scalars()
                users = {r.user_id: dict(r.state or {}) for r in rows}
        return app_state, users

    async def sessions(self, app_name: str, *, page: int) -> AsyncIterator[SourceSession]:
        """The app's sessions with their events, ``page`` sessions per query, in (user, id) order."""
        S = self._Session
        after: tuple[str, str] | None = None
        while True:
            stmt = select(S).where(S.app_name == app_name).order_by(S.user_id, S.id).limit(page)
            if after is not None:
                stmt = stmt.where(tuple_(S.user_id, S.id) > tuple_(*after))
            async with self._orm() as orm:
                rows = (await orm.execute(stmt)).scalars().all()
            for row in rows:
                yield await self._load(row)
            if len(rows) < page:
                return
            after = (rows[-1].user_id, rows[-1].id)

    async def _load(self, row: Any) -> SourceSession:
        E = self._Event
        # ADK's get_session order: timestamp, ties broken by id.
        stmt = (
            select(E)
            .where(E.app_name == row.app_name, E.user_id == row.user_id, E.session_id == row.id)
            .order_by(E.timestamp, E.id)
        )
        async with self._orm() as orm:
            stored = (await orm.execute(stmt)).scalars().all()
        if len(stored) <= _DECODE_INLINE:
            events = [e.to_event() for e in stored]
        else:
            events = await asyncio.to_thread(lambda: [e.to_event() for e in stored])
        created = row.create_time
        if created.tzinfo is not None:
            created = created.astimezone(timezone.utc).replace(tzinfo=None)
        return SourceSession(
            app_name=row.app_name,
            user_id=row.user_id,
            session_id=row.id,
            state=dict(row.state or {}),
            create_time=created,
            last_update_time=row.get_update_timestamp(),
            events=events,
        )

    def _state_models(self) -> list[Any]:
        present = {"app_states": self._AppState, "user_states": self._UserState}
        return [model for table, model in present.items() if table in self._tables]


async def open_source(source_url: str) -> AdkSource:
    """Connects to an ADK session database and detects its schema version.

    Raises:
        SourceDriverMissingError: the URL's asyncio driver (aiosqlite, aiomysql,
            asyncpg, ...) is not installed; the message names the package.
        ConfigurationError: the URL is malformed, names a synchronous driver,
            or a SQLite file that does not exist.
        ConnectionFailedError: the source database cannot be reached or opened.
        SourceSchemaError: no ADK session tables, or a schema version this ADK cannot read.
    """
    url = _source_url(source_url)
    shown = url.render_as_string(hide_password=True)
    engine = _engine(url)
    try:
        try:
            async with engine.connect() as conn:
                version, tables = await conn.run_sync(_inspect_source)
        except OperationalError as exc:
            raise ConnectionFailedError(f"cannot open the source database {shown}: {type(exc.orig).__name__}") from exc
        if version is None:
            raise SourceSchemaError(
                f"{shown} has no ADK DatabaseSessionService tables "
                f"(sessions, events); found {sorted(tables)}"
            )
        known = (_schema_check_utils.SCHEMA_VERSION_0_PICKLE, _schema_check_utils.SCHEMA_VERSION_1_JSON)
        if version not in known:
            raise SourceSchemaError(f"ADK session schema version {version!r} is not one this ADK reads {known}")
    except BaseException:
        await engine.dispose()
        raise
    return AdkSource(engine, version, tables)
