"""Alembic, run from code: ``upgrade()``, ``downgrade()``, ``current_revision()`` and the runtime check.

``await service.setup()`` and ``adk-oceanbase db upgrade`` both end in
:func:`upgrade`.  The revisions live in the top-level ``alembic/`` folder of
the source tree and ship inside the wheel as ``adk_oceanbase/_alembic``.

Setup takes turns (:mod:`.setup_lock`), resumes a run that died half-way
(the revisions' steps are re-entrant, :mod:`.ddl_steps`), and refuses,
before writing anything, a database holding tables named like ours that are
not ours, or recording a revision this package does not know.  Alembic and
driver failures come out as our typed errors.
"""

from __future__ import annotations

import functools
import logging
import sys
import time
from pathlib import Path
from typing import Any, Callable

from alembic import command
from alembic.config import Config as AlembicConfig
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import bindparam, text
from sqlalchemy.exc import DBAPIError

from . import gateway, head_schema, server_version, setup_lock
from .engine import Database
from .errors import (
    DDL_BUSY,
    SchemaConflictError,
    SchemaMissingError,
    SchemaOutdatedError,
    ValidationError,
    driver_error_code,
    translate_db_error,
)
from .schema import VERSION_TABLE, metadata

__all__ = [
    "check_schema",
    "create_if_new",
    "current_revision",
    "downgrade",
    "head_revision",
    "history",
    "script_location",
    "stamp",
    "upgrade",
]

logger = logging.getLogger(__name__)

_UPGRADE_HINT = "run `adk-oceanbase db upgrade --url URL` or `await service.setup()`"


