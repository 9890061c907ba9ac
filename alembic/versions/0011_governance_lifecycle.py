"""Governance: memory poisoning guards, per-user memory opt-out, the debug archive.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24

* ``agent_memories.tainted`` (0/1) and ``agent_memories.confidence`` (0..1,
  default 1): search never returns, and the assembler never injects, a
  tainted memory or one below ``MemorySettings.min_confidence`` (seed 000,
  8.2.3 / A.1.7).  Existing rows become untainted with confidence 1, which is
  what they were treated as before.
* ``memory_opt_out``: one row per (app, user) who asked not to be remembered.
* ``debug_archive``: ``temp:`` state and tool scratch values ADK discards,
  kept per session in a bounded FIFO when the debug archive is on (seed 001,
  optimisation 3).

Each step checks before it creates or adds, so a run interrupted half-way
(DDL commits on its own on both engines) finishes when started again.
"""

import sqlalchemy as sa
from sqlalchemy.dialects.mysql import DATETIME, LONGTEXT

from adk_oceanbase import ddl_steps as steps

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_KEY = {"collation": "utf8mb4_bin"}
_OPTS = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin"}


def _id(name: str, length: int = 128, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.String(length, **_KEY), nullable=nullable)


def _ts(name: str) -> sa.Column:
    return sa.Column(name, DATETIME(fsp=6), nullable=False)


def upgrade() -> None:
    steps.add_column("agent_memories", sa.Column("tainted", sa.SmallInteger, nullable=False, server_default="0"))
    steps.add_column("agent_memories", sa.Column("confidence", sa.Float, nullable=False, server_default="1"))
    steps.create_table(
        "memory_opt_out",
        _id("app_name"),
        _id("user_id"),
        _ts("opted_out_at"),
        sa.PrimaryKeyConstraint("app_name", "user_id", name="pk_memory_opt_out"),
        **_OPTS,
    )
    steps.create_table(
        "debug_archive",
        _id("app_name"),
        _id("user_id"),
        _id("session_id"),
        sa.Column("entry_seq", sa.BigInteger, nullable=False),
        sa.Column("event_seq", sa.BigInteger, nullable=False),
        _id("event_id"),
        _id("invocation_id", 256, nullable=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("tool_name", sa.String(256), nullable=True),
        _id("state_key", 255),
        sa.Column("value_json", LONGTEXT, nullable=False),
        _ts("created_at"),
        sa.PrimaryKeyConstraint("app_name", "user_id", "session_id", "entry_seq", name="pk_debug_archive"),
        **_OPTS,
    )


def downgrade() -> None:
    steps.drop_table("debug_archive")
    steps.drop_table("memory_opt_out")
    steps.drop_column("agent_memories", "confidence")
    steps.drop_column("agent_memories", "tainted")
