"""A new, empty database created at head in one step (Alembic cookbook: "building an up to date database from scratch").

Running the 13 revisions one by one on a new seekdb directory took 10.9 s of
a 12 s first ``create_session`` (measured here, issue #24): OceanBase runs
each ``CREATE INDEX`` as a DDL task, and the chain builds and drops a
full-text index three times and rebuilds the memory table for its new key
(0007, 3.2 s alone).  A database with none of our tables is instead created
from what head is:

* every table of :data:`adk_oceanbase.schema.metadata`, its plain indexes
  written inside its ``CREATE TABLE`` (one DDL per table), its vector column
  as the engine stores it (``VECTOR(dim)``, ``LONGBLOB`` on MySQL/MariaDB);
* the engine's own index clauses from :data:`adk_oceanbase.schema.ENGINE_INDEXES`
  (ik full-text and HNSW on OceanBase/seekdb, plain full-text on MySQL);
* the analyst views from ``sql/views.sql`` (kept equal to the newest
  revision's by tests/test_sql_files.py);

and then stamped at head.  Existing databases still upgrade revision by
revision.  A new revision therefore keeps this path in step by mirroring
itself in ``schema.py`` (and ``ENGINE_INDEXES`` / ``sql/views.sql`` when it
adds an engine-specific index or a view), which it must do anyway;
tests/test_head_schema.py compares the two paths on seekdb and MariaDB.

A run that dies half-way leaves some tables and no recorded revision: the
next setup sees our tables and finishes through the (re-entrant) revision
chain.
"""

from __future__ import annotations

import re
from pathlib import Path

from sqlalchemy import MetaData, Table, text
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.schema import CreateTable

from .dialects import EngineDialect
from .schema import ENGINE_INDEXES, Vector, metadata

__all__ = ["create_table_statements", "create_at_head", "view_statements"]


def create_table_statements(engine: EngineDialect, sql_dialect: Dialect, embedding_dim: int) -> list[str]:
    """One ``CREATE TABLE`` per table of the metadata, in dependency order, indexes inline."""
    copy = MetaData()
    statements = []
    for source in metadata.sorted_tables:
        table = source.to_metadata(copy)
        for column in table.columns:
            if isinstance(column.type, Vector):
                column.type = engine.vector_column_type(embedding_dim)
        statements.append(_with_indexes(table, sql_dialect, engine.name))
    return statements


def _with_indexes(table: Table, sql_dialect: Dialect, engine_name: str) -> str:
    ddl = str(CreateTable(table).compile(dialect=sql_dialect)).strip()
    clauses = [
        f"{'UNIQUE ' if index.unique else ''}INDEX {index.name} ({', '.join(c.name for c in index.columns)})"
        for index in sorted(table.indexes, key=lambda i: str(i.name))
    ]
    clauses += ENGINE_INDEXES.get(table.name, {}).get(engine_name, ())
    if not clauses:
        return ddl
    body_end = ddl.rindex("\n)")  # the column list ends here; table options follow
    return ddl[:body_end] + ", \n\t" + ", \n\t".join(clauses) + ddl[body_end:]


def _views_file() -> Path:
    here = Path(__file__).resolve().parent
    for candidate in (here / "_sql" / "views.sql", here.parent / "sql" / "views.sql"):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError("sql/views.sql is missing from this installation")


def view_statements() -> list[str]:
    """The ``CREATE OR REPLACE VIEW`` statements of ``sql/views.sql``, comments removed."""
    body = "\n".join(line for line in _views_file().read_text().splitlines() if not line.strip().startswith("--"))
    body = re.sub(r"--[^\n']*$", "", body, flags=re.M)
    return [s.strip() for s in body.split(";") if s.strip()]


async def create_at_head(conn: AsyncConnection, engine: EngineDialect, embedding_dim: int) -> None:
    """Creates every table, index and view of head on ``conn`` (the caller stamps the revision)."""
    for stmt in create_table_statements(engine, conn.dialect, embedding_dim):
        await conn.execute(text(stmt))
    for stmt in view_statements():
        await conn.execute(text(stmt))
