"""The typed error tree: one root, mapped from driver error codes, never from message text.

Where ADK already has a class for the same case (``AlreadyExistsError``,
``SessionNotFoundError``, ``StaleSessionError``), ours subclasses it so that a
user's ``except`` clause written against ADK keeps working.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import pymysql
from sqlalchemy.exc import DBAPIError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.errors import StaleSessionError

__all__ = [
    "AdkOceanBaseError",
    "CheckpointCorruptError",
    "CheckpointTooLargeError",
    "ConfigurationError",
    "ConnectionFailedError",
    "ContextBudgetError",
    "SharedMemoryWriteError",
    "ConnectionLostError",
    "DatabaseNotFoundError",
    "DeadlockError",
    "DuplicateKeyError",
    "EmbeddingModelMismatchError",
    "EventTooLargeError",
    "IndexRebuildBusyError",
    "InvalidIdentifierError",
    "InvalidStateError",
    "InvalidTextError",
    "InvalidValueError",
    "LockTimeoutError",
    "MemoryNotFoundError",
    "MemoryTooLongError",
    "MemoryWriteRaceError",
    "PacketTooLargeError",
    "PayloadTooLargeError",
    "PrivilegedAuthorError",
    "QueryTimeoutError",
    "SchemaConflictError",
    "SchemaMissingError",
    "SchemaOutdatedError",
    "SessionAlreadyExistsError",
    "SessionMissingError",
    "SetupTimeoutError",
    "StaleSessionConflictError",
    "StateTooLargeError",
    "UnsupportedServerError",
    "ValidationError",
    "translate_db_error",
    "typed_errors",
]


class AdkOceanBaseError(Exception):
    """Root of every error this package raises on purpose."""


class ConfigurationError(AdkOceanBaseError, ValueError):
    """A URL, option or environment variable is malformed or contradictory."""


class DatabaseNotFoundError(ConfigurationError):
    """A command that only reads or maintains found no database at the URL (a mistyped path); nothing was created."""


class ConnectionFailedError(AdkOceanBaseError):
    """The database (or the embedded seekdb process) could not be reached or started."""


class ConnectionLostError(ConnectionFailedError):
    """A connection broke mid-conversation (2006, 2013, ...): a write's outcome is unknown.

    Reads are re-run once on a fresh connection before this reaches the
    caller, and so are writes whose re-run is harmless (see the services).
    """


class ValidationError(AdkOceanBaseError, ValueError):
    """Input was rejected before anything was written."""


class InvalidIdentifierError(ValidationError):
    """An app name, user id, session id or event id is empty or too long."""


class InvalidStateError(ValidationError):
    """A state key or value is not JSON: values must be dicts with str keys, lists, str, int, finite float, bool or None."""


class InvalidTextError(ValidationError):
    """Text UTF-8 cannot store: a lone surrogate such as ``"\\ud800"`` (a bad decode, half an emoji)."""


class InvalidValueError(ValidationError):
    """A value stored as JSON would not load back as itself (a set, tuple, bytes, NaN, over 200 levels deep); nothing written.

    For ``custom_metadata`` of events and memories; state values raise
    :class:`InvalidStateError` for the same reasons.
    """


class EventTooLargeError(ValidationError):
    """An event's JSON exceeds ``Config.max_event_bytes``, or its append (event and state delta, escaped) the server's ``max_allowed_packet``."""


class CheckpointTooLargeError(ValidationError):
    """A LangGraph checkpoint blob, write or Store value exceeds its saver's or store's ``max_value_bytes``."""


class CheckpointCorruptError(AdkOceanBaseError):
    """A stored LangGraph channel value cannot be rebuilt: a delta's base row is gone or its counts do not add up.

    The saver's own deletes keep every base a kept checkpoint needs; this means
    rows were deleted or changed outside it.
    """


class StateTooLargeError(InvalidStateError):
    """``create_session`` state whose JSON exceeds ``Config.max_event_bytes``, or whose write the server's ``max_allowed_packet``."""


class MemoryTooLongError(ValidationError):
    """Memory content longer than ``MemorySettings.max_content_chars``."""


class PayloadTooLargeError(ValidationError):
    """An Agno record (a session's data, a run, a trace span...) whose JSON exceeds ``Config.max_event_bytes``; nothing written."""


