"""The dialect seam: everything that differs between OceanBase/seekdb and MySQL/MariaDB.

Services and query builders ask the active :class:`EngineDialect` instead of
testing the dialect name.  Both engines speak the MySQL protocol and share the
``INSERT ... ON DUPLICATE KEY UPDATE`` upsert, so only vectors, full-text and
session settings live here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

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

    # ---------------------------------------------------------------- vectors
    def vector_column_ddl(self, dim: int) -> str:
        raise NotImplementedError

    def encode_vector(self, vec: Sequence[float] | np.ndarray) -> str | bytes:
        raise NotImplementedError

    def decode_vector(self, raw: object) -> np.ndarray | None:
        raise NotImplementedError

    def vector_index_ddl(self, table: str, column: str, name: str) -> str | None:
        """DDL creating the ANN index, or ``None`` when the engine has none."""
        return None

    def fulltext_index_ddl(self, table: str, column: str, name: str) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class OceanBaseDialect(EngineDialect):
    """OceanBase 4.3.5+ and seekdb: native ``VECTOR``, HNSW, ``APPROXIMATE``, ngram full-text."""

    name: str = "oceanbase"
    native_vectors: bool = True

    def init_statements(self, query_timeout_s: float) -> list[str]:
        # ob_query_timeout is in microseconds; the server default (10 s) is too
        # short for migrations and bulk loads.
        us = int(query_timeout_s * 1_000_000)
        return [f"SET time_zone = '+00:00', ob_query_timeout = {us}"]

    def vector_column_ddl(self, dim: int) -> str:
        return f"VECTOR({dim})"

    def encode_vector(self, vec: Sequence[float] | np.ndarray) -> str:
        arr = np.asarray(vec, dtype=np.float32)
        # repr of float32 via float() keeps ~9 significant digits: enough for float32.
        return "[" + ",".join(f"{float(x):.8g}" for x in arr) + "]"

    def decode_vector(self, raw: object) -> np.ndarray | None:
        if raw is None:
            return None
        if isinstance(raw, (bytes, bytearray)):
            raw = raw.decode()
        text = str(raw).strip().strip("[]")
        if not text:
            return np.zeros(0, dtype=np.float32)
        return np.array([float(x) for x in text.split(",")], dtype=np.float32)

    def vector_index_ddl(self, table: str, column: str, name: str) -> str:
        return f"CREATE VECTOR INDEX {name} ON {table}({column}) WITH (distance=cosine, type=hnsw, lib=vsag)"

    def fulltext_index_ddl(self, table: str, column: str, name: str) -> str:
        # ngram so CJK text is searchable (ADK issue #2438: Korean search failing).
        return f"CREATE FULLTEXT INDEX {name} ON {table}({column}) WITH PARSER ngram"


@dataclass(frozen=True)
class MySQLDialect(EngineDialect):
    """MySQL 8 / MariaDB 10.6+: vectors as little-endian float32 bytes, scored with numpy."""

    name: str = "mysql"
    native_vectors: bool = False

    def vector_column_ddl(self, dim: int) -> str:
        return "LONGBLOB"

    def encode_vector(self, vec: Sequence[float] | np.ndarray) -> bytes:
        return np.asarray(vec, dtype="<f4").tobytes()

    def decode_vector(self, raw: object) -> np.ndarray | None:
        if raw is None:
            return None
        return np.frombuffer(bytes(raw), dtype="<f4").copy()

    def fulltext_index_ddl(self, table: str, column: str, name: str) -> str:
        return f"CREATE FULLTEXT INDEX {name} ON {table}({column})"


def dialect_for(server_version: str) -> EngineDialect:
    """Picks the dialect from ``SELECT VERSION()`` (OceanBase reports e.g. '5.7.25-OceanBase seekdb-v1.4.0.0')."""
    if "oceanbase" in server_version.lower():
        return OceanBaseDialect()
    return MySQLDialect()
