"""The bottom of the schema: the one ``MetaData`` and the column conventions every table module shares.

``schema`` (sessions, memories, governance, context), ``schema_langgraph`` and
``schema_agno`` define their tables on :data:`metadata` from here, so each
may be imported alone and none imports another (``schema`` imports the two
others only to register their tables, and re-exports nothing else of them).
"""

from __future__ import annotations

from sqlalchemy import MetaData, text
from sqlalchemy.dialects.mysql import DATETIME

__all__ = [
    "DEFAULT_EMBEDDING_DIM", "ID_LEN", "KEY", "LOCK_TABLE", "SERVER_NOW", "STATE_KEY_LEN", "TABLE_OPTS",
    "VERSION_TABLE", "metadata", "ts",
]

ID_LEN = 128
STATE_KEY_LEN = 255
VERSION_TABLE = "adk_oceanbase_version"
LOCK_TABLE = "adk_oceanbase_lock"
DEFAULT_EMBEDDING_DIM = 384

KEY = {"collation": "utf8mb4_bin"}
"""Key columns compare byte for byte (ids are case-sensitive)."""
TABLE_OPTS = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin"}

metadata = MetaData()


def ts() -> DATETIME:
    """A microsecond ``DATETIME`` column type (UTC)."""
    return DATETIME(fsp=6)


SERVER_NOW = text("CURRENT_TIMESTAMP(6)")
"""The database clock as a column default (UTC: our connections set ``time_zone = '+00:00'``)."""
