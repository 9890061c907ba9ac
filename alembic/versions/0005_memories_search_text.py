"""agent_memories.search_text: the full-text index covers what gets embedded (date, speaker, content).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22

Until now the full-text index covered ``content`` alone while the vector
covered ``"8 May 2023, Caroline: <content>"``, so a question naming a person
or a month could match the embedding but not the full-text side.  The BM25
baseline of ``benchmarks/retrieval.py`` indexes speaker + date + text and
beat our full-text half on LoCoMo.  ``search_text`` holds exactly the
embedded layout (``extraction.embedding_text``), written at insert; this
revision backfills existing rows with the same layout in SQL and moves the
full-text index onto it (ik on OceanBase/seekdb, the built-in parser on
MySQL/MariaDB).  ``content`` stays the user-visible memory.  Tombstones
(``embed_status = 'deleted'``) keep NULL.
"""

import sqlalchemy as sa
from alembic import context, op
from sqlalchemy.dialects.mysql import LONGTEXT

from adk_oceanbase import ddl_steps as steps

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

# The layout of extraction.embedding_text, frozen here: "<day> <Month> <year>[, <author>]: <content>".
_BACKFILL = (
    "UPDATE agent_memories SET search_text = CONCAT(DAY(created_at), ' ', MONTHNAME(created_at), ' ', "
    "YEAR(created_at), CASE WHEN author IS NULL OR author = '' THEN '' ELSE CONCAT(', ', author) END, "
    "': ', content) WHERE embed_status <> 'deleted'"
)


def _parser() -> str:
    return context.config.attributes["dialect"].fulltext_parser_clause("ik")  # empty on MySQL/MariaDB


def upgrade() -> None:
    steps.add_column("agent_memories", sa.Column("search_text", LONGTEXT))
    op.execute(_BACKFILL)  # idempotent: the same text again
    steps.drop_index("ix_memories_content_ft", "agent_memories")
    steps.create_index(
        "ix_memories_search_ft", "agent_memories",
        sql=f"CREATE FULLTEXT INDEX ix_memories_search_ft ON agent_memories(search_text){_parser()}",
    )


def downgrade() -> None:
    steps.drop_index("ix_memories_search_ft", "agent_memories")
    steps.create_index(
        "ix_memories_content_ft", "agent_memories",
        sql=f"CREATE FULLTEXT INDEX ix_memories_content_ft ON agent_memories(content){_parser()}",
    )
    steps.drop_column("agent_memories", "search_text")
