"""Re-entrant DDL steps for the Alembic revisions: each looks at the catalog first and skips what is done.

OceanBase/seekdb and MySQL/MariaDB commit every DDL statement on its own, so a
revision killed half-way leaves some of its tables, columns and indexes in
place while its number is not yet recorded.  Running it again must finish the
job instead of failing on "table exists" (1050) or "can't drop index" (1091):
every step here is a no-op when its effect is already there.  Only usable
inside a revision (they use ``alembic.op``).
"""

from __future__ import annotations

from typing import Any, Sequence

import sqlalchemy as sa
from alembic import op

__all__ = [
    "add_column",
    "create_index",
    "create_table",
    "drop_column",
    "drop_index",
    "drop_table",
    "has_column",
    "has_index",
    "has_table",
]


def _exists(sql: str, **params: Any) -> bool:
    return op.get_bind().execute(sa.text(sql), params).first() is not None


def has_table(table: str) -> bool:
    return _exists(
        "SELECT 1 FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = :t", t=table
    )


def has_column(table: str, column: str) -> bool:
    return _exists(
        "SELECT 1 FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = :t "
        "AND column_name = :c",
        t=table,
        c=column,
    )


def has_index(table: str, index: str) -> bool:
    return _exists(
        "SELECT 1 FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = :t "
        "AND index_name = :i",
        t=table,
        i=index,
    )


def create_table(name: str, *columns: Any, **kw: Any) -> None:
    if not has_table(name):
        op.create_table(name, *columns, **kw)


def drop_table(name: str) -> None:
    if has_table(name):
        op.drop_table(name)


def add_column(table: str, column: sa.Column) -> None:
    if not has_column(table, column.name):
        op.add_column(table, column)


def drop_column(table: str, column: str) -> None:
    if has_column(table, column):
        op.drop_column(table, column)


def create_index(name: str, table: str, columns: Sequence[str] | None = None, *, sql: str | None = None) -> None:
    """``op.create_index`` for plain indexes; ``sql`` for engine-specific ones (FULLTEXT, VECTOR)."""
    if has_index(table, name):
        return
    if sql is None:
        op.create_index(name, table, list(columns or ()))
    else:
        op.execute(sql)


def drop_index(name: str, table: str) -> None:
    if has_index(table, name):
        op.drop_index(name, table_name=table)
