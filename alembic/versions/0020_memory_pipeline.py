"""Memory pipeline: a durable extraction queue, and how much each memory condensed its source.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-26

* ``memory_extraction_jobs``: one row per conversation exchange waiting for
  LLM extraction (issue #31, seed 001).  ``add_session_to_memory`` commits the
  rows and returns; workers in any process claim them (token + time, a lease
  like the vectorizer's ``embed_claim``), retry a failed one after a backoff
  (``next_attempt_at``) and mark it ``done`` (payload dropped) once its
  memories are written.  Keyed by
  app and user, so erasure deletes a user's pending work with the rest.
* ``agent_memories.original_length`` / ``compression_ratio`` / ``condensed``:
  the characters of the source the memory came from, ``len(content) /
  original_length``, and whether an LLM condensed it (``0``: stored raw).
  NULL for memories written before this revision or by ``add_memory``.

Each step checks before it acts, so a setup interrupted half-way (MySQL DDL
commits statement by statement) completes when run again.
"""

import sqlalchemy as sa
from sqlalchemy.dialects.mysql import DATETIME, LONGTEXT

from adk_oceanbase import ddl_steps as steps

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

_KEY = {"collation": "utf8mb4_bin"}
_OPTS = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin"}


def upgrade() -> None:
    steps.create_table(
        "memory_extraction_jobs",
        sa.Column("app_name", sa.String(128, **_KEY), nullable=False),
        sa.Column("user_id", sa.String(128, **_KEY), nullable=False),
        sa.Column("job_id", sa.String(64, **_KEY), nullable=False),
        sa.Column("session_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("payload", LONGTEXT, nullable=False),
        sa.Column("generation", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("status", sa.String(16), nullable=False, server_default="pending"),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("next_attempt_at", DATETIME(fsp=6), nullable=False),
        sa.Column("claim", sa.String(32, **_KEY), nullable=True),
        sa.Column("claimed_at", DATETIME(fsp=6), nullable=True),
        sa.Column("last_error", sa.String(256), nullable=True),
        sa.Column("created_at", DATETIME(fsp=6), nullable=False),
        sa.PrimaryKeyConstraint("app_name", "user_id", "job_id", name="pk_memory_extraction_jobs"),
        **_OPTS,
    )
    steps.create_index("ix_extraction_jobs_due", "memory_extraction_jobs", ["status", "next_attempt_at"])
    steps.add_column("agent_memories", sa.Column("original_length", sa.Integer, nullable=True))
    steps.add_column("agent_memories", sa.Column("compression_ratio", sa.Float, nullable=True))
    steps.add_column("agent_memories", sa.Column("condensed", sa.SmallInteger, nullable=True))


def downgrade() -> None:
    steps.drop_column("agent_memories", "condensed")
    steps.drop_column("agent_memories", "compression_ratio")
    steps.drop_column("agent_memories", "original_length")
    steps.drop_table("memory_extraction_jobs")
