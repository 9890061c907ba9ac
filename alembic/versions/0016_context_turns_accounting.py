"""Context engineering: turn-snapshot checkpoints, a time index for shared-state windows, model prices, accounting views.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26

* ``state_checkpoints``: the merged state right after an event, written lazily
  by turn-snapshot reads (``adk_oceanbase.context.snapshots``) every
  ``CHECKPOINT_EVERY`` events, so the state as of any turn folds a bounded
  slice of the log instead of the whole app's (issue #30).  Derived from
  ``session_events``; nothing to backfill.
* ``ix_events_app_ts`` on ``session_events (app_name, ts)``: other sessions'
  writes to ``app:``/``user:`` keys since a checkpoint, as one range scan.
* ``model_prices``: USD per million prompt / completion / cached tokens per
  model, filled by analysts, for ``v_cost_daily``.
* Views (all redefined, as every revision with ``VIEWS`` does):
  ``v_model_usage`` (usage_metadata and model_version as columns),
  ``v_tool_results`` (tool, status, error class, duration),
  ``v_cost_daily`` (tokens and cost per app, user, day and model) and
  ``v_tool_failure_rate``.  ``sql/views.sql`` is the readable copy.

Each step checks before it acts, so a setup interrupted half-way (MySQL DDL
commits statement by statement) completes when run again.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.mysql import DATETIME, LONGTEXT

from adk_oceanbase import ddl_steps as steps

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_KEY = {"collation": "utf8mb4_bin"}
_OPTS = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin"}
_NOW = sa.text("CURRENT_TIMESTAMP(6)")
_NEW_VIEWS = ('v_model_usage', 'v_tool_results', 'v_cost_daily', 'v_tool_failure_rate')

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
    "v_model_usage": """
        SELECT app_name, user_id, session_id, seq, event_time, invocation_id, author,
               JSON_UNQUOTE(JSON_EXTRACT(event_json, '$.model_version')) AS model,
               COALESCE(CAST(JSON_EXTRACT(event_json, '$.usage_metadata.prompt_token_count') AS SIGNED), 0) AS prompt_tokens,
               COALESCE(CAST(JSON_EXTRACT(event_json, '$.usage_metadata.candidates_token_count') AS SIGNED), 0) AS completion_tokens,
               COALESCE(CAST(JSON_EXTRACT(event_json, '$.usage_metadata.cached_content_token_count') AS SIGNED), 0) AS cached_tokens,
               COALESCE(CAST(JSON_EXTRACT(event_json, '$.usage_metadata.thoughts_token_count') AS SIGNED), 0) AS thoughts_tokens
        FROM session_events
        WHERE JSON_EXTRACT(event_json, '$.usage_metadata') IS NOT NULL""",
    "v_tool_results": """
        SELECT r.app_name, r.user_id, r.session_id, r.seq, r.event_time, r.invocation_id, p.tool_name, p.call_id,
               CASE WHEN p.has_error = 1 THEN 'error' ELSE 'success' END AS status,
               CASE WHEN p.has_error = 1 THEN COALESCE(p.error_type, 'error') END AS error_class,
               (SELECT MIN(TIMESTAMPDIFF(MICROSECOND, c.event_time, r.event_time)) / 1000
                FROM v_tool_calls c
                WHERE c.app_name = r.app_name AND c.user_id = r.user_id AND c.session_id = r.session_id
                  AND c.call_id = p.call_id AND c.seq < r.seq) AS duration_ms
        FROM session_events r,
             JSON_TABLE(r.event_json, '$.content.parts[*]' COLUMNS (
                 tool_name VARCHAR(256) PATH '$.function_response.name',
                 call_id VARCHAR(256) PATH '$.function_response.id',
                 has_error INT EXISTS PATH '$.function_response.response.error',
                 error_type VARCHAR(256) PATH '$.function_response.response.error_type')) p
        WHERE r.event_type = 'function_response' AND p.tool_name IS NOT NULL""",
    "v_cost_daily": """
        SELECT u.app_name, u.user_id, DATE(u.event_time) AS day, u.model, COUNT(*) AS responses,
               SUM(u.prompt_tokens) AS prompt_tokens, SUM(u.completion_tokens) AS completion_tokens,
               SUM(u.cached_tokens) AS cached_tokens,
               SUM((u.prompt_tokens - u.cached_tokens) * p.prompt_usd_per_mtok
                   + u.cached_tokens * COALESCE(p.cached_usd_per_mtok, p.prompt_usd_per_mtok)
                   + u.completion_tokens * p.completion_usd_per_mtok) / 1000000 AS cost_usd
        FROM v_model_usage u LEFT JOIN model_prices p ON p.model = u.model
        GROUP BY u.app_name, u.user_id, DATE(u.event_time), u.model""",
    "v_tool_failure_rate": """
        SELECT app_name, tool_name, COUNT(*) AS calls, SUM(status = 'error') AS failures,
               SUM(status = 'error') / COUNT(*) AS failure_rate,
               AVG(duration_ms) AS avg_duration_ms, MAX(duration_ms) AS max_duration_ms
        FROM v_tool_results
        GROUP BY app_name, tool_name""",
}


def upgrade() -> None:
    steps.create_index("ix_events_app_ts", "session_events", ["app_name", "ts"])
    steps.create_table(
        "state_checkpoints",
        sa.Column("app_name", sa.String(128, **_KEY), nullable=False),
        sa.Column("user_id", sa.String(128, **_KEY), nullable=False),
        sa.Column("session_id", sa.String(128, **_KEY), nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("event_id", sa.String(128, **_KEY), nullable=False),
        sa.Column("ts", sa.Double, nullable=False),
        sa.Column("state_json", LONGTEXT, nullable=False),
        sa.Column("created_at", DATETIME(fsp=6), nullable=False, server_default=_NOW),
        sa.PrimaryKeyConstraint("app_name", "user_id", "session_id", "seq", name="pk_state_checkpoints"),
        **_OPTS,
    )
    steps.create_index("ix_checkpoints_user_ts", "state_checkpoints", ["app_name", "user_id", "ts"])
    steps.create_table(
        "model_prices",
        sa.Column("model", sa.String(128, **_KEY), nullable=False),
        sa.Column("prompt_usd_per_mtok", sa.Double, nullable=False),
        sa.Column("completion_usd_per_mtok", sa.Double, nullable=False),
        sa.Column("cached_usd_per_mtok", sa.Double, nullable=True),
        sa.Column("updated_at", DATETIME(fsp=6), nullable=False, server_default=_NOW),
        sa.PrimaryKeyConstraint("model", name="pk_model_prices"),
        **_OPTS,
    )
    for name, body in VIEWS.items():
        op.execute(f"CREATE OR REPLACE VIEW {name} AS {body}")


def downgrade() -> None:
    for name in reversed(_NEW_VIEWS):
        op.execute(f"DROP VIEW IF EXISTS {name}")
    steps.drop_table("model_prices")
    steps.drop_table("state_checkpoints")
    steps.drop_index("ix_events_app_ts", "session_events")
