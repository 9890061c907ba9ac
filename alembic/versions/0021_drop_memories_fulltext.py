"""Drops the memories' FULLTEXT index: nothing reads it, and it was most of the cost of writing a memory row.

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-28

Since revision 0012 search scores BM25 over the per-user ``memory_terms``
postings; ``ix_memories_search_ft`` (0005; ``WITH PARSER ik`` on OceanBase)
stayed only for analysts' ``MATCH ... AGAINST``.  Every memory insert still
tokenised ``search_text`` into it: 500 rows of ``agent_memories`` took 384
ms with it and 158 ms without (seekdb, raw pymysql, interleaved, median of 8,
load 18, 2026-11-28; issue 28, where Agno's bulk ``upsert_memories`` was 5x
slower than Agno's own ``MySQLDb``).  An analyst who wants ``MATCH`` can
create it again (README, "Schema"); the downgrade does.
"""

from alembic import context

from adk_oceanbase import ddl_steps as steps

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def _parser() -> str:
    return context.config.attributes["dialect"].fulltext_parser_clause("ik")  # empty on MySQL/MariaDB


def upgrade() -> None:
    steps.drop_index("ix_memories_search_ft", "agent_memories")


def downgrade() -> None:
    steps.create_index(
        "ix_memories_search_ft", "agent_memories",
        sql=f"CREATE FULLTEXT INDEX ix_memories_search_ft ON agent_memories(search_text){_parser()}",
    )
