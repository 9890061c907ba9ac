"""Governance: ``session_events.redacted``, the ``audit_log`` table, and analyst views over it.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23

* ``session_events.redacted``: 1 when the app's redaction policy ran over the
  event before it was written (issue #10, seed 000 §8.1.3: an event not
  marked redacted must not reach long-term storage while a policy is active).
  Rows written before this revision read 0.
* ``audit_log``: one row per audited operation, ids and numbers only (see
  ``adk_oceanbase.audit``), indexed for "what did this user's data see"
  (``app_name, user_id, at``) and for time-window scans and retention (``at``).
* Views: ``v_session_events`` gains ``redacted``; ``v_audit_access`` (who
  accessed what), ``v_audit_error_rate`` and ``v_audit_latency`` (p50/p95 per
  operation, computed with window functions that OceanBase 4.x, MySQL 8 and
  MariaDB 10.6 all run).  ``sql/views.sql`` is the readable copy.

Each step checks before it acts, so a setup interrupted half-way (MySQL DDL
commits statement by statement) completes when run again.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.mysql import DATETIME

from adk_oceanbase import ddl_steps as steps

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_KEY = {"collation": "utf8mb4_bin"}
_OPTS = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin"}

VIEWS = {
    "v_sessions": """
        SELECT app_name, user_id, session_id, created_at, updated_at,
               TIMESTAMPDIFF(SECOND, created_at, updated_at) AS active_seconds,
               event_count, total_tokens, last_seq
        FROM agent_sessions""",
    "v_session_events": """
        SELECT app_name, user_id, session_id, seq, event_time, author, event_type, invocation_id,
               token_count, is_final, compacted_by IS NOT NULL AS compacted, redacted,
               JSON_UNQUOTE(JSON_EXTRACT(JSON_EXTRACT(event_json, '$.content.parts[*].text'), '$[0]')) AS first_text,
               JSON_EXTRACT(event_json, '$.content.parts[*].function_call.name') AS function_calls,
               JSON_EXTRACT(event_json, '$.content.parts[*].function_response.name') AS function_responses
        FROM session_events""",
    "v_tool_calls": """
        SELECT e.app_name, e.user_id, e.session_id, e.seq, e.event_time, e.author, e.invocation_id,
               e.compacted_by IS NOT NULL AS compacted, p.part_index, p.tool_name, p.call_id
        FROM session_events e,
             JSON_TABLE(e.event_json, '$.content.parts[*]' COLUMNS (
                 part_index FOR ORDINALITY,
                 tool_name VARCHAR(256) PATH '$.function_call.name',
                 call_id VARCHAR(256) PATH '$.function_call.id')) p
        WHERE e.event_type IN ('function_call', 'function_response') AND p.tool_name IS NOT NULL""",
    "v_state": """
        SELECT app_name, scope, user_id, session_id,
               CONCAT(CASE scope WHEN 'app' THEN 'app:' WHEN 'user' THEN 'user:' ELSE '' END, state_key) AS state_key,
               value_json, updated_at
        FROM session_state""",
    "v_memories": """
        SELECT memory_id, app_name, user_id, content, author, session_id, topics, importance_score,
               access_count, last_accessed_at, created_at, updated_at, embed_status, embedding_model,
               extractor, superseded_by IS NOT NULL AS superseded
        FROM agent_memories""",
    "v_audit_access": """
        SELECT app_name, user_id, session_id, operation, COUNT(*) AS calls,
               SUM(status = 'error') AS errors, MIN(at) AS first_at, MAX(at) AS last_at
        FROM audit_log
        GROUP BY app_name, user_id, session_id, operation""",
    "v_audit_error_rate": """
        SELECT app_name, operation, COUNT(*) AS calls, SUM(status = 'error') AS errors,
               SUM(status = 'error') / COUNT(*) AS error_rate
        FROM audit_log
        GROUP BY app_name, operation""",
    "v_audit_latency": """
        SELECT app_name, operation, COUNT(*) AS calls,
               MAX(CASE WHEN pos = CEIL(0.50 * n) THEN duration_ms END) AS p50_ms,
               MAX(CASE WHEN pos = CEIL(0.95 * n) THEN duration_ms END) AS p95_ms,
               MAX(duration_ms) AS max_ms
        FROM (SELECT app_name, operation, duration_ms,
                     ROW_NUMBER() OVER (PARTITION BY app_name, operation ORDER BY duration_ms) AS pos,
                     COUNT(*) OVER (PARTITION BY app_name, operation) AS n
              FROM audit_log) ranked
        GROUP BY app_name, operation""",
}

_AUDIT_VIEWS = ("v_audit_access", "v_audit_error_rate", "v_audit_latency")

# 0009's v_session_events, restored by downgrade.
_OLD_EVENTS = """
        SELECT app_name, user_id, session_id, seq, event_time, author, event_type, invocation_id,
               token_count, is_final, compacted_by IS NOT NULL AS compacted,
               JSON_UNQUOTE(JSON_EXTRACT(JSON_EXTRACT(event_json, '$.content.parts[*].text'), '$[0]')) AS first_text,
               JSON_EXTRACT(event_json, '$.content.parts[*].function_call.name') AS function_calls,
               JSON_EXTRACT(event_json, '$.content.parts[*].function_response.name') AS function_responses
        FROM session_events"""


def upgrade() -> None:
    steps.add_column("session_events", sa.Column("redacted", sa.SmallInteger, nullable=False, server_default="0"))
    steps.create_table(
        "audit_log",
        sa.Column("audit_id", sa.BigInteger, primary_key=True, autoincrement=True),
        sa.Column("at", DATETIME(fsp=6), nullable=False),
        sa.Column("operation", sa.String(32), nullable=False),
        sa.Column("app_name", sa.String(128, **_KEY), nullable=False),
        sa.Column("user_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("session_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("event_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("invocation_id", sa.String(256, **_KEY), nullable=True),
        sa.Column("duration_ms", sa.Double, nullable=False),
        sa.Column("status", sa.String(8), nullable=False),
        sa.Column("error_code", sa.String(64), nullable=True),
        sa.Column("row_count", sa.BigInteger, nullable=True),
        **_OPTS,
    )
    steps.create_index("ix_audit_user_time", "audit_log", ["app_name", "user_id", "at"])
    steps.create_index("ix_audit_time", "audit_log", ["at"])
    for name, body in VIEWS.items():
        op.execute(f"CREATE OR REPLACE VIEW {name} AS {body}")


def downgrade() -> None:
    for name in _AUDIT_VIEWS:
        op.execute(f"DROP VIEW IF EXISTS {name}")
    op.execute(f"CREATE OR REPLACE VIEW v_session_events AS {_OLD_EVENTS}")
    steps.drop_table("audit_log")
    steps.drop_column("session_events", "redacted")
