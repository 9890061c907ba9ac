"""A user-keyed lexical index (memory_terms) for per-user BM25; occurrence counts of duplicate memories.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-23

* ``memory_terms(app_name, user_id, term, memory_id, tf)``: one posting per
  term of a live memory's ``search_text`` (``memory.lexical.doc_terms``).
  Search scores BM25 over the user's own postings instead of ``MATCH ...
  AGAINST`` on the FULLTEXT index, whose statistics are table-wide: a
  user's ranking changed when other tenants' memories arrived, and MATCH
  read every tenant's matching rows (issue #13).  The FULLTEXT index stays
  for analysts' ``MATCH`` queries.
* ``agent_memories.term_count``: the memory's number of terms (BM25's document
  length; 0 for a tombstone), with ``ix_memories_user_terms`` so a search
  counts a user's memories and their mean length from the index alone.
* ``agent_memories.occurrences``: how often the same content was stored for
  the user (exact duplicates merge onto one row, which keeps the newest
  occurrence); existing rows count 1.

The backfill tokenises every live row's stored ``search_text`` in Python
(the tokeniser is not SQL), 500 rows per batch in key order.  A batch first
deletes what postings its rows have, so a run interrupted anywhere finishes
when started again; it uses ``adk_oceanbase.memory.lexical`` as shipped with
this revision.
"""

import sqlalchemy as sa
from alembic import op

from adk_oceanbase import ddl_steps as steps

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

_KEY = {"collation": "utf8mb4_bin"}
_OPTS = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin"}


def _backfill() -> None:
    from adk_oceanbase.memory.lexical import doc_terms

    conn = op.get_bind()
    for rows in steps.memories_in_key_order(
        "app_name, user_id, memory_id, search_text", "embed_status <> 'deleted' AND search_text IS NOT NULL"
    ):
        by_user: dict[tuple[str, str], list[str]] = {}
        for app, user, mid, _ in rows:
            by_user.setdefault((app, user), []).append(mid)
        for (app, user), mids in by_user.items():
            conn.execute(
                sa.text(
                    "DELETE FROM memory_terms WHERE app_name = :a AND user_id = :u AND memory_id IN :ids"
                ).bindparams(sa.bindparam("ids", expanding=True)),
                {"a": app, "u": user, "ids": mids},
            )
        postings, counts = [], []
        for app, user, mid, body in rows:
            terms = doc_terms(body)
            postings.extend({"a": app, "u": user, "t": t, "m": mid, "tf": n} for t, n in terms.items())
            counts.append({"a": app, "u": user, "m": mid, "c": sum(terms.values())})
        if postings:
            conn.execute(
                sa.text("INSERT INTO memory_terms (app_name, user_id, term, memory_id, tf) VALUES (:a, :u, :t, :m, :tf)"),
                postings,
            )
        conn.execute(
            sa.text("UPDATE agent_memories SET term_count = :c WHERE app_name = :a AND user_id = :u AND memory_id = :m"),
            counts,
        )


def upgrade() -> None:
    steps.add_column("agent_memories", sa.Column("term_count", sa.Integer, nullable=False, server_default="0"))
    steps.add_column("agent_memories", sa.Column("occurrences", sa.Integer, nullable=False, server_default="1"))
    steps.create_index("ix_memories_user_terms", "agent_memories", ["app_name", "user_id", "term_count"])
    steps.create_table(
        "memory_terms",
        sa.Column("app_name", sa.String(128, **_KEY), nullable=False),
        sa.Column("user_id", sa.String(128, **_KEY), nullable=False),
        sa.Column("term", sa.String(64, **_KEY), nullable=False),
        sa.Column("memory_id", sa.String(64, **_KEY), nullable=False),
        sa.Column("tf", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("app_name", "user_id", "term", "memory_id", name="pk_memory_terms"),
        **_OPTS,
    )
    steps.create_index("ix_memory_terms_memory", "memory_terms", ["app_name", "user_id", "memory_id"])
    _backfill()


def downgrade() -> None:
    steps.drop_table("memory_terms")
    steps.drop_index("ix_memories_user_terms", "agent_memories")
    steps.drop_column("agent_memories", "occurrences")
    steps.drop_column("agent_memories", "term_count")
