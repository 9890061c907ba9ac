"""lg_checkpoints.delta_*: one changed channel value of a put rides in the checkpoint row (issue 26).

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-28

A ``put`` whose step changed one list channel (the message list) was two
statements and a COMMIT: the blob row, then the checkpoint row.  seekdb
commits a one-statement autocommit transaction ~0.15-0.2 ms cheaper than
``INSERT; UPSERT; COMMIT`` (0.54 against 0.69 ms, bare aiomysql,
interleaved, load 2.0, 2026-11-28), so that value now rides in the
checkpoint row: ``delta_channel`` / ``delta_version`` name it, ``delta_type``
/ ``delta_payload`` are what ``lg_checkpoint_blobs`` would hold.  NULL for
rows written before and for puts that still use the blob table; a saver
that deletes such a row while its thread lives first copies the value into
``lg_checkpoint_blobs`` (``adk_oceanbase.langgraph.queries``).
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.mysql import LONGBLOB

from adk_oceanbase import ddl_steps as steps

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

_KEY = {"collation": "utf8mb4_bin"}


def upgrade() -> None:
    steps.add_column("lg_checkpoints", sa.Column("delta_channel", sa.String(128, **_KEY), nullable=True))
    steps.add_column("lg_checkpoints", sa.Column("delta_version", sa.String(64, **_KEY), nullable=True))
    steps.add_column("lg_checkpoints", sa.Column("delta_type", sa.String(32), nullable=True))
    steps.add_column("lg_checkpoints", sa.Column("delta_payload", LONGBLOB, nullable=True))


def downgrade() -> None:
    # The values would be lost with the columns: copy them to the blob table first.
    op.execute(
        "INSERT IGNORE INTO lg_checkpoint_blobs (app_name, thread_id, checkpoint_ns, channel, version, user_id, "
        "value_type, payload) SELECT app_name, thread_id, checkpoint_ns, delta_channel, delta_version, user_id, "
        "delta_type, delta_payload FROM lg_checkpoints WHERE delta_payload IS NOT NULL"
    )
    for column in ("delta_payload", "delta_type", "delta_version", "delta_channel"):
        steps.drop_column("lg_checkpoints", column)
