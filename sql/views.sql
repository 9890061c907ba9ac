-- Analyst views over adk-oceanbase's tables (OceanBase/seekdb and MySQL/MariaDB alike).
-- Created by migration 0002 (`adk-oceanbase db upgrade`); this file is the readable copy and
-- tests/test_sql_files.py checks the views in a migrated database match it.
-- JSON payloads are LONGTEXT holding JSON: JSON_EXTRACT works on them directly.

-- One row per session: who, when, how big.
CREATE OR REPLACE VIEW v_sessions AS
SELECT app_name, user_id, session_id, created_at, updated_at,
       TIMESTAMPDIFF(SECOND, created_at, updated_at) AS active_seconds,
       event_count, total_tokens, last_seq
FROM agent_sessions;

-- One row per stored event with the readable bits pulled out of the JSON.
CREATE OR REPLACE VIEW v_session_events AS
SELECT app_name, user_id, session_id, seq, event_time, author, event_type, invocation_id,
       token_count, is_final, compacted_by IS NOT NULL AS compacted,
       JSON_UNQUOTE(JSON_EXTRACT(event_json, '$.content.parts[0].text')) AS first_text,
       JSON_UNQUOTE(JSON_EXTRACT(event_json, '$.content.parts[0].function_call.name')) AS function_call,
       JSON_UNQUOTE(JSON_EXTRACT(event_json, '$.content.parts[0].function_response.name')) AS function_response
FROM session_events;

-- State as ADK shows it: app:/user: prefixes restored.
CREATE OR REPLACE VIEW v_state AS
SELECT app_name, scope, user_id, session_id,
       CONCAT(CASE scope WHEN 'app' THEN 'app:' WHEN 'user' THEN 'user:' ELSE '' END, state_key) AS state_key,
       value_json, updated_at
FROM session_state;

-- Memories without the embedding column.
CREATE OR REPLACE VIEW v_memories AS
SELECT memory_id, app_name, user_id, content, author, session_id, topics, importance_score,
       access_count, last_accessed_at, created_at, updated_at, embed_status, embedding_model,
       extractor, superseded_by IS NOT NULL AS superseded
FROM agent_memories;
