"""Importing an ADK ``DatabaseSessionService`` database (SQLite, MySQL/MariaDB, PostgreSQL) into ours.

    report = await import_adk("sqlite+aiosqlite:///sessions.db", OceanBaseSessionService(url))

or ``adk-oceanbase import-adk --from sqlite+aiosqlite:///sessions.db --url URL``.
"""

from __future__ import annotations

from .run import ImportReport, import_adk
from .source import SourceDriverMissingError, SourceSchemaError

__all__ = ["ImportReport", "SourceDriverMissingError", "SourceSchemaError", "import_adk"]
