"""``import_adk``: copies an ADK ``DatabaseSessionService`` database into ``OceanBaseSessionService``, resumably."""

from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from ..errors import ValidationError
from .source import open_source
from .writer import write_session, write_shared_state

if TYPE_CHECKING:
    from ..sessions.service import OceanBaseSessionService

__all__ = ["ImportReport", "import_adk"]

logger = logging.getLogger(__name__)


@dataclass
class ImportReport:
    """What an import wrote; a re-run of a finished import reports zero everywhere but ``sessions_skipped``."""

    source_schema: str = ""
    """ADK's schema version of the source: ``"0"`` (pickled actions) or ``"1"`` (JSON events)."""
    apps: int = 0
    sessions_new: int = 0
    sessions_completed: int = 0
    """Sessions the target already held with some events missing (an interrupted run, or newer source events)."""
    sessions_skipped: int = 0
    """Sessions already fully imported."""
    events: int = 0
    app_state_keys: int = 0
    user_state_keys: int = 0
    session_state_keys: int = 0
    """State keys written (missing in the target or holding another value)."""

    @property
    def written(self) -> int:
        """Everything this run wrote: sessions, events and state keys (0 for a finished import)."""
        return (
            self.sessions_new + self.sessions_completed + self.events
            + self.app_state_keys + self.user_state_keys + self.session_state_keys
        )


Progress = Callable[[ImportReport], Any]


async def import_adk(
    source_url: str,
    target: "OceanBaseSessionService",
    *,
    app_name: str | None = None,
    batch: int = 500,
    progress: Progress | None = None,
) -> ImportReport:
    """Copies sessions, events and app/user/session state from an ADK ``DatabaseSessionService`` database.

    Every schema ADK 2.13 reads is supported (v1 JSON events, legacy v0
    pickled actions), on SQLite, MySQL/MariaDB and PostgreSQL, given their
    asyncio driver.  Events are decoded by ADK's own storage classes and keep
    their ids, timestamps, order and state deltas; sessions keep their ids,
    creation and last-update times.  Each session is one transaction.  Safe to
    re-run, e.g. after an interruption: sessions already imported are skipped,
    and a session the target holds with fewer events gets only the missing
    ones.  The source is only read.

    Args:
        source_url: ADK's database URL, e.g. ``sqlite+aiosqlite:///sessions.db``,
            ``mysql+aiomysql://user:pw@host/db``, ``postgresql+asyncpg://...``
            (a URL without a driver gets ADK's default asyncio driver).
        target: the service to import into (its schema is created if missing).
        app_name: import only this app.
        batch: source sessions read per query and event rows per INSERT.
        progress: called with the running report after each session commits;
            an exception it raises stops the import (what committed stays).

    Raises:
        SourceDriverMissingError: the URL's asyncio driver is not installed.
        SourceSchemaError: the source is not an ADK session database.
        ValidationError: ``batch`` is not a positive integer; an id, state
            value or event our service rejects (that session is not written).

    Example:
        >>> report = await import_adk("sqlite+aiosqlite:///sessions.db", sessions)  # doctest: +SKIP
        >>> report.sessions_new, report.events  # doctest: +SKIP
        (120, 4312)
    """
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise ValidationError("batch must be a positive integer")
    source = await open_source(source_url)
    report = ImportReport(source_schema=source.version)
    try:
        for app in await source.app_names(app_name):
            report.apps += 1
            app_state, user_states = await source.shared_state(app)
            app_keys, user_keys = await write_shared_state(target, app, app_state, user_states, batch=batch)
            report.app_state_keys += app_keys
            report.user_state_keys += user_keys
            async for session in source.sessions(app, page=batch):
                outcome = await write_session(target, session, batch=batch)
                if outcome.status == "new":
                    report.sessions_new += 1
                elif outcome.status == "completed":
                    report.sessions_completed += 1
                else:
                    report.sessions_skipped += 1
                report.events += outcome.events
                report.session_state_keys += outcome.state_keys
                if progress is not None:
                    result = progress(report)
                    if inspect.isawaitable(result):
                        await result
    finally:
        await source.close()
    logger.info("ADK import: %s", report)
    return report
