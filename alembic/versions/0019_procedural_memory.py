"""Procedural memory (issue 27): procedure_runs, procedure_stats, procedure_scenarios, and three analyst views.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-26

* ``procedure_runs``: one row per (app, user, session, invocation), the
  user's contribution to the aggregates (``adk_oceanbase.procedural``):
  tool path as names and argument shapes, outcome and its source, redacted
  failure reason, iterations, provenance event ids, the request's hash and
  vector (never its text).  ``stored_at`` is retention's clock (database time).
* ``procedure_stats``: per (app, scope user, scenario, path) counts that
  extractors move by atomic increments; ``user_id = ''`` holds the app's.
* ``procedure_scenarios``: request-vector sums and member counts per scenario.
* Views ``v_procedure_success`` (success rate per scenario and path),
  ``v_procedure_failing_tools`` (tools whose responses were errors) and
  ``v_procedure_weekly`` (success per path and week: paths getting worse).
  ``VIEWS`` redefines every view (``sql/views.sql`` is the readable copy).

Each step checks before it acts, so a setup interrupted half-way completes when run again.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.mysql import DATETIME, LONGTEXT

from adk_oceanbase import ddl_steps as steps

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

_KEY = {"collation": "utf8mb4_bin"}
_OPTS = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin"}
_NOW = sa.text("CURRENT_TIMESTAMP(6)")

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
    "v_lg_threads": """
        SELECT app_name, user_id, thread_id, checkpoint_ns, COUNT(*) AS checkpoints,
               MIN(created_at) AS first_at, MAX(created_at) AS last_at,
               SUM(LENGTH(checkpoint)) AS checkpoint_bytes
        FROM lg_checkpoints
        GROUP BY app_name, user_id, thread_id, checkpoint_ns""",
    "v_lg_checkpoints": """
        SELECT app_name, user_id, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id,
               JSON_UNQUOTE(JSON_EXTRACT(metadata, '$.source')) AS source,
               JSON_EXTRACT(metadata, '$.step') AS step, created_at, LENGTH(checkpoint) AS checkpoint_bytes
        FROM lg_checkpoints""",
    "v_lg_store_items": """
        SELECT app_name, user_id, namespace, item_key, created_at, updated_at, expires_at, ttl_minutes,
               indexed_fields, LENGTH(value_json) AS value_bytes
        FROM lg_store_items""",
    "v_procedure_success": """
        SELECT s.app_name, s.user_id AS scope_user, s.scenario_id, c.label, s.path_hash, s.tool_path,
               s.successes, s.failures, s.unknowns,
               s.successes / NULLIF(s.successes + s.failures, 0) AS success_rate,
               s.iterations_sum / NULLIF(s.successes + s.failures + s.unknowns, 0) AS mean_iterations,
               s.tool_calls_sum / NULLIF(s.successes + s.failures + s.unknowns, 0) AS mean_tool_calls,
               s.tainted, s.last_seen
        FROM procedure_stats s
        LEFT JOIN procedure_scenarios c
          ON c.app_name = s.app_name AND c.user_id = s.user_id AND c.scenario_id = s.scenario_id""",
    "v_procedure_failing_tools": """
        SELECT app_name, scope_user, failed_tool, COUNT(*) AS runs_with_error,
               SUM(outcome = 'failure') AS failed_runs, COUNT(DISTINCT scenario_id) AS scenarios,
               MAX(created_at) AS last_error_at
        FROM procedure_runs
        WHERE counted = 1 AND failed_tool IS NOT NULL
        GROUP BY app_name, scope_user, failed_tool""",
    "v_procedure_weekly": """
        SELECT app_name, scope_user, scenario_id, path_hash,
               DATE_SUB(DATE(created_at), INTERVAL WEEKDAY(created_at) DAY) AS week_start,
               SUM(outcome = 'success') AS successes, SUM(outcome = 'failure') AS failures,
               SUM(outcome = 'success') / NULLIF(SUM(outcome IN ('success', 'failure')), 0) AS success_rate
        FROM procedure_runs
        WHERE counted = 1
        GROUP BY app_name, scope_user, scenario_id, path_hash,
                 DATE_SUB(DATE(created_at), INTERVAL WEEKDAY(created_at) DAY)""",
}

_NEW_VIEWS = ("v_procedure_success", "v_procedure_failing_tools", "v_procedure_weekly")


def _ts() -> DATETIME:
    return DATETIME(fsp=6)


def upgrade() -> None:
    steps.create_table(
        "procedure_runs",
        sa.Column("app_name", sa.String(128, **_KEY), nullable=False),
        sa.Column("user_id", sa.String(128, **_KEY), nullable=False),
        sa.Column("session_id", sa.String(128, **_KEY), nullable=False),
        sa.Column("invocation_id", sa.String(256, **_KEY), nullable=False),
        sa.Column("extractor", sa.String(32), nullable=False),
        sa.Column("scope_user", sa.String(128, **_KEY), nullable=False, server_default=""),
        sa.Column("scenario_id", sa.String(64, **_KEY), nullable=True),
        sa.Column("path_hash", sa.String(64, **_KEY), nullable=True),
        sa.Column("tool_path", LONGTEXT, nullable=True),
        sa.Column("outcome", sa.String(8), nullable=False, server_default="unknown"),
        sa.Column("outcome_source", sa.String(16), nullable=False, server_default="none"),
        sa.Column("reason", sa.String(256), nullable=True),
        sa.Column("failed_tool", sa.String(256), nullable=True),
        sa.Column("iterations", sa.Integer, nullable=False, server_default="0"),
        sa.Column("tool_calls", sa.Integer, nullable=False, server_default="0"),
        sa.Column("tool_errors", sa.Integer, nullable=False, server_default="0"),
        sa.Column("retries", sa.Integer, nullable=False, server_default="0"),
        sa.Column("request_hash", sa.String(64, **_KEY), nullable=True),
        sa.Column("request_vector", LONGTEXT, nullable=True),
        sa.Column("event_ids", LONGTEXT, nullable=True),
        sa.Column("counted", sa.SmallInteger, nullable=False, server_default="0"),
        sa.Column("created_at", _ts(), nullable=False),
        sa.Column("stored_at", _ts(), nullable=False, server_default=_NOW),
        sa.PrimaryKeyConstraint("app_name", "user_id", "session_id", "invocation_id", name="pk_procedure_runs"),
        **_OPTS,
    )
    steps.create_index("ix_procedure_runs_scenario", "procedure_runs", ["app_name", "scope_user", "scenario_id", "created_at"])
    steps.create_index("ix_procedure_runs_app_stored", "procedure_runs", ["app_name", "stored_at"])
    steps.create_table(
        "procedure_stats",
        sa.Column("app_name", sa.String(128, **_KEY), nullable=False),
        sa.Column("user_id", sa.String(128, **_KEY), nullable=False),
        sa.Column("scenario_id", sa.String(64, **_KEY), nullable=False),
        sa.Column("path_hash", sa.String(64, **_KEY), nullable=False),
        sa.Column("tool_path", LONGTEXT, nullable=False),
        sa.Column("successes", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("failures", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("unknowns", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("iterations_sum", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("tool_calls_sum", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("tainted", sa.SmallInteger, nullable=False, server_default="0"),
        sa.Column("last_seen", _ts(), nullable=False),
        sa.Column("updated_at", _ts(), nullable=False),
        sa.PrimaryKeyConstraint("app_name", "user_id", "scenario_id", "path_hash", name="pk_procedure_stats"),
        **_OPTS,
    )
    steps.create_table(
        "procedure_scenarios",
        sa.Column("app_name", sa.String(128, **_KEY), nullable=False),
        sa.Column("user_id", sa.String(128, **_KEY), nullable=False),
        sa.Column("scenario_id", sa.String(64, **_KEY), nullable=False),
        sa.Column("label", sa.String(256), nullable=True),
        sa.Column("vector_sum", LONGTEXT, nullable=True),
        sa.Column("members", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("embedding_model", sa.String(128), nullable=True),
        sa.Column("created_at", _ts(), nullable=False),
        sa.Column("updated_at", _ts(), nullable=False),
        sa.PrimaryKeyConstraint("app_name", "user_id", "scenario_id", name="pk_procedure_scenarios"),
        **_OPTS,
    )
    for name in _NEW_VIEWS:
        op.execute(f"CREATE OR REPLACE VIEW {name} AS {VIEWS[name]}")


def downgrade() -> None:
    for name in _NEW_VIEWS:
        op.execute(f"DROP VIEW IF EXISTS {name}")
    steps.drop_table("procedure_scenarios")
    steps.drop_table("procedure_stats")
    steps.drop_table("procedure_runs")
