"""adk-oceanbase: ADK session and memory services on OceanBase, seekdb and MySQL.

Importing this package never connects, starts seekdb or runs DDL; services do
that lazily on first use (or on ``await service.setup()``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .audit import AuditSettings, audit_actor
from .config import Config
from .engine import Database
from .errors import (
    AdkOceanBaseError,
    ConfigurationError,
    ConnectionFailedError,
    ConnectionLostError,
    DatabaseNotFoundError,
    DeadlockError,
    DuplicateKeyError,
    EventTooLargeError,
    InvalidIdentifierError,
    InvalidStateError,
    InvalidValueError,
    LockTimeoutError,
    MemoryWriteRaceError,
    QueryTimeoutError,
    SchemaConflictError,
    SchemaMissingError,
    SchemaOutdatedError,
    SetupTimeoutError,
    SessionAlreadyExistsError,
    SessionMissingError,
    StaleSessionConflictError,
    UnsupportedServerError,
    ValidationError,
)
from .redaction import RedactionPolicy, Redactor, RuleRedactor
from .sessions import OceanBaseSessionService, SessionPage
from .sessions.store import set_compaction
from .compaction import compact_session as _compact_session

# Compaction builds on the sessions layer, so sessions cannot import it: the
# service's compact_session runs what is installed here, at the top.
set_compaction(_compact_session)

# Procedural memory keeps per-user runs inside app-wide aggregates: erasure and retention (below it)
# run its own share, registered here.  Imported when first run: `import adk_oceanbase` stays free of
# the memory stack (tests/test_embedded_footprint.py).
from .governance import extensions as _governance_extensions  # noqa: E402


async def _erase_procedure_runs(conn, app: str, user: str) -> int:
    from .procedural.governance import erase_user_runs

    return await erase_user_runs(conn, app, user)


async def _sweep_procedure_runs(db, app: str, cutoff, **kw) -> int:
    from .procedural.governance import sweep_runs

    return await sweep_runs(db, app, cutoff, **kw)


def _procedural_apps():
    from .procedural.queries import procedural_apps

    return procedural_apps()


_governance_extensions.register_user_eraser("procedure_runs", _erase_procedure_runs)
_governance_extensions.register_retention_sweep("procedure_runs", _sweep_procedure_runs, apps=_procedural_apps)

__version__ = "0.1.0"

__all__ = [
    "AdkOceanBaseError",
    "AuditSettings",
    "Config",
    "ConfigurationError",
    "ConnectionFailedError",
    "ConnectionLostError",
    "DatabaseNotFoundError",
    "Database",
    "DeadlockError",
    "DuplicateKeyError",
    "EventTooLargeError",
    "InvalidIdentifierError",
    "InvalidStateError",
    "InvalidValueError",
    "LockTimeoutError",
    "MemoryWriteRaceError",
    "OceanBaseMemoryService",
    "OceanBaseSessionService",
    "SchemaConflictError",
    "QueryTimeoutError",
    "RedactionPolicy",
    "Redactor",
    "RuleRedactor",
    "SchemaMissingError",
    "SchemaOutdatedError",
    "SetupTimeoutError",
    "UnsupportedServerError",
    "SessionAlreadyExistsError",
    "SessionMissingError",
    "SessionPage",
    "StaleSessionConflictError",
    "ValidationError",
    "__version__",
    "audit_actor",
    "upgrade",
]


async def upgrade(url: str | None = None, *, revision: str = "head", config: Config | None = None) -> str | None:
    """Migrates the database at ``url`` (or ``config``) to ``revision``; same code as ``adk-oceanbase db upgrade``."""
    from . import migrations

    db = Database(config or (Config.from_url(url) if url else Config.from_env()))
    try:
        return await migrations.upgrade(db, revision)
    finally:
        await db.close()


def __getattr__(name: str) -> Any:
    # The memory service pulls in numpy-heavy code; load it on first use only.
    if name == "OceanBaseMemoryService":
        from .memory import OceanBaseMemoryService

        return OceanBaseMemoryService
    raise AttributeError(name)


if TYPE_CHECKING:  # pragma: no cover
    from .memory import OceanBaseMemoryService
