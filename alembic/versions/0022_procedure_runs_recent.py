"""An index for recall's read of a scope's newest runs (``ix_procedure_runs_recent``).

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-28

Since session 18 ``recall_procedures`` votes with the request vectors of the
scope's newest ``neighbour_window`` (1,000) runs (``procedural.queries.run_vectors``:
``WHERE app_name, scope_user ... ORDER BY created_at DESC, stored_at DESC
LIMIT``).  Without an index in that order the server sorts every run of the
scope, vectors and all, for each recall; with it, it reads the newest rows
backwards and stops (``benchmarks/procedural_scale.py`` measures both).
"""

from adk_oceanbase import ddl_steps as steps

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    steps.create_index(
        "ix_procedure_runs_recent", "procedure_runs", ["app_name", "scope_user", "created_at", "stored_at"]
    )


def downgrade() -> None:
    steps.drop_index("ix_procedure_runs_recent", "procedure_runs")
