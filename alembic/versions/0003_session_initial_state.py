"""agent_sessions.initial_state: the state given to create_session, kept for replay.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22

Creation state is not an event, so without it a replay "as of event N"
cannot know values set at creation and changed later.  Sessions created
before this revision have NULL here and replay treats them as created empty.
"""

import sqlalchemy as sa
from sqlalchemy.dialects.mysql import LONGTEXT

from adk_oceanbase import ddl_steps as steps

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    steps.add_column("agent_sessions", sa.Column("initial_state", LONGTEXT, nullable=True))


def downgrade() -> None:
    steps.drop_column("agent_sessions", "initial_state")
