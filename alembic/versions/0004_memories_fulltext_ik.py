"""OceanBase/seekdb: memory full-text index on the ``ik`` parser instead of ``ngram``.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22

Measured on seekdb, 10k English memories of one user: with ngram (2-grams)
nearly every query matched every row ("he" is inside "shellfish"), so the
full-text candidate query took ~945 ms and dragged unrelated rows into the
hybrid ranking; with ik it took 4.4 ms.  ik still tokenises Chinese, Korean
and Japanese (probe: 苹果, 한국어, 서울, 東京 each found their row), which is
what ngram was chosen for (ADK issue #2438).  MySQL/MariaDB keep their
built-in parser: nothing changes there.
"""

from alembic import context

from adk_oceanbase import ddl_steps as steps

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def _swap(parser: str) -> None:
    dialect = context.config.attributes["dialect"]
    if not dialect.fulltext_parsers:  # MySQL/MariaDB: their one built-in parser, nothing to swap
        return
    # A run killed after the DROP, or after the CREATE, completes on the next one
    # (after the CREATE it rebuilds the index once more: same parser, same result).
    steps.drop_index("ix_memories_content_ft", "agent_memories")
    steps.create_index(
        "ix_memories_content_ft", "agent_memories",
        sql="CREATE FULLTEXT INDEX ix_memories_content_ft ON agent_memories(content)"
        + dialect.fulltext_parser_clause(parser),
    )


def upgrade() -> None:
    _swap("ik")


def downgrade() -> None:
    _swap("ngram")
