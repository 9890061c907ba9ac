"""Each posting carries its memory's length (memory_terms.doc_len), so a big user's BM25 needs no row lookups.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-23

BM25 normalises a term's weight by the memory's length (``term_count`` on
``agent_memories``).  Reading that length meant joining every matching
posting to its memory row: 75-120 ms for one user holding 100k memories,
most of a search.  With the length on the posting, the score is summed from
the postings alone and only the best candidates are looked up
(``memory.postings``, the postings-first form).

The backfill copies ``term_count`` onto the postings of 500 memories at a
time (one joined UPDATE per user in the batch), in key order; a run interrupted anywhere repeats the same idempotent
updates when started again.
"""

import sqlalchemy as sa
from alembic import op

from adk_oceanbase import ddl_steps as steps

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def _backfill() -> None:
    conn = op.get_bind()
    for rows in steps.memories_in_key_order("app_name, user_id, memory_id", "term_count > 0"):
        by_user: dict[tuple[str, str], list[str]] = {}
        for app, user, mid in rows:
            by_user.setdefault((app, user), []).append(mid)
        for (app, user), mids in by_user.items():
            conn.execute(
                sa.text(
                    "UPDATE memory_terms p JOIN agent_memories m ON m.app_name = p.app_name "
                    "AND m.user_id = p.user_id AND m.memory_id = p.memory_id SET p.doc_len = m.term_count "
                    "WHERE p.app_name = :a AND p.user_id = :u AND p.memory_id IN :ids"
                ).bindparams(sa.bindparam("ids", expanding=True)),
                {"a": app, "u": user, "ids": mids},
            )


def upgrade() -> None:
    steps.add_column("memory_terms", sa.Column("doc_len", sa.Integer, nullable=False, server_default="0"))
    _backfill()


def downgrade() -> None:
    steps.drop_column("memory_terms", "doc_len")