class PrivilegedAuthorError(ValidationError):
    """``add_memory`` was given a reserved author (``MemorySettings.privileged_authors``, e.g. "system")."""


class PacketTooLargeError(ValidationError):
    """A write's SQL would exceed the server's ``max_allowed_packet`` (error 1153); nothing was sent.

    The services raise it as :class:`EventTooLargeError` or
    :class:`StateTooLargeError`, naming what to shrink.
    """

    def __init__(self, size: int, limit: int):
        super().__init__(f"the write is {size:,} bytes of SQL; the server's max_allowed_packet is {limit:,}")
        self.size = size
        self.limit = limit


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


class UnsupportedServerError(AdkOceanBaseError):
    """The server's version is below what our schema and SQL need; setup refuses before writing anything.

    The message names the server's version and the minimum (``adk_oceanbase.server_version``).
    """


class DeadlockError(AdkOceanBaseError):
    """The database chose this transaction as a deadlock victim (MySQL 1213); it was rolled back."""


class LockTimeoutError(AdkOceanBaseError):
    """A row lock was not granted in time (MySQL 1205 / OceanBase 6003); rolled back."""


class SetupTimeoutError(LockTimeoutError, TimeoutError):
    """Setup (schema creation, migration, stamp) ran past ``Config.setup_timeout_s``; the message names what it waited for.

    A subclass of :class:`LockTimeoutError`, which setup raised for a held schema lock before.
    """


class QueryTimeoutError(AdkOceanBaseError):
    """A statement ran past the statement timeout (OceanBase 4012, ``Config.query_timeout_s``; MySQL 3024, MariaDB 1969)."""


class DuplicateKeyError(AdkOceanBaseError):
    """A write hit a unique key another writer took first (1062); the transaction was rolled back."""


class MemoryNotFoundError(AdkOceanBaseError, KeyError):
    """A memory id passed to an update or delete does not exist for this app and user."""


class MemoryWriteRaceError(AdkOceanBaseError):
    """A memory write lost a race with ``delete_user_data`` (or an opt-out); nothing of it was stored.

    The write started (read its session, events or generation) before the
    user's data was erased and would have re-created it.  Retrying stores the
    data again, now as data the user gave after the erasure: only do that if
    the caller still holds a reason to remember it (a fresh session read).
    """


class SharedMemoryWriteError(AdkOceanBaseError, PermissionError):
    """A write to app- or agent-scoped shared memory by a writer its policy does not list (issue #31).

    Shared knowledge is written through :class:`adk_oceanbase.memory.shared.SharedMemory`
    by a writer :class:`~adk_oceanbase.memory.shared.SharedKnowledge` names for the
    scope; a shared scope's user id given to the plain memory API raises it too.
    """


class EmbeddingModelMismatchError(AdkOceanBaseError, ValueError):
    """Stored memories were embedded by another model or dimension than the one configured."""


class IndexRebuildBusyError(AdkOceanBaseError):
    """Another rebuild of the vector index (the server's, or another process's) kept running past the wait."""


class ContextBudgetError(ValidationError):
    """What must be sent (system instruction, tool declarations, must-keep blocks, the reply reserve) exceeds the budget.

    Even degraded to their summaries they do not fit, so no request within the
    budget exists: raise ``max_input_tokens``, lower ``reserve_for_reply`` or
    mark fewer blocks must-keep.
    """


# Every MySQL / OceanBase (MySQL mode) server error number the package looks
# at is defined here, and only here (tests/test_layering.py checks it).
# OceanBase reports lock waits with its own codes as well as 1205, depending on
# the path (seekdb 1.4 answers 1205 even when the wait ran into
# ob_query_timeout); its 4012 is a statement that ran out of time, locked or not.
DUPLICATE_KEY = 1062
DEADLOCK = 1213
LOCK_WAIT_TIMEOUTS = frozenset({1205, 6003, 6004})
QUERY_TIMEOUTS = frozenset({4012, 3024, 1969})
NO_SUCH_TABLE = 1146
UNKNOWN_DATABASE = 1049
NO_SERVER = frozenset({2002, 2003})  # no socket / connection refused
CONNECT_CODES = frozenset({*NO_SERVER, 1045, UNKNOWN_DATABASE})
# The server went away from an open connection: shutdown (1053), KILL (MariaDB
# 1927), gone away / lost (2006, 2013, 2055), out of step (2014), idle timeout
# (MySQL 8 4031).  0 is pymysql's InterfaceError on a connection it had closed.
LOST_CODES = frozenset({0, 1053, 1927, 2006, 2013, 2014, 2045, 2055, 4031})
CLIENT_ERRORS_FROM = 2000
"""Client-side driver errors (2013 lost connection, ...) are numbered from here; server errors below."""
# The "already done" answers of re-entrant DDL steps (ddl_steps.py).
TABLE_EXISTS = 1050
UNKNOWN_TABLE = 1051
COLUMN_EXISTS = 1060
INDEX_EXISTS = 1061
CANT_DROP = 1091
DDL_BUSY = 4179
"""OceanBase's "Operation not allowed now": a DDL on a table whose previous DDL the server is still running."""
OB_INTERNAL_ERROR = 4016
"""OceanBase's "Internal error": seekdb answered it once in ~1,000 hybrid searches over 100k rows, never twice in a row."""