def script_location() -> Path:
    """Where the revisions are: inside the installed package, else the source tree's ``alembic/``."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_alembic", here.parent / "alembic"):
        if (candidate / "env.py").is_file():
            return candidate
    raise SchemaMissingError("adk-oceanbase's Alembic revisions are missing from this installation")


def _alembic_config(db: Database, connection: Any | None = None) -> AlembicConfig:
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(script_location()))
    cfg.attributes["connection"] = connection
    cfg.attributes["dialect"] = db.dialect
    cfg.attributes["embedding_dim"] = db.config.embedding_dim
    return cfg


@functools.cache
def head_revision() -> str:
    """The newest revision this package ships (read from disk once per process)."""
    script = ScriptDirectory(str(script_location()))
    head = script.get_current_head()
    assert head is not None
    return head


@functools.cache
def _known_revisions() -> frozenset[str]:
    return frozenset(r.revision for r in ScriptDirectory(str(script_location())).walk_revisions())


async def upgrade(db: Database, revision: str = "head") -> str | None:
    """Brings the schema to ``revision`` (default: head). Running it twice is a no-op.

    Safe to call from many processes at once (they take turns, see
    :mod:`.setup_lock`) and after a crash half-way: every revision checks the
    catalog before each step (DDL commits implicitly, so a killed run leaves
    some steps done and its revision unrecorded) and simply completes.

    Returns the revision the database is at afterwards.

    Raises:
        UnsupportedServerError: the server is older than our schema needs; nothing is created.
        SchemaConflictError: tables named like ours exist but are not ours; nothing is created.
        SchemaOutdatedError: the database is at a revision this package does not know,
            or a step failed (the message says where it stopped).
    """
    return await _migrate(db, command.upgrade, revision, "upgrade")


async def downgrade(db: Database, revision: str) -> str | None:
    """Reverts the schema to ``revision`` (``"base"`` drops every table we own)."""
    return await _migrate(db, command.downgrade, revision, "downgrade")


async def create_if_new(db: Database) -> bool:
    """Lazy auto-setup: creates the schema when no revision is recorded, then checks it.

    No revision means a new database or a first setup that died half-way;
    an existing older schema is left alone (``SchemaOutdatedError``), and
    one being migrated by another process right now is waited for (until
    ``Config.setup_timeout_s``).  Returns whether this call created (or
    finished creating) the schema.
    """
    await db.start()
    await server_version.require_supported(db)  # an old server would fail midway (issue #32)
    await _recorded_revision(db)  # refuse foreign tables before creating even the lock table
    created = False
    deadline = setup_lock.SetupDeadline(db, "creating the adk-oceanbase tables")
    async with setup_lock.schema_lock(deadline):
        if await _recorded_revision(db) is None:
            await _to_head(deadline)
            created = True
    await check_schema(db)
    return created


async def _migrate(db: Database, fn: Callable[[AlembicConfig, str], None], revision: str, action: str) -> str | None:
    await db.start()
    await server_version.require_supported(db)  # an old server would fail midway (issue #32)
    await _recorded_revision(db)  # refuse foreign tables before creating even the lock table
    deadline = setup_lock.SetupDeadline(db, action)
    async with setup_lock.schema_lock(deadline):
        current = await _recorded_revision(db)  # a newer release may have migrated while we waited
        if fn is command.upgrade and revision in ("head", head_revision()) and current is None:
            await _to_head(deadline)
        else:
            await _run_alembic(deadline, fn, revision, action)
    return await current_revision(db)


async def _to_head(deadline: setup_lock.SetupDeadline) -> None:
    """Brings an unversioned database to head: in one step when it holds none of our tables, else revision by revision.

    Called under the schema lock.  Tables without a recorded revision are a
    setup that died half-way: the re-entrant revisions finish it.
    """
    db = deadline.db
    if await _our_tables(db):
        await _run_alembic(deadline, command.upgrade, "head", "upgrade")
        return
    async with deadline.connection() as conn, deadline.bound(conn, "the new tables"):
        await head_schema.create_at_head(conn, db.dialect, db.config.embedding_dim)
    await _run_alembic(deadline, command.stamp, "head", "stamp")


DDL_BUSY_WAIT_S = 300.0
"""How long a migration keeps re-running while the server answers :data:`~adk_oceanbase.errors.DDL_BUSY`."""


async def _run_alembic(
    deadline: setup_lock.SetupDeadline, fn: Callable[[AlembicConfig, str], None], revision: str, action: str
) -> None:
    """Runs the alembic command; a step refused because an earlier DDL is still running is re-run.

    OceanBase runs a DDL to its end in the server even when the client that sent it
    is gone: a setup killed during ``ALTER TABLE ... ADD PRIMARY KEY`` leaves the
    server rebuilding the table, and the next setup's DDL on that table is refused
    with 4179 until it finishes (seen in tests/torture/test_setup_races.py).  The
    steps are re-entrant and finished ones are recorded, so the command is simply
    run again, with a growing pause, for up to :data:`DDL_BUSY_WAIT_S` (and
    never past the setup's deadline).
    """
    busy_until = time.monotonic() + min(DDL_BUSY_WAIT_S, deadline.remaining())
    runs = 0

    async def once() -> None:
        nonlocal runs
        runs += 1
        await _run_alembic_once(deadline, fn, revision, action)

    def busy(exc: BaseException) -> bool:
        if not isinstance(exc, SchemaOutdatedError) or driver_error_code(exc.__cause__) != DDL_BUSY:
            return False
        if time.monotonic() + _busy_pause(runs) > busy_until:
            return False
        logger.warning("%s: the server is still running an earlier DDL on the table (4179); again in %.1f s",
                       action, _busy_pause(runs))
        return True

    await gateway.retrying(once, when=busy, attempts=sys.maxsize, pause_s=_busy_pause, what=action)


def _busy_pause(runs: int) -> float:
    """Seconds to wait after the ``runs``-th run was refused with 4179: 0.5, 1, 2, ... up to 10."""
    return min(0.5 * 2 ** (runs - 1), 10.0)


async def _run_alembic_once(
    deadline: setup_lock.SetupDeadline, fn: Callable[[AlembicConfig, str], None], revision: str, action: str
) -> None:
    db = deadline.db
    try:
        async with setup_lock.alembic_turn(), deadline.connection() as conn:
            async with deadline.bound(conn, f"revision {revision}"):
                await conn.run_sync(lambda sync: fn(_alembic_config(db, sync), revision))
                await conn.commit()
    except CommandError as exc:
        raise ValidationError(f"cannot {action} to revision {revision!r}: {exc}") from exc
    except DBAPIError as exc:
        mapped = translate_db_error(exc)
        if mapped is not exc:
            raise mapped from exc
        at = await current_revision(db)
        raise SchemaOutdatedError(
            f"{action} stopped at revision {at or 'none'}: database error {driver_error_code(exc)}; "
            f"fix the cause and run it again (finished steps are skipped)"
        ) from exc


async def current_revision(db: Database) -> str | None:
    """The revision recorded in ``adk_oceanbase_version``, or ``None`` when never migrated."""
    async with gateway.connection(db) as conn:

        def _read(sync: Any) -> str | None:
            ctx = MigrationContext.configure(sync, opts={"version_table": VERSION_TABLE})
            return ctx.get_current_revision()

        return await conn.run_sync(_read)


async def check_schema(db: Database) -> None:
    """Raises a typed error naming the command to run when the schema is missing or not at head."""
    current = await _recorded_revision(db)
    head = head_revision()
    if current == head:
        return
    if current is None:
        if not await _our_tables(db):
            raise SchemaMissingError(f"adk-oceanbase tables do not exist in {db.config.redacted_url()}: {_UPGRADE_HINT}")
        raise SchemaOutdatedError(f"an earlier setup of this database did not finish: {_UPGRADE_HINT} to complete it")
    raise SchemaOutdatedError(
        f"database schema is at revision {current!r} but this adk-oceanbase expects {head!r}: {_UPGRADE_HINT}"
    )


async def _recorded_revision(db: Database) -> str | None:
    """The recorded revision, after refusing a database we must not touch. Read-only."""
    current = await current_revision(db)
    if current is None:
        await _our_tables(db)
    elif current not in _known_revisions():
        raise SchemaOutdatedError(
            f"database is at revision {current!r}, which this adk-oceanbase does not know (newer release?): "
            f"upgrade the adk-oceanbase package (its newest revision is {head_revision()!r})"
        )
    return current


_COLUMNS = text(
    "SELECT table_name, column_name FROM information_schema.columns "
    "WHERE table_schema = DATABASE() AND table_name IN :tables"
).bindparams(bindparam("tables", expanding=True))


async def _our_tables(db: Database) -> list[str]:
    """Which of our tables exist; raises ``SchemaConflictError`` when one of them is someone else's.

    Ours means: it has our primary-key columns and no column our newest
    schema lacks (an unfinished setup leaves tables of an earlier revision).
    """
    async with gateway.connection(db) as conn:
        rows = (await conn.execute(_COLUMNS, {"tables": [t.name for t in metadata.sorted_tables]})).all()
    found: dict[str, set[str]] = {}
    for table, column in rows:
        found.setdefault(table, set()).add(column.lower())
    for name, columns in found.items():
        ours = metadata.tables[name]
        if not {c.name for c in ours.primary_key.columns} <= columns <= {c.name for c in ours.columns}:
            raise SchemaConflictError(
                f"{db.config.redacted_url()} already has a table {name!r} that adk-oceanbase did not create "
                f"(columns {sorted(columns)}): use another database, or rename that table"
            )
    return sorted(found)


def history() -> list[tuple[str, str | None, str]]:
    """Every revision this package ships, newest first: ``(revision, down_revision, first doc line)``."""
    script = ScriptDirectory(str(script_location()))
    return [
        (rev.revision, rev.down_revision if isinstance(rev.down_revision, str) else None, (rev.doc or "").strip())
        for rev in script.walk_revisions()
    ]


async def stamp(db: Database, revision: str) -> str | None:
    """Records ``revision`` as current without running any migration (for a schema made by hand)."""
    await db.start()
    await _run_alembic_once(setup_lock.SetupDeadline(db, "stamp"), command.stamp, revision, "stamp")
    return await current_revision(db)
