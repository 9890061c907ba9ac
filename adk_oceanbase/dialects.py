"""The dialect seam: everything that differs between OceanBase/seekdb and MySQL/MariaDB.

Services, query builders, the Alembic revisions and telemetry ask the active
:class:`EngineDialect` instead of testing which engine they are on; no module
outside this one branches on the engine (tests/test_layering.py).  Both
engines speak the MySQL protocol and share the ``INSERT ... ON DUPLICATE KEY
UPDATE`` upsert, so only vector storage and scoring (``native_vectors``, the
vector codec and column type, where memory search ranks), per-connection
settings, the DDL fragments that differ (vector column, vector index,
full-text parser) and the engine's name for telemetry live here.

The connected engine's dialect comes from its version string
(:func:`dialect_for`, read by ``Database.start()``); before connecting, the
URL names the family (:func:`dialect_for_config`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np
from sqlalchemy.types import TypeEngine, UserDefinedType

from .schema import DEFAULT_EMBEDDING_DIM, FLOAT32_VECTORS, TEXT_VECTORS, Vector, VectorCodec

if TYPE_CHECKING:
    from .config import Config

__all__ = ["EngineDialect", "MySQLDialect", "OceanBaseDialect", "dialect_for", "dialect_for_config"]


@dataclass(frozen=True)
class EngineDialect:
    """Base: behaviour common to both engines; subclasses override the differences."""

    name: str = "base"
    native_vectors: bool = False
    """True when the engine computes vector distances in SQL (OceanBase/seekdb)."""
    db_system: str = "mysql"
    """OpenTelemetry's ``db.system`` for the engine (the ``db.system`` span and metric attribute)."""
    fulltext_parsers: bool = False
    """True when a full-text index names its tokenizer (``WITH PARSER ik``); else the built-in one only."""
    rebuilds_vector_index: bool = False
    """True when the engine keeps an HNSW vector index that must be told to rebuild as rows arrive
    (``memory/index_upkeep.py``); False where vectors are scored without an index."""

    def init_statements(self, query_timeout_s: float) -> list[str]:
        """Statements run on every new connection. UTC always: ADK timestamps are UTC epochs."""
        return ["SET time_zone = '+00:00'"]

    def setup_statements(self, timeout_s: float) -> list[str]:
        """Statements bounding a setup connection's server-side waits to ``timeout_s`` (DDL, metadata locks)."""
        return []

    def statement_timeout_statements(self, timeout_s: float) -> list[str]:
        """Statements setting this connection's statement timeout (``Config.query_timeout_s`` is the pool's)."""
        return []

    # ------------------------------------------------------------ DDL fragments
    # The Alembic revisions build their engine-specific DDL from these, and a
    # revision is history: a fragment may never change what an existing
    # revision sends (tests/test_revision_ddl.py).  A new spelling is a new
    # parameter or method, used by a new revision.

    def vector_column_sql(self, dim: int) -> str:
        """The memory vector column's type: ``VECTOR(dim)``, or ``LONGBLOB`` holding float32 bytes."""
        raise NotImplementedError

    def vector_column_type(self, dim: int) -> TypeEngine:
        """:meth:`vector_column_sql` as a column type, for a ``CREATE TABLE`` compiled from the metadata."""
        return _ColumnSpec(self.vector_column_sql(dim))

    def fulltext_parser_clause(self, parser: str) -> str:
        """``" WITH PARSER <parser>"`` after a full-text index's columns; empty where the engine has only its own."""
        return f" WITH PARSER {parser}" if self.fulltext_parsers else ""

    def vector_index_sql(self, name: str, table: str, column: str) -> str | None:
        """The ``CREATE VECTOR INDEX`` statement for ``table(column)``, or ``None`` where vectors have no index."""
        return None

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

    db_system: str = "oceanbase"
    fulltext_parsers: bool = True
    rebuilds_vector_index: bool = True
    name: str = "oceanbase"
    native_vectors: bool = True
    vector_codec: VectorCodec = TEXT_VECTORS
    ranking: str = "sql"

    def init_statements(self, query_timeout_s: float) -> list[str]:
        # ob_query_timeout is in microseconds; the server default (10 s) is too
        # short for migrations and bulk loads.
        us = int(query_timeout_s * 1_000_000)
        return [f"SET time_zone = '+00:00', ob_query_timeout = {us}"]

    def statement_timeout_statements(self, timeout_s: float) -> list[str]:
        return [f"SET ob_query_timeout = {int(timeout_s * 1_000_000)}"]

    def vector_column_sql(self, dim: int) -> str:
        return f"VECTOR({int(dim)})"

    def vector_index_sql(self, name: str, table: str, column: str) -> str | None:
        return f"CREATE VECTOR INDEX {name} ON {table}({column}) WITH (distance=cosine, type=hnsw, lib=vsag)"

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

    def statement_timeout_statements(self, timeout_s: float) -> list[str]:
        if self.mariadb:
            return [f"SET max_statement_time = {float(timeout_s):.6f}"]
        return [f"SET max_execution_time = {max(1, int(timeout_s * 1000))}"]

    def vector_column_sql(self, dim: int) -> str:
        # Little-endian float32 bytes (encode_vector); the dimension is the embedder's to keep.
        return "LONGBLOB"

    def setup_statements(self, timeout_s: float) -> list[str]:
        # DDL waits for the metadata lock of every open transaction that touched the
        # table, for lock_wait_timeout seconds: a year by default.
        return [f"SET SESSION lock_wait_timeout = {max(1, int(timeout_s))}"]


def dialect_for(server_version: str) -> EngineDialect:
    """Picks the dialect from ``SELECT VERSION()`` (OceanBase reports e.g. '5.7.25-OceanBase seekdb-v1.4.0.0')."""
    if "oceanbase" in server_version.lower():
        return OceanBaseDialect()
    return MySQLDialect(mariadb="mariadb" in server_version.lower())


def dialect_for_config(config: "Config") -> EngineDialect:
    """The engine family a configuration names, before connecting: OceanBase for ``seekdb`` / ``oceanbase`` URLs.

    MySQL and MariaDB are told apart by the server's version only
    (:func:`dialect_for`); this answers what needs no connection (telemetry's
    ``db.system``), never for a connected :class:`~adk_oceanbase.engine.Database`,
    whose ``dialect`` is the server's own answer.
    """
    return _OCEANBASE if config.flavor in ("seekdb", "oceanbase") else _MYSQL


class _ColumnSpec(UserDefinedType):
    """A column type that is only its DDL spelling (``VECTOR(384)``, ``LONGBLOB``): for compiling a ``CREATE TABLE``."""

    cache_ok = True

    def __init__(self, spec: str):
        self.spec = spec

    def get_col_spec(self, **kw: object) -> str:
        return self.spec


_OCEANBASE = OceanBaseDialect()
_MYSQL = MySQLDialect()
