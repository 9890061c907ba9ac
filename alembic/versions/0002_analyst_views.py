"""Analyst views: v_sessions, v_session_events, v_state, v_memories.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22

The readable copy with comments is ``sql/views.sql``; a test checks that a
migrated database and that file define the same views.
"""

from alembic import op

revision = "0002"
down_revision = "0001"
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
               JSON_UNQUOTE(JSON_EXTRACT(event_json, '$.content.parts[0].text')) AS first_text,
               JSON_UNQUOTE(JSON_EXTRACT(event_json, '$.content.parts[0].function_call.name')) AS function_call,
               JSON_UNQUOTE(JSON_EXTRACT(event_json, '$.content.parts[0].function_response.name')) AS function_response
        FROM session_events""",
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


def upgrade() -> None:
    for name, body in VIEWS.items():
        op.execute(f"CREATE OR REPLACE VIEW {name} AS {body}")


def downgrade() -> None:
    for name in reversed(list(VIEWS)):
        op.execute(f"DROP VIEW IF EXISTS {name}")