def driver_error_code(exc: BaseException) -> int | None:
    """Returns the server error number carried by a PyMySQL/aiomysql error, if any.

    SQLAlchemy wraps driver errors in ``DBAPIError``; the driver's exception is
    at ``.orig`` and carries ``(errno, message)`` in ``args``.
    """
    orig = getattr(exc, "orig", exc)
    if not isinstance(orig, pymysql.err.MySQLError):
        return None  # an OSError's args[0] is an errno, not a server error number
    args = getattr(orig, "args", ())
    if args and isinstance(args[0], int):
        return args[0]
    return None


def is_duplicate_key(exc: BaseException) -> bool:
    """True when the error is a unique/primary key violation (1062)."""
    return isinstance(exc, DuplicateKeyError) or driver_error_code(exc) == DUPLICATE_KEY


def is_deadlock(exc: BaseException) -> bool:
    """True when the transaction was chosen as a deadlock victim (1213), typed or not."""
    return isinstance(exc, DeadlockError) or driver_error_code(exc) == DEADLOCK


def is_connection_lost(exc: BaseException) -> bool:
    """True when an open connection broke mid-conversation (driver error or socket error)."""
    if isinstance(exc, ConnectionLostError):
        return True
    orig = getattr(exc, "orig", exc)
    if isinstance(orig, ConnectionError):
        return True
    code = driver_error_code(exc)
    return code in LOST_CODES and (code != 0 or isinstance(orig, pymysql.err.InterfaceError))


def is_rerunnable(exc: BaseException) -> bool:
    """True after a deadlock (rolled back) or a lost connection (outcome unknown): an idempotent write may run again."""
    return is_deadlock(exc) or is_connection_lost(exc)


def translate_db_error(exc: BaseException) -> BaseException:
    """Maps a driver error to our typed tree by error number; returns ``exc`` when unknown."""
    if isinstance(exc, AdkOceanBaseError):
        return exc
    code = driver_error_code(exc)
    if code == DUPLICATE_KEY:
        return DuplicateKeyError(f"duplicate key (error {code}); the transaction was rolled back")
    if code == DEADLOCK:
        return DeadlockError(f"deadlock detected (MySQL error {code}); the transaction was rolled back")
    if code in LOCK_WAIT_TIMEOUTS:
        return LockTimeoutError(f"lock wait timed out (error {code}); the transaction was rolled back")
    if code in QUERY_TIMEOUTS:
        return QueryTimeoutError(
            f"statement timed out (error {code}); raise Config.query_timeout_s if it is expected to take longer"
        )
    if code == NO_SUCH_TABLE:
        return SchemaMissingError(
            "adk-oceanbase tables are missing: run `adk-oceanbase db upgrade --url URL` "
            "or `await service.setup()` once"
        )
    if is_connection_lost(exc):
        return ConnectionLostError(f"lost the database connection (error {code or type(exc).__name__})")
    if code in CONNECT_CODES:
        return ConnectionFailedError(f"cannot reach the database (error {code})")
    return exc


@contextmanager
def typed_errors() -> Iterator[None]:
    """Re-raises driver and socket errors as our typed errors (by error number); unknown ones pass unchanged."""
    try:
        yield
    except (DBAPIError, pymysql.err.MySQLError, ConnectionError) as exc:
        mapped = translate_db_error(exc)
        if mapped is exc:
            raise
        raise mapped from exc
