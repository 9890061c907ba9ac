"""Analyst views read every part of an event, and a new ``v_tool_calls`` has one row per tool call.

Revision ID: 0009
Revises: 0007
Create Date: 2026-11-23

Revision 0002's ``v_session_events`` read ``parts[0]`` only, so an event with
four function calls showed one name (or NULL when a thought came first), and
``sql/queries/tool_usage.sql`` counted 2 + NULL for 4 calls (issue #11).  Now:

* ``v_session_events.first_text`` is the first *text* part wherever it sits,
  and ``function_calls`` / ``function_responses`` (renamed from the singular
  columns, which were wrong) are JSON arrays of every name (NULL when none);
* ``v_tool_calls`` unnests ``parts[*]`` with ``JSON_TABLE`` (OceanBase 4.x,
  MySQL 8, MariaDB 10.6+): one row per call with its position and call id.

``sql/views.sql`` is the readable copy; tests/test_sql_files.py checks they agree.
"""

from alembic import op

revision = "0009"
down_revision = "0007"
branch_labels = None
depends_on = None

VIEWS = {
    "v_sessions": """
        SELECT app_name, user_id, session_id, created_at, updated_at,
               TIMESTAMPDIFF(SECOND, created_at, updated_at) AS active_seconds,
               event_count, total_tokens, last_seq
        FROM agent_sessions""",
    "v_session_events": """
        SELECT app_name, user_id, session_id, seq, event_time, author, event_type, invocation_id,
               token_count, is_final, compacted_by IS NOT NULL AS compacted,
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
}

# 0002's definitions, restored by downgrade.
_OLD_EVENTS = """
        SELECT app_name, user_id, session_id, seq, event_time, author, event_type, invocation_id,
               token_count, is_final, compacted_by IS NOT NULL AS compacted,
               JSON_UNQUOTE(JSON_EXTRACT(event_json, '$.content.parts[0].text')) AS first_text,
               JSON_UNQUOTE(JSON_EXTRACT(event_json, '$.content.parts[0].function_call.name')) AS function_call,
               JSON_UNQUOTE(JSON_EXTRACT(event_json, '$.content.parts[0].function_response.name')) AS function_response
        FROM session_events"""


def upgrade() -> None:
    for name, body in VIEWS.items():
        op.execute(f"CREATE OR REPLACE VIEW {name} AS {body}")


def downgrade() -> None:
    op.execute("DROP VIEW IF EXISTS v_tool_calls")
    op.execute(f"CREATE OR REPLACE VIEW v_session_events AS {_OLD_EVENTS}")
