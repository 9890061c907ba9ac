"""The dialect seam: everything that differs between OceanBase/seekdb and MySQL/MariaDB.

Services and query builders ask the active :class:`EngineDialect` instead of
testing the dialect name.  Both engines speak the MySQL protocol and share the
``INSERT ... ON DUPLICATE KEY UPDATE`` upsert, so only vector storage and
scoring (``native_vectors``, the vector codec) and per-connection settings
live here.  Engine-specific DDL (VECTOR column, HNSW index, full-text parser)
is spelled out in the Alembic revisions and ``sql/<engine>/schema.sql``.
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

    def setup_statements(self, timeout_s: float) -> list[str]:
        """Statements bounding a setup connection's server-side waits to ``timeout_s`` (DDL, metadata locks)."""
        return []

    # ---------------------------------------------------------------- vectors

    def encode_vector(self, vec: Sequence[float] | np.ndarray) -> str | bytes:
        raise NotImplementedError

    def decode_vector(self, raw: object) -> np.ndarray | None:
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

    def setup_statements(self, timeout_s: float) -> list[str]:
        # A DDL waits for the server's DDL service: ob_query_timeout bounds it where
        # the server honours it (the hidden _ob_ddl_timeout, 1000 s, is cluster-wide).
        return [f"SET ob_query_timeout = {max(1, int(timeout_s * 1_000_000))}"]

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

    def encode_vector(self, vec: Sequence[float] | np.ndarray) -> bytes:
        return np.asarray(vec, dtype="<f4").tobytes()

    def decode_vector(self, raw: object) -> np.ndarray | None:
        if raw is None:
            return None
        return np.frombuffer(bytes(raw), dtype="<f4").copy()



def dialect_for(server_version: str) -> EngineDialect:
    """Picks the dialect from ``SELECT VERSION()`` (OceanBase reports e.g. '5.7.25-OceanBase seekdb-v1.4.0.0')."""
    if "oceanbase" in server_version.lower():
        return OceanBaseDialect()
    return MySQLDialect(mariadb="mariadb" in server_version.lower())
