"""LangGraph on the same database: checkpoints, channel blobs, pending writes and long-term Store items (issue 26).

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26

``adk_oceanbase.langgraph``'s ``OceanBaseSaver`` and ``OceanBaseStore``.  As
LangGraph's Postgres saver does, a checkpoint row holds the checkpoint without
its channel values, and each channel's value is stored once per channel
version in ``lg_checkpoint_blobs``: a step that changes one channel writes one
blob, not the whole state.  Every table carries ``app_name`` (the saver's or
store's) first in its key and a ``user_id`` (``''`` when the thread or
namespace is tied to no user), so ``delete_user_data`` erases a user's threads
and items with the rest of their data.  ``created_at`` / ``stored_at`` come
from the database clock: what retention counts from.  Key lengths fit
InnoDB's 3,072-byte limit in utf8mb4 (``checkpoint_ns`` 255, channel 128).

A Store item's indexed fields are rows of ``agent_memories`` written through the
memory service (so semantic search is the project's hybrid retrieval); each
``lg_store_fields`` row ties one field of an item to the memory holding its text.

The views redefine every earlier view and add ``v_lg_threads``,
``v_lg_checkpoints`` and ``v_lg_store_items``.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.mysql import DATETIME, LONGBLOB, LONGTEXT

from adk_oceanbase import ddl_steps as steps

revision = "0017"
down_revision = "0016"
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
}

_NEW_VIEWS = ("v_lg_threads", "v_lg_checkpoints", "v_lg_store_items")


def _id(name: str, length: int = 128, **kw):
    return sa.Column(name, sa.String(length, **_KEY), nullable=False, **kw)


def _user():
    return sa.Column("user_id", sa.String(128, **_KEY), nullable=False, server_default="")


def upgrade() -> None:
    steps.create_table(
        "lg_checkpoints",
        _id("app_name"), _id("thread_id"), _id("checkpoint_ns", 255, server_default=""), _id("checkpoint_id", 64),
        sa.Column("parent_checkpoint_id", sa.String(64, **_KEY), nullable=True),
        _user(),
        sa.Column("run_id", sa.String(128, **_KEY), nullable=True),
        sa.Column("value_type", sa.String(32), nullable=False),
        sa.Column("checkpoint", LONGBLOB, nullable=False),
        sa.Column("metadata", LONGTEXT, nullable=False),
        sa.Column("created_at", DATETIME(fsp=6), nullable=False, server_default=_NOW),
        sa.PrimaryKeyConstraint("app_name", "thread_id", "checkpoint_ns", "checkpoint_id", name="pk_lg_checkpoints"),
        **_OPTS,
    )
    steps.create_index("ix_lg_checkpoints_user", "lg_checkpoints", ["app_name", "user_id"])
    steps.create_index("ix_lg_checkpoints_run", "lg_checkpoints", ["app_name", "run_id"])
    steps.create_index("ix_lg_checkpoints_created", "lg_checkpoints", ["app_name", "created_at"])
    steps.create_table(
        "lg_checkpoint_blobs",
        _id("app_name"), _id("thread_id"), _id("checkpoint_ns", 255, server_default=""), _id("channel"),
        _id("version", 64),
        _user(),
        sa.Column("value_type", sa.String(32), nullable=False),
        sa.Column("payload", LONGBLOB, nullable=True),
        sa.PrimaryKeyConstraint("app_name", "thread_id", "checkpoint_ns", "channel", "version", name="pk_lg_checkpoint_blobs"),
        **_OPTS,
    )
    steps.create_index("ix_lg_blobs_user", "lg_checkpoint_blobs", ["app_name", "user_id"])
    steps.create_table(
        "lg_checkpoint_writes",
        _id("app_name"), _id("thread_id"), _id("checkpoint_ns", 255, server_default=""), _id("checkpoint_id", 64),
        _id("task_id", 64),
        sa.Column("idx", sa.Integer, nullable=False),
        _user(),
        sa.Column("channel", sa.String(128, **_KEY), nullable=False),
        sa.Column("task_path", sa.String(255, **_KEY), nullable=False, server_default=""),
        sa.Column("value_type", sa.String(32), nullable=False),
        sa.Column("payload", LONGBLOB, nullable=True),
        sa.PrimaryKeyConstraint(
            "app_name", "thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx", name="pk_lg_checkpoint_writes"
        ),
        **_OPTS,
    )
    steps.create_index("ix_lg_writes_user", "lg_checkpoint_writes", ["app_name", "user_id"])
    steps.create_table(
        "lg_store_items",
        _id("app_name"), _id("namespace", 300), _id("item_key", 255),
        _user(),
        sa.Column("value_json", LONGTEXT, nullable=False),
        sa.Column("created_at", DATETIME(fsp=6), nullable=False),
        sa.Column("updated_at", DATETIME(fsp=6), nullable=False),
        sa.Column("expires_at", DATETIME(fsp=6), nullable=True),
        sa.Column("ttl_minutes", sa.Double, nullable=True),
        sa.Column("indexed_fields", sa.Integer, nullable=False, server_default="0"),
        sa.Column("stored_at", DATETIME(fsp=6), nullable=False, server_default=_NOW),
        sa.PrimaryKeyConstraint("app_name", "namespace", "item_key", name="pk_lg_store_items"),
        **_OPTS,
    )
    steps.create_index("ix_lg_store_user", "lg_store_items", ["app_name", "user_id"])
    steps.create_index("ix_lg_store_expires", "lg_store_items", ["app_name", "expires_at"])
    steps.create_index("ix_lg_store_unindexed", "lg_store_items", ["app_name", "indexed_fields", "namespace"])
    steps.create_table(
        "lg_store_fields",
        _id("app_name"), _id("namespace", 300), _id("item_key", 255),
        sa.Column("field_no", sa.Integer, nullable=False),
        _user(),
        sa.Column("path", sa.String(255, **_KEY), nullable=False),
        _id("memory_user"), _id("memory_id", 64),
        sa.PrimaryKeyConstraint("app_name", "namespace", "item_key", "field_no", name="pk_lg_store_fields"),
        **_OPTS,
    )
    steps.create_index("ix_lg_fields_user", "lg_store_fields", ["app_name", "user_id"])
    steps.create_index("ix_lg_fields_memory", "lg_store_fields", ["app_name", "memory_user", "memory_id"])
    for name, body in VIEWS.items():
        op.execute(f"CREATE OR REPLACE VIEW {name} AS {body}")


def downgrade() -> None:
    for name in _NEW_VIEWS:
        op.execute(f"DROP VIEW IF EXISTS {name}")
    for table in ("lg_store_fields", "lg_store_items", "lg_checkpoint_writes", "lg_checkpoint_blobs", "lg_checkpoints"):
        steps.drop_table(table)
