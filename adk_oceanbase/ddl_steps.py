"""Re-entrant DDL steps for the Alembic revisions: each looks at the catalog first and skips what is done.

OceanBase/seekdb and MySQL/MariaDB commit every DDL statement on its own, so a
revision killed half-way leaves some of its tables, columns and indexes in
place while its number is not yet recorded.  Running it again must finish the
job instead of failing on "table exists" (1050) or "can't drop index" (1091):
every step here is a no-op when its effect is already there.  Only usable
inside a revision (they use ``alembic.op``).

The catalog check is not enough on its own: DDL that a killed client sent
keeps running in the server, so an index can be listed a moment before its
DROP completes (seen under load: the re-run's own DROP then failed with
1091).  So each step also takes the "already done" error of its statement
(1050, 1051, 1060, 1061, 1091) as done.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.exc import DBAPIError

from .errors import CANT_DROP, COLUMN_EXISTS, INDEX_EXISTS, TABLE_EXISTS, UNKNOWN_TABLE, driver_error_code

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
    "memories_in_key_order",
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


def _run(step: Callable[[], Any], done_code: int) -> None:
    """Runs ``step``; its "already done" error (a concurrent or leftover DDL finished it) counts as success."""
    try:
        step()
    except DBAPIError as exc:
        if driver_error_code(exc) != done_code:
            raise


def create_table(name: str, *columns: Any, **kw: Any) -> None:
    if not has_table(name):
        _run(lambda: op.create_table(name, *columns, **kw), TABLE_EXISTS)


def drop_table(name: str) -> None:
    if has_table(name):
        _run(lambda: op.drop_table(name), UNKNOWN_TABLE)


def add_column(table: str, column: sa.Column) -> None:
    if not has_column(table, column.name):
        _run(lambda: op.add_column(table, column), COLUMN_EXISTS)


def drop_column(table: str, column: str) -> None:
    if has_column(table, column):
        _run(lambda: op.drop_column(table, column), CANT_DROP)


def create_index(name: str, table: str, columns: Sequence[str] | None = None, *, sql: str | None = None) -> None:
    """``op.create_index`` for plain indexes; ``sql`` for engine-specific ones (FULLTEXT, VECTOR)."""
    if has_index(table, name):
        return
    if sql is None:
        _run(lambda: op.create_index(name, table, list(columns or ())), INDEX_EXISTS)
    else:
        _run(lambda: op.execute(sql), INDEX_EXISTS)


def drop_index(name: str, table: str) -> None:
    if has_index(table, name):
        _run(lambda: op.drop_index(name, table_name=table), CANT_DROP)


_AFTER_KEY = "(app_name > :a OR (app_name = :a AND (user_id > :u OR (user_id = :u AND memory_id > :m))))"


def memories_in_key_order(columns: str, where: str, batch: int = 500) -> Iterator[list[Any]]:
    """Batches of ``agent_memories`` rows matching ``where``, in primary-key order, for a backfill.

    ``columns`` must start with ``app_name, user_id, memory_id``: each batch
    resumes after the last key of the one before, so a batch's writes may be
    committed or not without the walk skipping or repeating a row.
    """
    last = ("", "", "")
    while True:
        rows = op.get_bind().execute(
            sa.text(
                f"SELECT {columns} FROM agent_memories WHERE {_AFTER_KEY} AND {where} "
                "ORDER BY app_name, user_id, memory_id LIMIT :n"
            ),
            {"a": last[0], "u": last[1], "m": last[2], "n": batch},
        ).all()
        if not rows:
            return
        yield rows
        last = tuple(rows[-1][:3])
