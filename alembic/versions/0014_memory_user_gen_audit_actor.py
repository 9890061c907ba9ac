"""Memory writes hold against erasure and opt-out (memory_user_gen); the audit log says who acted (audit_log.actor).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-25

* ``memory_user_gen``: one row per (app, user) with a ``generation`` counter.
  Every memory write locks the row in its own transaction and compares the
  generation with the one it read when the call started; ``delete_user_data``
  and ``set_memory_opt_out`` bump it under the same lock (issue 33: writes
  issued before an erasure committed after it and re-created 300 memories).
  Keyed by ``sha256(user_id)``: the row must outlive the erasure it records,
  and no table but the audit log keeps the user id after it.
* ``audit_log.actor``: who made the call (``AuditSettings.actor``,
  ``audit_actor(...)``, the CLI's ``--actor``); NULL on older rows.

Each step checks before it creates or adds, so a run interrupted half-way
(DDL commits on its own on both engines) finishes when started again.
"""

import sqlalchemy as sa
from sqlalchemy.dialects.mysql import DATETIME

from adk_oceanbase import ddl_steps as steps

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_KEY = {"collation": "utf8mb4_bin"}
_OPTS = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin"}


def upgrade() -> None:
    steps.create_table(
        "memory_user_gen",
        sa.Column("app_name", sa.String(128, **_KEY), nullable=False),
        sa.Column("user_key", sa.String(64, **_KEY), nullable=False),
        sa.Column("generation", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("erased_at", DATETIME(fsp=6), nullable=True),
        sa.Column("updated_at", DATETIME(fsp=6), nullable=False),
        sa.PrimaryKeyConstraint("app_name", "user_key", name="pk_memory_user_gen"),
        **_OPTS,
    )
    steps.add_column("audit_log", sa.Column("actor", sa.String(128, **_KEY), nullable=True))


def downgrade() -> None:
    steps.drop_column("audit_log", "actor")
    steps.drop_table("memory_user_gen")
