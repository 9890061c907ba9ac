"""Initial schema: agent_sessions, session_events, session_state, agent_memories.

Revision ID: 0001
Revises:
Create Date: 2026-11-22

Every step is skipped when already done (``adk_oceanbase.ddl_steps``), so a
run killed half-way completes when run again.  Mirrors ``adk_oceanbase/schema.py`` at the time of writing (a test compares the
migrated database with the metadata).  The memory table's vector column and its
indexes depend on the engine (the dialect in the Alembic config attributes
supplies the fragments: ``adk_oceanbase.dialects``): ``VECTOR(dim)`` + HNSW +
ngram full-text on OceanBase/seekdb, ``LONGBLOB`` + plain full-text on
MySQL/MariaDB.  The rest of the DDL is spelled out here, not borrowed from
live code, and tests/test_revision_ddl.py holds the fragments to what this
revision always sent, so it means the same thing forever.
"""

import sqlalchemy as sa
from alembic import context, op
from sqlalchemy.dialects.mysql import DATETIME, LONGTEXT

from adk_oceanbase import ddl_steps as steps

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_KEY = {"collation": "utf8mb4_bin"}
_OPTS = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin"}


def _id(name: str, length: int = 128, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.String(length, **_KEY), nullable=nullable)


def _ts(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, DATETIME(fsp=6), nullable=nullable)


def upgrade() -> None:
    attrs = context.config.attributes
    dialect = attrs["dialect"]
    dim = int(attrs.get("embedding_dim", 384))

    steps.create_table(
        "agent_sessions",
        _id("app_name"),
        _id("user_id"),
        _id("session_id"),
        sa.Column("last_seq", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("event_count", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("total_tokens", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("last_update_time", sa.Double, nullable=False),
        _ts("created_at"),
        _ts("updated_at"),
        sa.PrimaryKeyConstraint("app_name", "user_id", "session_id", name="pk_agent_sessions"),
        **_OPTS,
    )
    steps.create_index("ix_sessions_user_recent", "agent_sessions", ["app_name", "user_id", "last_update_time", "session_id"])
    steps.create_index("ix_sessions_app_recent", "agent_sessions", ["app_name", "last_update_time", "user_id", "session_id"])

    steps.create_table(
        "session_events",
        _id("app_name"),
        _id("user_id"),
        _id("session_id"),
        sa.Column("seq", sa.BigInteger, nullable=False),
        _id("event_id"),
        _id("invocation_id", 256, nullable=True),
        sa.Column("author", sa.String(256), nullable=True),
        sa.Column("branch", sa.String(512), nullable=True),
        sa.Column("event_type", sa.String(32), nullable=False),
        sa.Column("ts", sa.Double, nullable=False),
        _ts("event_time"),
        sa.Column("token_count", sa.Integer, nullable=False, server_default="0"),
        sa.Column("is_final", sa.SmallInteger, nullable=False, server_default="0"),
        sa.Column("compacted_by", sa.BigInteger, nullable=True),
        sa.Column("event_json", LONGTEXT, nullable=False),
        sa.PrimaryKeyConstraint("app_name", "user_id", "session_id", "seq", name="pk_session_events"),
        sa.UniqueConstraint("app_name", "user_id", "session_id", "event_id", name="uq_session_events_event_id"),
        **_OPTS,
    )
    steps.create_index("ix_events_session_ts", "session_events", ["app_name", "user_id", "session_id", "ts"])

    steps.create_table(
        "session_state",
        _id("app_name"),
        _id("scope", 8),
        _id("user_id"),
        _id("session_id"),
        _id("state_key", 255),
        sa.Column("value_json", LONGTEXT, nullable=False),
        _ts("updated_at"),
        sa.PrimaryKeyConstraint("app_name", "scope", "user_id", "session_id", "state_key", name="pk_session_state"),
        **_OPTS,
    )

    if not steps.has_table("agent_memories"):
        _create_memories(dialect, dim)
    steps.create_index("ix_memories_user_time", "agent_memories", ["app_name", "user_id", "created_at"])
    steps.create_index("ix_memories_user_hash", "agent_memories", ["app_name", "user_id", "content_hash"])
    steps.create_index("ix_memories_embed_status", "agent_memories", ["embed_status", "updated_at"])
    steps.create_index(
        "ix_memories_content_ft", "agent_memories",
        sql="CREATE FULLTEXT INDEX ix_memories_content_ft ON agent_memories(content)"
        + dialect.fulltext_parser_clause("ngram"),
    )
    vector_index = dialect.vector_index_sql("ix_memories_embedding", "agent_memories", "embedding")
    if vector_index is not None:  # HNSW on OceanBase/seekdb; MySQL/MariaDB score vectors without an index
        steps.create_index("ix_memories_embedding", "agent_memories", sql=vector_index)


def _create_memories(dialect, dim: int) -> None:
    """The memory table as explicit DDL: its vector column type differs per engine."""
    op.execute(
        f"""
        CREATE TABLE agent_memories (
            memory_id VARCHAR(64) COLLATE utf8mb4_bin NOT NULL,
            app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
            user_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
            content LONGTEXT NOT NULL,
            content_hash VARCHAR(64) COLLATE utf8mb4_bin NOT NULL,
            author VARCHAR(256),
            session_id VARCHAR(128) COLLATE utf8mb4_bin,
            event_ids LONGTEXT,
            topics LONGTEXT,
            custom_metadata LONGTEXT,
            importance_score FLOAT NOT NULL DEFAULT 0.5,
            access_count INTEGER NOT NULL DEFAULT 0,
            last_accessed_at DATETIME(6),
            created_at DATETIME(6) NOT NULL,
            updated_at DATETIME(6) NOT NULL,
            embedding {dialect.vector_column_sql(dim)},
            embedding_model VARCHAR(128),
            embedding_dim INTEGER,
            embed_status VARCHAR(16) NOT NULL DEFAULT 'pending',
            embed_attempts INTEGER NOT NULL DEFAULT 0,
            extractor VARCHAR(64),
            superseded_by VARCHAR(64) COLLATE utf8mb4_bin,
            CONSTRAINT pk_agent_memories PRIMARY KEY (memory_id)
        ) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
        """
    )


def downgrade() -> None:
    steps.drop_table("agent_memories")
    steps.drop_table("session_state")
    steps.drop_table("session_events")
    steps.drop_table("agent_sessions")
