"""agent_memories.turn_pos (conversation neighbours) and a stemmed search_text.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22

``turn_pos``: where a turn memory sits in its session (the event's ``seq`` in
``session_events`` when this database holds the session, else its position in
what was ingested).  Search uses it for the *context* signal: a turn next to a
strong match is often the answer to it ("Where did you go?" / "To Paris"); on
LoCoMo that lifted R@10 from ~0.64 to ~0.72 in the numpy study
(benchmarks/README.md).  NULL for facts and explicit memories (no neighbours).
Backfilled here for turn memories whose source event is in ``session_events``.

``search_text`` becomes ``lexical.stem_text`` of the embedded layout, and the
full-text query is stemmed the same way, so "paint" matches "painted".  The
backfill runs in Python (the stemmer is not SQL) in batches of 500 rows; it
uses ``adk_oceanbase.memory.lexical`` as shipped with this revision, and a
later change of the stemmer comes with its own backfill revision.
"""

import sqlalchemy as sa
from alembic import op

from adk_oceanbase import ddl_steps as steps

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_BATCH = 500

# The layout of extraction.embedding_text at this revision: "<day> <Month> <year>[, <author>]: <content>".
_LAYOUT = (
    "CONCAT(DAY(created_at), ' ', MONTHNAME(created_at), ' ', YEAR(created_at), "
    "CASE WHEN author IS NULL OR author = '' THEN '' ELSE CONCAT(', ', author) END, ': ', content)"
)


def _backfill_turn_pos() -> None:
    # Correlated lookup of the turn's source event (its first provenance id) in the session log.
    op.execute(
        "UPDATE agent_memories m SET turn_pos = ("
        " SELECT e.seq FROM session_events e"
        " WHERE e.app_name = m.app_name AND e.user_id = m.user_id AND e.session_id = m.session_id"
        "   AND e.event_id = JSON_UNQUOTE(JSON_EXTRACT(m.event_ids, '$[0]')))"
        " WHERE m.extractor = 'turn:v1' AND m.session_id IS NOT NULL AND m.embed_status <> 'deleted'"
    )


def _restem(stemmed: bool) -> None:
    from adk_oceanbase.memory.lexical import stem_text

    conn = op.get_bind()
    last = ""
    while True:
        rows = conn.execute(
            sa.text(
                f"SELECT memory_id, {_LAYOUT} FROM agent_memories "
                "WHERE memory_id > :last AND embed_status <> 'deleted' ORDER BY memory_id LIMIT :n"
            ),
            {"last": last, "n": _BATCH},
        ).all()
        if not rows:
            return
        conn.execute(
            sa.text("UPDATE agent_memories SET search_text = :t WHERE memory_id = :id"),
            [{"id": mid, "t": stem_text(layout) if stemmed else layout} for mid, layout in rows],
        )
        last = rows[-1][0]


def upgrade() -> None:
    steps.add_column("agent_memories", sa.Column("turn_pos", sa.BigInteger, nullable=True))
    steps.create_index("ix_memories_session_pos", "agent_memories", ["app_name", "user_id", "session_id", "turn_pos"])
    _backfill_turn_pos()
    _restem(stemmed=True)


def downgrade() -> None:
    _restem(stemmed=False)
    steps.drop_index("ix_memories_session_pos", "agent_memories")
    steps.drop_column("agent_memories", "turn_pos")
