"""Alembic, run from code: ``upgrade()``, ``downgrade()``, ``current_revision()`` and the runtime check.

``await service.setup()`` and ``adk-oceanbase db upgrade`` both end in
:func:`upgrade`.  The revisions live in the top-level ``alembic/`` folder of
the source tree and ship inside the wheel as ``adk_oceanbase/_alembic``.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config as AlembicConfig
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect

from .engine import Database
from .errors import SchemaMissingError, SchemaOutdatedError
from .schema import VERSION_TABLE

__all__ = [
    "check_schema", "current_revision", "downgrade", "head_revision", "history", "script_location", "stamp", "upgrade",
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


async def upgrade(db: Database, revision: str = "head") -> str | None:
    """Brings the schema to ``revision`` (default: head). Running it twice is a no-op.

    Returns the revision the database is at afterwards.
    """
    await db.start()
    async with db.engine.begin() as conn:
        await conn.run_sync(lambda sync: command.upgrade(_alembic_config(db, sync), revision))
    return await current_revision(db)


async def downgrade(db: Database, revision: str) -> str | None:
    """Reverts the schema to ``revision`` (``"base"`` drops every table we own)."""
    await db.start()
    async with db.engine.begin() as conn:
        await conn.run_sync(lambda sync: command.downgrade(_alembic_config(db, sync), revision))
    return await current_revision(db)


async def current_revision(db: Database) -> str | None:
    """The revision recorded in ``adk_oceanbase_version``, or ``None`` when never migrated."""
    await db.start()
    async with db.engine.connect() as conn:

        def _read(sync: Any) -> str | None:
            ctx = MigrationContext.configure(sync, opts={"version_table": VERSION_TABLE})
            return ctx.get_current_revision()

        return await conn.run_sync(_read)


async def check_schema(db: Database) -> None:
    """Raises a typed error naming the command to run when the schema is missing or not at head."""
    current = await current_revision(db)
    head = head_revision()
    if current == head:
        return
    if current is None:
        async with db.engine.connect() as conn:
            has_tables = await conn.run_sync(lambda sync: inspect(sync).has_table("agent_sessions"))
        if not has_tables:
            raise SchemaMissingError(f"adk-oceanbase tables do not exist in {db.config.redacted_url()}: {_UPGRADE_HINT}")
    raise SchemaOutdatedError(
        f"database schema is at revision {current!r} but this adk-oceanbase expects {head!r}: {_UPGRADE_HINT}"
    )


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
    async with db.engine.begin() as conn:
        await conn.run_sync(lambda sync: command.stamp(_alembic_config(db, sync), revision))
    return await current_revision(db)
