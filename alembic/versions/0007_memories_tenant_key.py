"""agent_memories keyed per tenant (app_name, user_id, memory_id); embedding claims with a lease.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23

Key: until now ``memory_id`` alone was the primary key, so user B's
``add_memory`` with an id user A had used was silently skipped (and told B
that the id existed).  The key is now ``(app_name, user_id, memory_id)``, like
every other table's.  ``ALTER TABLE ... DROP PRIMARY KEY, ADD PRIMARY KEY``
works in place on seekdb 1.x with the HNSW and ik full-text indexes present
(probed: both indexes answer afterwards) and on MariaDB; OceanBase rebuilds
the table for it (an offline DDL), so expect it to take a while on big tables.

Claims: ``embed_claim`` (a token) and ``embed_claimed_at`` (when) let one
vectorizer claim pending rows with a conditional UPDATE (status
``embedding``) so that two processes never embed the same row; a claim older
than the lease is taken over (the claimer died).  Rows left ``failed`` by
earlier versions (which retried them forever) start over as ``pending``.

Every step checks whether it is done already, so an interrupted upgrade can
simply be run again.  The downgrade fails with a duplicate-key error when two
tenants now share a memory id: such rows cannot go back under a global key.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.mysql import DATETIME

from adk_oceanbase import ddl_steps as steps

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_TENANT_KEY = ["app_name", "user_id", "memory_id"]


def _primary_key() -> list[str]:
    rows = op.get_bind().execute(
        sa.text(
            "SELECT column_name FROM information_schema.statistics WHERE table_schema = DATABASE() "
            "AND table_name = 'agent_memories' AND index_name = 'PRIMARY' ORDER BY seq_in_index"
        )
    ).all()
    return [str(r[0]).lower() for r in rows]


def _set_key(columns: list[str]) -> None:
    if _primary_key() != columns:
        op.execute(f"ALTER TABLE agent_memories DROP PRIMARY KEY, ADD PRIMARY KEY ({', '.join(columns)})")


def upgrade() -> None:
    _set_key(_TENANT_KEY)
    steps.add_column("agent_memories", sa.Column("embed_claim", sa.String(32, collation="utf8mb4_bin"), nullable=True))
    steps.add_column("agent_memories", sa.Column("embed_claimed_at", DATETIME(fsp=6), nullable=True))
    op.execute("UPDATE agent_memories SET embed_status = 'pending', embed_attempts = 0 WHERE embed_status = 'failed'")


def downgrade() -> None:
    # Claimed rows go back to the statuses the old code knows.
    if steps.has_column("agent_memories", "embed_claim"):
        op.execute("UPDATE agent_memories SET embed_status = 'pending' WHERE embed_status = 'embedding'")
    steps.drop_column("agent_memories", "embed_claim")
    steps.drop_column("agent_memories", "embed_claimed_at")
    _set_key(["memory_id"])
