"""LangGraph's tables (revision 0017, :mod:`adk_oceanbase.langgraph`): checkpoints, channel blobs, writes, Store items."""

from __future__ import annotations

from sqlalchemy import Column, Double, Index, Integer, PrimaryKeyConstraint, String, Table
from sqlalchemy.dialects.mysql import LONGBLOB, LONGTEXT

from .schema_base import ID_LEN, metadata
from .schema_base import KEY as _KEY
from .schema_base import SERVER_NOW as _SERVER_NOW
from .schema_base import TABLE_OPTS as _TABLE_OPTS
from .schema_base import ts as _ts

__all__ = ["lg_checkpoint_blobs", "lg_checkpoint_writes", "lg_checkpoints", "lg_store_fields", "lg_store_items"]

# ---------------------------------------------------------------- LangGraph (migration 0017, adk_oceanbase.langgraph)
# A checkpoint row holds the checkpoint without its channel values; each channel's value is a blob
# stored once per (channel, version), as LangGraph's Postgres saver does.  ``app_name`` is the saver's
# or store's, first in every key; ``user_id`` ties a thread or namespace to a user for erasure
# ('' = none).  Key sizes fit InnoDB's 3,072 bytes in utf8mb4 (checkpoint_ns 255, channel 128).
def _lg_id(name: str, length: int = ID_LEN, **kw: object) -> Column:
    return Column(name, String(length, **_KEY), nullable=False, **kw)


def _lg_user() -> Column:
    return Column("user_id", String(ID_LEN, **_KEY), nullable=False, server_default="")


lg_checkpoints = Table(
    "lg_checkpoints",
    metadata,
    _lg_id("app_name"), _lg_id("thread_id"), _lg_id("checkpoint_ns", 255, server_default=""), _lg_id("checkpoint_id", 64),
    Column("parent_checkpoint_id", String(64, **_KEY), nullable=True),
    _lg_user(),
    Column("run_id", String(ID_LEN, **_KEY), nullable=True),  # metadata's run_id, for delete_for_runs
    Column("value_type", String(32), nullable=False),  # the serializer's type tag of ``checkpoint``
    Column("checkpoint", LONGBLOB, nullable=False),  # the checkpoint without channel_values
    Column("metadata", LONGTEXT, nullable=False),  # JSON: list(filter=...) is a JSON_CONTAINS in SQL
    Column("created_at", _ts(), nullable=False, server_default=_SERVER_NOW),  # retention's clock
    # One changed channel value of the put, as lg_checkpoint_blobs would hold it (revision 0023): a
    # put is then one statement, which seekdb commits cheaper (adk_oceanbase.langgraph.saver).
    Column("delta_channel", String(ID_LEN, **_KEY), nullable=True),
    Column("delta_version", String(64, **_KEY), nullable=True),
    Column("delta_type", String(32), nullable=True),
    Column("delta_payload", LONGBLOB, nullable=True),
    PrimaryKeyConstraint("app_name", "thread_id", "checkpoint_ns", "checkpoint_id", name="pk_lg_checkpoints"),
    Index("ix_lg_checkpoints_user", "app_name", "user_id"),
    Index("ix_lg_checkpoints_run", "app_name", "run_id"),
    Index("ix_lg_checkpoints_created", "app_name", "created_at"),
    **_TABLE_OPTS,
)

lg_checkpoint_blobs = Table(
    "lg_checkpoint_blobs",
    metadata,
    _lg_id("app_name"), _lg_id("thread_id"), _lg_id("checkpoint_ns", 255, server_default=""), _lg_id("channel"),
    _lg_id("version", 64),
    _lg_user(),
    Column("value_type", String(32), nullable=False),  # "empty": the channel had no value at that version
    Column("payload", LONGBLOB, nullable=True),
    PrimaryKeyConstraint("app_name", "thread_id", "checkpoint_ns", "channel", "version", name="pk_lg_checkpoint_blobs"),
    Index("ix_lg_blobs_user", "app_name", "user_id"),
    **_TABLE_OPTS,
)

lg_checkpoint_writes = Table(
    "lg_checkpoint_writes",
    metadata,
    _lg_id("app_name"), _lg_id("thread_id"), _lg_id("checkpoint_ns", 255, server_default=""), _lg_id("checkpoint_id", 64),
    _lg_id("task_id", 64),
    Column("idx", Integer, nullable=False),  # negative for LangGraph's special writes (WRITES_IDX_MAP)
    _lg_user(),
    Column("channel", String(128, **_KEY), nullable=False),
    Column("task_path", String(255, **_KEY), nullable=False, server_default=""),
    Column("value_type", String(32), nullable=False),
    Column("payload", LONGBLOB, nullable=True),
    PrimaryKeyConstraint(
        "app_name", "thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx", name="pk_lg_checkpoint_writes"
    ),
    Index("ix_lg_writes_user", "app_name", "user_id"),
    **_TABLE_OPTS,
)

lg_store_items = Table(
    "lg_store_items",
    metadata,
    # The namespace's labels joined by "." (LangGraph forbids "." in a label), so a prefix is a LIKE.
    _lg_id("app_name"), _lg_id("namespace", 300), _lg_id("item_key", 255),
    _lg_user(),
    Column("value_json", LONGTEXT, nullable=False),
    Column("created_at", _ts(), nullable=False),
    Column("updated_at", _ts(), nullable=False),
    Column("expires_at", _ts(), nullable=True),  # TTL: NULL never expires
    Column("ttl_minutes", Double, nullable=True),  # for refresh_on_read
    Column("indexed_fields", Integer, nullable=False, server_default="0"),  # agent_memories rows of this item
    Column("stored_at", _ts(), nullable=False, server_default=_SERVER_NOW),  # retention's clock
    PrimaryKeyConstraint("app_name", "namespace", "item_key", name="pk_lg_store_items"),
    Index("ix_lg_store_user", "app_name", "user_id"),
    Index("ix_lg_store_expires", "app_name", "expires_at"),
    # a semantic search's unscored fill (items with no indexed field) without scanning the prefix
    Index("ix_lg_store_unindexed", "app_name", "indexed_fields", "namespace"),
    **_TABLE_OPTS,
)

lg_store_fields = Table(
    "lg_store_fields",
    metadata,
    # One indexed field of a Store item -> the agent_memories row holding its text (memory_user's pool):
    # semantic search is the memory service's hybrid search, joined back to the items here.
    _lg_id("app_name"), _lg_id("namespace", 300), _lg_id("item_key", 255),
    Column("field_no", Integer, nullable=False),
    _lg_user(),
    Column("path", String(255, **_KEY), nullable=False),
    _lg_id("memory_user"), _lg_id("memory_id", 64),
    PrimaryKeyConstraint("app_name", "namespace", "item_key", "field_no", name="pk_lg_store_fields"),
    Index("ix_lg_fields_user", "app_name", "user_id"),
    Index("ix_lg_fields_memory", "app_name", "memory_user", "memory_id"),
    **_TABLE_OPTS,
)
