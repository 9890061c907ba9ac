"""Retention counts from the server's clock: agent_sessions.touched_at, agent_memories.stored_at / last_served_at.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-25

Issue 33: a session appended to seconds ago was swept as 40 days old because
its event carried a 40-day-old client timestamp (``last_update_time`` is the
event's own time), and a memory stored seconds ago was swept because its
``created_at`` is its source's time.  Retention now counts from columns only
the database clock writes (``UTC_TIMESTAMP(6)``):

* ``agent_sessions.touched_at``: the last create / append / import;
* ``agent_memories.stored_at``: the last insert, merged repeat or (for a
  tombstone) deletion; ``last_served_at``: the last search that served it.

Both ``NOT NULL`` columns default to ``CURRENT_TIMESTAMP(6)``, so a writer that
does not name them (an older release still running during a rolling upgrade)
gets the server's time instead of failing.  Existing rows have no server
record of their last use; the backfill takes the best evidence there is,
``updated_at`` (capped at the migration's time), and ``last_accessed_at``
for ``last_served_at``.  The backfill walks the keys 500 rows at a time and
every statement is idempotent (``LEAST`` of the same values), so a run
interrupted anywhere finishes when started again.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.mysql import DATETIME

from adk_oceanbase import ddl_steps as steps

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_NOW = sa.text("CURRENT_TIMESTAMP(6)")
_AFTER = "(app_name > :a OR (app_name = :a AND (user_id > :u OR (user_id = :u AND session_id > :s))))"


def _sessions_in_key_order(batch: int = 500):
    last = ("", "", "")
    while True:
        rows = op.get_bind().execute(
            sa.text(f"SELECT app_name, user_id, session_id FROM agent_sessions WHERE {_AFTER} "
                    "ORDER BY app_name, user_id, session_id LIMIT :n"),
            {"a": last[0], "u": last[1], "s": last[2], "n": batch},
        ).all()
        if not rows:
            return
        yield rows
        last = tuple(rows[-1])


def _by_user(rows) -> dict:
    out: dict = {}
    for app, user, key in rows:
        out.setdefault((app, user), []).append(key)
    return out


def _backfill_sessions() -> None:
    conn = op.get_bind()
    stmt = sa.text(
        "UPDATE agent_sessions SET touched_at = LEAST(touched_at, updated_at) "
        "WHERE app_name = :a AND user_id = :u AND session_id IN :ids"
    ).bindparams(sa.bindparam("ids", expanding=True))
    for rows in _sessions_in_key_order():
        for (app, user), sids in _by_user(rows).items():
            conn.execute(stmt, {"a": app, "u": user, "ids": sids})


def _backfill_memories() -> None:
    conn = op.get_bind()
    stmt = sa.text(
        "UPDATE agent_memories SET stored_at = LEAST(stored_at, updated_at), "
        "last_served_at = CASE WHEN last_served_at IS NULL AND last_accessed_at IS NOT NULL "
        "THEN LEAST(last_accessed_at, UTC_TIMESTAMP(6)) ELSE last_served_at END "
        "WHERE app_name = :a AND user_id = :u AND memory_id IN :ids"
    ).bindparams(sa.bindparam("ids", expanding=True))
    for rows in steps.memories_in_key_order("app_name, user_id, memory_id", "1 = 1"):
        for (app, user), mids in _by_user(rows).items():
            conn.execute(stmt, {"a": app, "u": user, "ids": mids})


def upgrade() -> None:
    steps.add_column("agent_sessions", sa.Column("touched_at", DATETIME(fsp=6), nullable=False, server_default=_NOW))
    _backfill_sessions()
    steps.create_index("ix_sessions_app_touched", "agent_sessions", ["app_name", "touched_at"])
    steps.add_column("agent_memories", sa.Column("stored_at", DATETIME(fsp=6), nullable=False, server_default=_NOW))
    steps.add_column("agent_memories", sa.Column("last_served_at", DATETIME(fsp=6), nullable=True))
    _backfill_memories()
    steps.create_index("ix_memories_app_stored", "agent_memories", ["app_name", "stored_at"])


def downgrade() -> None:
    steps.drop_index("ix_memories_app_stored", "agent_memories")
    steps.drop_column("agent_memories", "last_served_at")
    steps.drop_column("agent_memories", "stored_at")
    steps.drop_index("ix_sessions_app_touched", "agent_sessions")
    steps.drop_column("agent_sessions", "touched_at")
