"""The dialect seam: everything that differs between OceanBase/seekdb and MySQL/MariaDB.

Services and query builders ask the active :class:`EngineDialect` instead of
testing the dialect name.  Both engines speak the MySQL protocol and share the
``INSERT ... ON DUPLICATE KEY UPDATE`` upsert, so only vector storage and
scoring (``native_vectors``, the vector codec and type, where memory search
ranks) and per-connection settings live here.  Engine-specific DDL (VECTOR column, HNSW index, full-text parser)
is spelled out in the Alembic revisions and ``sql/<engine>/schema.sql``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .schema import DEFAULT_EMBEDDING_DIM, FLOAT32_VECTORS, TEXT_VECTORS, Vector, VectorCodec

__all__ = ["EngineDialect", "MySQLDialect", "OceanBaseDialect", "dialect_for"]


@dataclass(frozen=True)
class EngineDialect:
    """Base: behaviour common to both engines; subclasses override the differences."""

    name: str = "base"
    native_vectors: bool = False
    """True when the engine computes vector distances in SQL (OceanBase/seekdb)."""

    def init_statements(self, query_timeout_s: float) -> list[str]:
        """Statements run on every new connection. UTC always: ADK timestamps are UTC epochs."""
        return ["SET time_zone = '+00:00'"]

    def setup_statements(self, timeout_s: float) -> list[str]:
        """Statements bounding a setup connection's server-side waits to ``timeout_s`` (DDL, metadata locks)."""
        return []

    # ---------------------------------------------------------------- vectors

    vector_codec: VectorCodec = FLOAT32_VECTORS
    """How the embedding column stores a vector (``schema.Vector``'s bind and result processors)."""

    ranking: str = "numpy"
    """Where memory search ranks (``MemorySettings.scoring="auto"``): ``"sql"``, one statement in the
    engine, or ``"numpy"``, a SQL prefilter scored in Python; ``memory.retrievers`` maps it to a retriever."""

    def vector_type(self, dim: int = DEFAULT_EMBEDDING_DIM) -> Vector:
        """The embedding column's type with this engine's codec: bind and read vectors as numpy arrays."""
        return Vector(dim, codec=self.vector_codec)

    def encode_vector(self, vec: Sequence[float] | np.ndarray) -> str | bytes:
        """The codec for raw-SQL hot paths that bypass SQLAlchemy's types (the search's query-vector ``SET``)."""
        return self.vector_codec.encode(vec)

    def decode_vector(self, raw: object) -> np.ndarray | None:
        return self.vector_codec.decode(raw)


@dataclass(frozen=True)
class OceanBaseDialect(EngineDialect):
    """OceanBase 4.3.5+ and seekdb: native ``VECTOR``, HNSW, ``APPROXIMATE``, ngram full-text."""

    name: str = "oceanbase"
    native_vectors: bool = True
    vector_codec: VectorCodec = TEXT_VECTORS
    ranking: str = "sql"

    def init_statements(self, query_timeout_s: float) -> list[str]:
        # ob_query_timeout is in microseconds; the server default (10 s) is too
        # short for migrations and bulk loads.
        us = int(query_timeout_s * 1_000_000)
        return [f"SET time_zone = '+00:00', ob_query_timeout = {us}"]

    def setup_statements(self, timeout_s: float) -> list[str]:
        # A DDL waits for the server's DDL service: ob_query_timeout bounds it where
        # the server honours it (the hidden _ob_ddl_timeout, 1000 s, is cluster-wide).
        return [f"SET ob_query_timeout = {max(1, int(timeout_s * 1_000_000))}"]


@dataclass(frozen=True)
class MySQLDialect(EngineDialect):
    """MySQL 8 / MariaDB 10.6+: vectors as little-endian float32 bytes, scored with numpy."""

    name: str = "mysql"
    native_vectors: bool = False
    mariadb: bool = False
    """MariaDB rather than MySQL: the two spell the statement timeout differently."""

    def init_statements(self, query_timeout_s: float) -> list[str]:
        # MariaDB's max_statement_time (seconds) bounds every statement and
        # fails it with 1969; MySQL's max_execution_time (milliseconds) bounds
        # SELECTs only (3024).  Both map to QueryTimeoutError.
        if self.mariadb:
            return [f"SET time_zone = '+00:00', max_statement_time = {float(query_timeout_s):.6f}"]
        ms = max(1, int(query_timeout_s * 1000))
        return [f"SET time_zone = '+00:00', max_execution_time = {ms}"]

    def setup_statements(self, timeout_s: float) -> list[str]:
        # DDL waits for the metadata lock of every open transaction that touched the
        # table, for lock_wait_timeout seconds: a year by default.
        return [f"SET SESSION lock_wait_timeout = {max(1, int(timeout_s))}"]


def dialect_for(server_version: str) -> EngineDialect:
    """Picks the dialect from ``SELECT VERSION()`` (OceanBase reports e.g. '5.7.25-OceanBase seekdb-v1.4.0.0')."""
    if "oceanbase" in server_version.lower():
        return OceanBaseDialect()
    return MySQLDialect(mariadb="mariadb" in server_version.lower())
