"""The Agno database's tables (revision 0018): sessions, runs, metrics, eval runs, knowledge, traces, spans, learnings.

Mirrors Agno's own SQL schema (``agno.db.mysql.schemas``) column for column,
with two changes that make them tables of this store like the others:

* every key starts with ``app_name`` (``OceanBaseAgnoDb(app_name=...)``), so one
  database holds several Agno deployments and the governance tools (erasure by
  ``(app_name, user_id)``, retention per app, audit) work on them unchanged;
* JSON payloads are ``LONGTEXT`` holding JSON (byte-exact on every engine, see
  :mod:`adk_oceanbase.schema`), and ``agno_ob_sessions.touched_at`` is the
  database clock's last write, the retention sweep's clock.

User memories are not here: they are rows of ``agent_memories`` (the ADK
memory service's table), so hybrid retrieval, redaction and the guards apply
to them and the ADK memory service of the same app and user sees them.
Table names carry ``ob`` so Agno's own ``MySQLDb`` tables (``agno_sessions``,
...) can live in the same database.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Date, Index, PrimaryKeyConstraint, SmallInteger, String, Table, UniqueConstraint, text
from sqlalchemy.dialects.mysql import DATETIME, LONGTEXT

from .schema_base import ID_LEN, metadata

__all__ = [
    "AGNO_TABLES",
    "agno_evals",
    "agno_knowledge",
    "agno_learnings",
    "agno_metrics",
    "agno_runs",
    "agno_sessions",
    "agno_spans",
    "agno_traces",
    "agno_versions",
]

_KEY = {"collation": "utf8mb4_bin"}
_OPTS = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin"}


def _id(name: str, nullable: bool = True) -> Column:
    return Column(name, String(ID_LEN, **_KEY), nullable=nullable)


def _json(name: str) -> Column:
    return Column(name, LONGTEXT, nullable=True)


agno_sessions = Table(
    "agno_ob_sessions",
    metadata,
    _id("app_name", False),
    _id("session_id", False),
    Column("session_type", String(20), nullable=False),  # agent | team | workflow
    _id("agent_id"),
    _id("team_id"),
    _id("workflow_id"),
    _id("user_id"),
    _json("session_data"),
    _json("agent_data"),
    _json("team_data"),
    _json("workflow_data"),
    _json("metadata"),
    _json("summary"),
    Column("created_at", BigInteger, nullable=False),  # epoch seconds, Agno's clock
    Column("updated_at", BigInteger, nullable=True),
    # the database clock's last write of the session or one of its runs: retention's clock
    Column("touched_at", DATETIME(fsp=6), nullable=False, server_default=text("CURRENT_TIMESTAMP(6)")),
    PrimaryKeyConstraint("app_name", "session_id", name="pk_agno_ob_sessions"),
    Index("ix_agno_sessions_user", "app_name", "user_id", "created_at"),
    Index("ix_agno_sessions_type", "app_name", "session_type", "created_at"),
    Index("ix_agno_sessions_touched", "app_name", "touched_at"),
    **_OPTS,
)

agno_runs = Table(
    "agno_ob_runs",
    metadata,
    _id("app_name", False),
    _id("run_id", False),
    _id("session_id", False),
    Column("run_type", String(20), nullable=True),  # agent | team | workflow
    _id("agent_id"),
    _id("team_id"),
    _id("workflow_id"),
    _id("user_id"),
    _id("parent_run_id"),
    Column("status", String(32), nullable=True),
    Column("run_index", BigInteger, nullable=True),  # order within the session; kept on update
    Column("run_data", LONGTEXT, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=True),
    PrimaryKeyConstraint("app_name", "run_id", name="pk_agno_ob_runs"),
    Index("ix_agno_runs_session", "app_name", "session_id", "run_index"),
    Index("ix_agno_runs_user", "app_name", "user_id"),
    **_OPTS,
)

agno_metrics = Table(
    "agno_ob_metrics",
    metadata,
    _id("app_name", False),
    _id("id", False),
    Column("agent_runs_count", BigInteger, nullable=False, server_default="0"),
    Column("team_runs_count", BigInteger, nullable=False, server_default="0"),
    Column("workflow_runs_count", BigInteger, nullable=False, server_default="0"),
    Column("agent_sessions_count", BigInteger, nullable=False, server_default="0"),
    Column("team_sessions_count", BigInteger, nullable=False, server_default="0"),
    Column("workflow_sessions_count", BigInteger, nullable=False, server_default="0"),
    Column("users_count", BigInteger, nullable=False, server_default="0"),
    _json("token_metrics"),
    _json("model_metrics"),
    Column("date", Date, nullable=False),
    Column("aggregation_period", String(20), nullable=False),
    # '' is the bucket of sessions without a user (Agno's convention); a user's bucket goes with the user
    Column("user_id", String(ID_LEN, **_KEY), nullable=False, server_default=""),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=True),
    Column("completed", SmallInteger, nullable=False, server_default="0"),
    PrimaryKeyConstraint("app_name", "id", name="pk_agno_ob_metrics"),
    UniqueConstraint("app_name", "date", "aggregation_period", "user_id", name="uq_agno_metrics_bucket"),
    **_OPTS,
)

agno_evals = Table(
    "agno_ob_eval_runs",
    metadata,
    _id("app_name", False),
    _id("run_id", False),
    Column("eval_type", String(50), nullable=False),
    _json("eval_data"),
    _json("eval_input"),
    Column("name", String(255), nullable=True),
    _id("agent_id"),
    _id("team_id"),
    _id("workflow_id"),
    _id("model_id"),
    Column("model_provider", String(128), nullable=True),
    Column("evaluated_component_name", String(255), nullable=True),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=True),
    _id("user_id"),
    PrimaryKeyConstraint("app_name", "run_id", name="pk_agno_ob_eval_runs"),
    Index("ix_agno_evals_time", "app_name", "created_at"),
    **_OPTS,
)

agno_knowledge = Table(
    "agno_ob_knowledge",
    metadata,
    _id("app_name", False),
    _id("id", False),
    Column("name", String(255), nullable=True),
    Column("description", LONGTEXT, nullable=True),
    _json("metadata"),
    Column("type", String(50), nullable=True),
    Column("size", BigInteger, nullable=True),
    _id("linked_to"),
    Column("access_count", BigInteger, nullable=True),
    Column("created_at", BigInteger, nullable=True),
    Column("updated_at", BigInteger, nullable=True),
    Column("status", String(50), nullable=True),
    Column("status_message", LONGTEXT, nullable=True),
    _id("external_id"),
    _id("user_id"),  # NULL: shared by every user of the app
    PrimaryKeyConstraint("app_name", "id", name="pk_agno_ob_knowledge"),
    Index("ix_agno_knowledge_user", "app_name", "user_id"),
    **_OPTS,
)

agno_traces = Table(
    "agno_ob_traces",
    metadata,
    _id("app_name", False),
    _id("trace_id", False),
    Column("name", String(255), nullable=True),
    Column("status", String(50), nullable=True),
    Column("start_time", String(64), nullable=False),  # ISO 8601 text, as Agno stores it (sorts in time order)
    Column("end_time", String(64), nullable=False),
    Column("duration_ms", BigInteger, nullable=True),
    _id("run_id"),
    _id("session_id"),
    _id("user_id"),
    _id("agent_id"),
    _id("team_id"),
    _id("workflow_id"),
    Column("created_at", String(64), nullable=False),
    PrimaryKeyConstraint("app_name", "trace_id", name="pk_agno_ob_traces"),
    Index("ix_agno_traces_start", "app_name", "start_time"),
    Index("ix_agno_traces_run", "app_name", "run_id"),
    Index("ix_agno_traces_session", "app_name", "session_id"),
    **_OPTS,
)

agno_spans = Table(
    "agno_ob_spans",
    metadata,
    _id("app_name", False),
    _id("span_id", False),
    _id("trace_id", False),
    _id("parent_span_id"),
    Column("name", String(255), nullable=True),
    Column("span_kind", String(50), nullable=True),
    Column("status_code", String(50), nullable=True),
    Column("status_message", LONGTEXT, nullable=True),
    Column("start_time", String(64), nullable=False),
    Column("end_time", String(64), nullable=False),
    Column("duration_ms", BigInteger, nullable=True),
    _json("attributes"),
    Column("created_at", String(64), nullable=False),
    # the trace's user, copied when the span is written, so erasure finds spans without a join
    _id("user_id"),
    PrimaryKeyConstraint("app_name", "span_id", name="pk_agno_ob_spans"),
    Index("ix_agno_spans_trace", "app_name", "trace_id", "start_time"),
    **_OPTS,
)

agno_learnings = Table(
    "agno_ob_learnings",
    metadata,
    _id("app_name", False),
    _id("learning_id", False),
    Column("learning_type", String(64), nullable=False),
    _id("namespace"),
    _id("user_id"),
    _id("agent_id"),
    _id("team_id"),
    _id("workflow_id"),
    _id("session_id"),
    _id("entity_id"),
    Column("entity_type", String(64), nullable=True),
    _json("content"),
    _json("metadata"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=True),
    PrimaryKeyConstraint("app_name", "learning_id", name="pk_agno_ob_learnings"),
    Index("ix_agno_learnings_type", "app_name", "learning_type", "user_id"),
    **_OPTS,
)

agno_versions = Table(
    "agno_ob_schema_versions",
    metadata,
    _id("app_name", False),
    Column("table_name", String(128, **_KEY), nullable=False),
    Column("version", String(16), nullable=False),
    Column("created_at", String(64), nullable=False),
    Column("updated_at", String(64), nullable=True),
    PrimaryKeyConstraint("app_name", "table_name", name="pk_agno_ob_schema_versions"),
    **_OPTS,
)

AGNO_TABLES = (agno_sessions, agno_runs, agno_metrics, agno_evals, agno_knowledge, agno_traces, agno_spans,
               agno_learnings, agno_versions)
