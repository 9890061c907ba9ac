"""The Agno database's tables: sessions, runs, metrics, eval runs, knowledge, traces, spans, learnings, versions.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-26

Issue 28: ``adk_oceanbase.agno`` implements Agno's ``BaseDb`` / ``AsyncBaseDb`` on
this store.  Its tables follow Agno's own SQL schema with ``app_name`` leading
every key (erasure, retention and audit work per app and user as for the ADK
tables); user memories are rows of ``agent_memories`` and need no table here.
Mirrored in ``adk_oceanbase/schema_agno.py``.  Each step checks before it
creates, so an interrupted run finishes when started again.
"""

import sqlalchemy as sa
from sqlalchemy.dialects.mysql import DATETIME, LONGTEXT

from adk_oceanbase import ddl_steps as steps

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

_KEY = {"collation": "utf8mb4_bin"}
_OPTS = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin"}
_NOW = sa.text("CURRENT_TIMESTAMP(6)")


def upgrade() -> None:
    steps.create_table(
        "agno_ob_sessions",
        sa.Column("app_name", sa.String(128, **_KEY), nullable=False),
        sa.Column("session_id", sa.String(128, **_KEY), nullable=False),
        sa.Column("session_type", sa.String(20), nullable=False),
        sa.Column("agent_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("team_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("workflow_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("user_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("session_data", LONGTEXT, nullable=True),
        sa.Column("agent_data", LONGTEXT, nullable=True),
        sa.Column("team_data", LONGTEXT, nullable=True),
        sa.Column("workflow_data", LONGTEXT, nullable=True),
        sa.Column("metadata", LONGTEXT, nullable=True),
        sa.Column("summary", LONGTEXT, nullable=True),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=True),
        sa.Column("touched_at", DATETIME(fsp=6), nullable=False, server_default=_NOW),
        sa.PrimaryKeyConstraint("app_name", "session_id", name="pk_agno_ob_sessions"),
        **_OPTS,
    )
    steps.create_index("ix_agno_sessions_touched", "agno_ob_sessions", ["app_name", "touched_at"])
    steps.create_index("ix_agno_sessions_type", "agno_ob_sessions", ["app_name", "session_type", "created_at"])
    steps.create_index("ix_agno_sessions_user", "agno_ob_sessions", ["app_name", "user_id", "created_at"])
    steps.create_table(
        "agno_ob_runs",
        sa.Column("app_name", sa.String(128, **_KEY), nullable=False),
        sa.Column("run_id", sa.String(128, **_KEY), nullable=False),
        sa.Column("session_id", sa.String(128, **_KEY), nullable=False),
        sa.Column("run_type", sa.String(20), nullable=True),
        sa.Column("agent_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("team_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("workflow_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("user_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("parent_run_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("status", sa.String(32), nullable=True),
        sa.Column("run_index", sa.BigInteger, nullable=True),
        sa.Column("run_data", LONGTEXT, nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=True),
        sa.PrimaryKeyConstraint("app_name", "run_id", name="pk_agno_ob_runs"),
        **_OPTS,
    )
    steps.create_index("ix_agno_runs_session", "agno_ob_runs", ["app_name", "session_id", "run_index"])
    steps.create_index("ix_agno_runs_user", "agno_ob_runs", ["app_name", "user_id"])
    steps.create_table(
        "agno_ob_metrics",
        sa.Column("app_name", sa.String(128, **_KEY), nullable=False),
        sa.Column("id", sa.String(128, **_KEY), nullable=False),
        sa.Column("agent_runs_count", sa.BigInteger, nullable=False, server_default='0'),
        sa.Column("team_runs_count", sa.BigInteger, nullable=False, server_default='0'),
        sa.Column("workflow_runs_count", sa.BigInteger, nullable=False, server_default='0'),
        sa.Column("agent_sessions_count", sa.BigInteger, nullable=False, server_default='0'),
        sa.Column("team_sessions_count", sa.BigInteger, nullable=False, server_default='0'),
        sa.Column("workflow_sessions_count", sa.BigInteger, nullable=False, server_default='0'),
        sa.Column("users_count", sa.BigInteger, nullable=False, server_default='0'),
        sa.Column("token_metrics", LONGTEXT, nullable=True),
        sa.Column("model_metrics", LONGTEXT, nullable=True),
        sa.Column("date", sa.Date, nullable=False),
        sa.Column("aggregation_period", sa.String(20), nullable=False),
        sa.Column("user_id", sa.String(128, **_KEY), nullable=False, server_default=''),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=True),
        sa.Column("completed", sa.SmallInteger, nullable=False, server_default='0'),
        sa.PrimaryKeyConstraint("app_name", "id", name="pk_agno_ob_metrics"),
        sa.UniqueConstraint("app_name", "date", "aggregation_period", "user_id", name="uq_agno_metrics_bucket"),
        **_OPTS,
    )
    steps.create_table(
        "agno_ob_eval_runs",
        sa.Column("app_name", sa.String(128, **_KEY), nullable=False),
        sa.Column("run_id", sa.String(128, **_KEY), nullable=False),
        sa.Column("eval_type", sa.String(50), nullable=False),
        sa.Column("eval_data", LONGTEXT, nullable=True),
        sa.Column("eval_input", LONGTEXT, nullable=True),
        sa.Column("name", sa.String(255), nullable=True),
        sa.Column("agent_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("team_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("workflow_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("model_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("model_provider", sa.String(128), nullable=True),
        sa.Column("evaluated_component_name", sa.String(255), nullable=True),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=True),
        sa.Column("user_id", sa.String(128, **_KEY), nullable=True),
        sa.PrimaryKeyConstraint("app_name", "run_id", name="pk_agno_ob_eval_runs"),
        **_OPTS,
    )
    steps.create_index("ix_agno_evals_time", "agno_ob_eval_runs", ["app_name", "created_at"])
    steps.create_table(
        "agno_ob_knowledge",
        sa.Column("app_name", sa.String(128, **_KEY), nullable=False),
        sa.Column("id", sa.String(128, **_KEY), nullable=False),
        sa.Column("name", sa.String(255), nullable=True),
        sa.Column("description", LONGTEXT, nullable=True),
        sa.Column("metadata", LONGTEXT, nullable=True),
        sa.Column("type", sa.String(50), nullable=True),
        sa.Column("size", sa.BigInteger, nullable=True),
        sa.Column("linked_to", sa.String(128, **_KEY), nullable=True),
        sa.Column("access_count", sa.BigInteger, nullable=True),
        sa.Column("created_at", sa.BigInteger, nullable=True),
        sa.Column("updated_at", sa.BigInteger, nullable=True),
        sa.Column("status", sa.String(50), nullable=True),
        sa.Column("status_message", LONGTEXT, nullable=True),
        sa.Column("external_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("user_id", sa.String(128, **_KEY), nullable=True),
        sa.PrimaryKeyConstraint("app_name", "id", name="pk_agno_ob_knowledge"),
        **_OPTS,
    )
    steps.create_index("ix_agno_knowledge_user", "agno_ob_knowledge", ["app_name", "user_id"])
    steps.create_table(
        "agno_ob_traces",
        sa.Column("app_name", sa.String(128, **_KEY), nullable=False),
        sa.Column("trace_id", sa.String(128, **_KEY), nullable=False),
        sa.Column("name", sa.String(255), nullable=True),
        sa.Column("status", sa.String(50), nullable=True),
        sa.Column("start_time", sa.String(64), nullable=False),
        sa.Column("end_time", sa.String(64), nullable=False),
        sa.Column("duration_ms", sa.BigInteger, nullable=True),
        sa.Column("run_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("session_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("user_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("agent_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("team_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("workflow_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("created_at", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("app_name", "trace_id", name="pk_agno_ob_traces"),
        **_OPTS,
    )
    steps.create_index("ix_agno_traces_run", "agno_ob_traces", ["app_name", "run_id"])
    steps.create_index("ix_agno_traces_session", "agno_ob_traces", ["app_name", "session_id"])
    steps.create_index("ix_agno_traces_start", "agno_ob_traces", ["app_name", "start_time"])
    steps.create_table(
        "agno_ob_spans",
        sa.Column("app_name", sa.String(128, **_KEY), nullable=False),
        sa.Column("span_id", sa.String(128, **_KEY), nullable=False),
        sa.Column("trace_id", sa.String(128, **_KEY), nullable=False),
        sa.Column("parent_span_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("name", sa.String(255), nullable=True),
        sa.Column("span_kind", sa.String(50), nullable=True),
        sa.Column("status_code", sa.String(50), nullable=True),
        sa.Column("status_message", LONGTEXT, nullable=True),
        sa.Column("start_time", sa.String(64), nullable=False),
        sa.Column("end_time", sa.String(64), nullable=False),
        sa.Column("duration_ms", sa.BigInteger, nullable=True),
        sa.Column("attributes", LONGTEXT, nullable=True),
        sa.Column("created_at", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(128, **_KEY), nullable=True),
        sa.PrimaryKeyConstraint("app_name", "span_id", name="pk_agno_ob_spans"),
        **_OPTS,
    )
    steps.create_index("ix_agno_spans_trace", "agno_ob_spans", ["app_name", "trace_id", "start_time"])
    steps.create_table(
        "agno_ob_learnings",
        sa.Column("app_name", sa.String(128, **_KEY), nullable=False),
        sa.Column("learning_id", sa.String(128, **_KEY), nullable=False),
        sa.Column("learning_type", sa.String(64), nullable=False),
        sa.Column("namespace", sa.String(128, **_KEY), nullable=True),
        sa.Column("user_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("agent_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("team_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("workflow_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("session_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("entity_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("entity_type", sa.String(64), nullable=True),
        sa.Column("content", LONGTEXT, nullable=True),
        sa.Column("metadata", LONGTEXT, nullable=True),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=True),
        sa.PrimaryKeyConstraint("app_name", "learning_id", name="pk_agno_ob_learnings"),
        **_OPTS,
    )
    steps.create_index("ix_agno_learnings_type", "agno_ob_learnings", ["app_name", "learning_type", "user_id"])
    steps.create_table(
        "agno_ob_schema_versions",
        sa.Column("app_name", sa.String(128, **_KEY), nullable=False),
        sa.Column("table_name", sa.String(128, **_KEY), nullable=False),
        sa.Column("version", sa.String(16), nullable=False),
        sa.Column("created_at", sa.String(64), nullable=False),
        sa.Column("updated_at", sa.String(64), nullable=True),
        sa.PrimaryKeyConstraint("app_name", "table_name", name="pk_agno_ob_schema_versions"),
        **_OPTS,
    )


def downgrade() -> None:
    steps.drop_table("agno_ob_schema_versions")
    steps.drop_table("agno_ob_learnings")
    steps.drop_table("agno_ob_spans")
    steps.drop_table("agno_ob_traces")
    steps.drop_table("agno_ob_knowledge")
    steps.drop_table("agno_ob_eval_runs")
    steps.drop_table("agno_ob_metrics")
    steps.drop_table("agno_ob_runs")
    steps.drop_table("agno_ob_sessions")
