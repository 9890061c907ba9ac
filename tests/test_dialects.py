"""The dialect seam on both engines: what each dialect says is what the server does."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from adk_oceanbase import gateway
from adk_oceanbase.dialects import MySQLDialect, OceanBaseDialect

READ_BACK = {"oceanbase": "SELECT @@ob_query_timeout / 1000000", "mysql": "SELECT @@max_statement_time"}


async def test_a_connections_statement_timeout_is_what_the_server_reads_back(engine_db):
    dialect = engine_db.dialect
    async with gateway.connection(engine_db) as conn:
        for stmt in dialect.statement_timeout_statements(12.5):
            await conn.execute(text(stmt))
        assert float((await conn.execute(text(READ_BACK[dialect.name]))).scalar()) == 12.5
        for stmt in dialect.statement_timeout_statements(engine_db.config.query_timeout_s):  # back to the pool's
            await conn.execute(text(stmt))
        assert float((await conn.execute(text(READ_BACK[dialect.name]))).scalar()) == engine_db.config.query_timeout_s


@pytest.mark.parametrize(
    ("dialect", "column", "parser", "index"),
    [
        (OceanBaseDialect(), "VECTOR(384)", " WITH PARSER ik",
         "CREATE VECTOR INDEX ix ON t(v) WITH (distance=cosine, type=hnsw, lib=vsag)"),
        (MySQLDialect(mariadb=True), "LONGBLOB", "", None),
        (MySQLDialect(), "LONGBLOB", "", None),
    ],
)
def test_ddl_fragments(dialect, column, parser, index):
    """What the revisions build their engine-specific DDL from (tests/test_revision_ddl.py pins the result)."""
    assert dialect.vector_column_sql(384) == column
    assert dialect.fulltext_parser_clause("ik") == parser
    assert dialect.vector_index_sql("ix", "t", "v") == index
    assert dialect.rebuilds_vector_index is (index is not None)
