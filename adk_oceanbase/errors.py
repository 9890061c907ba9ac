"""The typed error tree: one root, mapped from driver error codes, never from message text.

Where ADK already has a class for the same case (``AlreadyExistsError``,
``SessionNotFoundError``, ``StaleSessionError``), ours subclasses it so that a
user's ``except`` clause written against ADK keeps working.
"""

from __future__ import annotations

from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.errors import StaleSessionError

__all__ = [
    "AdkOceanBaseError",
    "ConfigurationError",
    "ConnectionFailedError",
    "DeadlockError",
    "EmbeddingModelMismatchError",
    "EventTooLargeError",
    "InvalidIdentifierError",
    "InvalidStateError",
    "LockTimeoutError",
    "MemoryNotFoundError",
    "SchemaConflictError",
    "SchemaMissingError",
    "SchemaOutdatedError",
    "SessionAlreadyExistsError",
    "SessionMissingError",
    "StaleSessionConflictError",
    "ValidationError",
    "translate_db_error",
]


class AdkOceanBaseError(Exception):
    """Root of every error this package raises on purpose."""


class ConfigurationError(AdkOceanBaseError, ValueError):
    """A URL, option or environment variable is malformed or contradictory."""


class ConnectionFailedError(AdkOceanBaseError):
    """The database (or the embedded seekdb process) could not be reached or started."""


class ValidationError(AdkOceanBaseError, ValueError):
    """Input was rejected before anything was written."""


class InvalidIdentifierError(ValidationError):
    """An app name, user id, session id or event id is empty or too long."""


class InvalidStateError(ValidationError):
    """A state value cannot be stored as JSON."""


class EventTooLargeError(ValidationError):
    """An event's serialised JSON exceeds ``Config.max_event_bytes``."""


class SessionAlreadyExistsError(AdkOceanBaseError, AlreadyExistsError):
    """``create_session`` was given an id that is already taken."""


class SessionMissingError(AdkOceanBaseError, SessionNotFoundError):
    """The session an operation needs does not exist (or was deleted)."""


class StaleSessionConflictError(AdkOceanBaseError, StaleSessionError):
    """The caller's copy of the session is older than storage: reload it and retry."""


class SchemaMissingError(AdkOceanBaseError):
    """The tables are not there: run ``adk-oceanbase db upgrade`` or ``await service.setup()``."""


class SchemaOutdatedError(AdkOceanBaseError):
    """The database schema is older (or newer) than this package expects."""


class SchemaConflictError(AdkOceanBaseError):
    """A table named like ours exists but is not ours: setup refuses to touch the database."""


class DeadlockError(AdkOceanBaseError):
    """The database chose this transaction as a deadlock victim (MySQL 1213); it was rolled back."""


class LockTimeoutError(AdkOceanBaseError):
    """A row lock was not granted in time (MySQL 1205 / OceanBase 6003, 4012); rolled back."""


class MemoryNotFoundError(AdkOceanBaseError, KeyError):
    """A memory id passed to an update or delete does not exist for this app and user."""


class EmbeddingModelMismatchError(AdkOceanBaseError, ValueError):
    """Stored memories were embedded by another model or dimension than the one configured."""


# MySQL / OceanBase (MySQL mode) server error numbers we translate.  OceanBase
# reports lock waits with its own codes (4012 timeout, 6003 lock conflict) as
# well as the MySQL ones, depending on the path.
_DUPLICATE_KEY = 1062
_DEADLOCK = 1213
_LOCK_WAIT_TIMEOUTS = {1205, 4012, 6003, 6004}
_NO_SUCH_TABLE = 1146
_CONNECTION_CODES = {2002, 2003, 2006, 2013, 1045, 1049}


def driver_error_code(exc: BaseException) -> int | None:
    """Returns the server error number carried by a PyMySQL/aiomysql error, if any.

    SQLAlchemy wraps driver errors in ``DBAPIError``; the driver's exception is
    at ``.orig`` and carries ``(errno, message)`` in ``args``.
    """
    orig = getattr(exc, "orig", exc)
    args = getattr(orig, "args", ())
    if args and isinstance(args[0], int):
        return args[0]
    return None


def is_duplicate_key(exc: BaseException) -> bool:
    """True when the error is a unique/primary key violation (1062)."""
    return driver_error_code(exc) == _DUPLICATE_KEY


def translate_db_error(exc: BaseException) -> BaseException:
    """Maps a driver error to our typed tree by error number; returns ``exc`` when unknown."""
    code = driver_error_code(exc)
    if code == _DEADLOCK:
        return DeadlockError(f"deadlock detected (MySQL error {code}); the transaction was rolled back")
    if code in _LOCK_WAIT_TIMEOUTS:
        return LockTimeoutError(f"lock wait timed out (error {code}); the transaction was rolled back")
    if code == _NO_SUCH_TABLE:
        return SchemaMissingError(
            "adk-oceanbase tables are missing: run `adk-oceanbase db upgrade --url URL` "
            "or `await service.setup()` once"
        )
    if code in _CONNECTION_CODES:
        return ConnectionFailedError(f"cannot reach the database (error {code})")
    return exc
