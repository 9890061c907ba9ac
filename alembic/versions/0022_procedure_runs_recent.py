"""Indexes that answer recall's reads of ``procedure_runs`` alone (``ix_procedure_runs_recent``, a wider ``_scenario``).

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-28

``recall_procedures`` reads (a) the keys and scenarios of the scope's newest
``neighbour_window`` (1,000) runs, for the vote (``procedural.queries.run_keys``:
``ORDER BY created_at DESC, stored_at DESC LIMIT``), and (b) a scenario's
newest outcomes and its success / failure counts by path (``recent_outcomes``,
``success_iterations``, ``failure_reasons``).  Without an index in (a)'s order
the server sorted every run of the scope; and every index entry of (a) and (b)
went back to the table row (LONGTEXT columns and all) for ``counted``,
``outcome``, ``path_hash``.  At 100k runs in one scope (seekdb, 2 vCPU,
``benchmarks/procedural_scale.py`` and README) the key read went from ~60-200
ms to ~10 ms and the outcome reads from ~17-21 ms to under 1 ms.
"""

from adk_oceanbase import ddl_steps as steps

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

RECENT = ["app_name", "scope_user", "created_at", "stored_at", "counted", "scenario_id", "request_hash"]
SCENARIO = ["app_name", "scope_user", "scenario_id", "created_at", "stored_at", "counted", "outcome", "path_hash",
            "iterations"]
SCENARIO_BEFORE = ["app_name", "scope_user", "scenario_id", "created_at"]


def upgrade() -> None:
    steps.create_index("ix_procedure_runs_recent", "procedure_runs", RECENT)
    steps.drop_index("ix_procedure_runs_scenario", "procedure_runs")
    steps.create_index("ix_procedure_runs_scenario", "procedure_runs", SCENARIO)


def downgrade() -> None:
    steps.drop_index("ix_procedure_runs_scenario", "procedure_runs")
    steps.create_index("ix_procedure_runs_scenario", "procedure_runs", SCENARIO_BEFORE)
    steps.drop_index("ix_procedure_runs_recent", "procedure_runs")
