-- Analyst views over adk-oceanbase's tables (OceanBase/seekdb and MySQL/MariaDB alike).
-- Created by the migrations (`adk-oceanbase db upgrade`; newest definitions in revision 0019); this
-- file is the readable copy and tests/test_sql_files.py checks a migrated database matches it.
-- JSON payloads are LONGTEXT holding JSON: JSON_EXTRACT works on them directly.

-- One row per session: who, when, how big.
CREATE OR REPLACE VIEW v_sessions AS
SELECT app_name, user_id, session_id, created_at, updated_at,
       TIMESTAMPDIFF(SECOND, created_at, updated_at) AS active_seconds,
       event_count, total_tokens, last_seq
FROM agent_sessions;

-- One row per stored event with the readable bits pulled out of the JSON: the first text part
-- wherever it sits (a thought or a tool call may come first), and JSON arrays of every tool call's
-- and tool response's name (NULL when there is none). redacted = 1: the app's redaction policy
-- ran over the event before it was written.
CREATE OR REPLACE VIEW v_session_events AS
SELECT app_name, user_id, session_id, seq, event_time, author, event_type, invocation_id,
       token_count, is_final, compacted_by IS NOT NULL AS compacted, redacted,
       JSON_UNQUOTE(JSON_EXTRACT(JSON_EXTRACT(event_json, '$.content.parts[*].text'), '$[0]')) AS first_text,
       JSON_EXTRACT(event_json, '$.content.parts[*].function_call.name') AS function_calls,
       JSON_EXTRACT(event_json, '$.content.parts[*].function_response.name') AS function_responses
FROM session_events;

-- One row per tool call: an event that calls three tools gives three rows (JSON_TABLE over
-- parts[*]; part_index is the call's 1-based position among the event's parts).
CREATE OR REPLACE VIEW v_tool_calls AS
SELECT e.app_name, e.user_id, e.session_id, e.seq, e.event_time, e.author, e.invocation_id,
       e.compacted_by IS NOT NULL AS compacted, p.part_index, p.tool_name, p.call_id
FROM session_events e,
     JSON_TABLE(e.event_json, '$.content.parts[*]' COLUMNS (
         part_index FOR ORDINALITY,
         tool_name VARCHAR(256) PATH '$.function_call.name',
         call_id VARCHAR(256) PATH '$.function_call.id')) p
WHERE e.event_type IN ('function_call', 'function_response') AND p.tool_name IS NOT NULL;

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

-- Who accessed what: per user, session and operation, how often, with how many errors, first and
-- last time (audit_log; reads appear as sampled by AuditSettings.read_sample).
CREATE OR REPLACE VIEW v_audit_access AS
SELECT app_name, user_id, session_id, operation, COUNT(*) AS calls,
       SUM(status = 'error') AS errors, MIN(at) AS first_at, MAX(at) AS last_at
FROM audit_log
GROUP BY app_name, user_id, session_id, operation;

-- Error rate per operation.
CREATE OR REPLACE VIEW v_audit_error_rate AS
SELECT app_name, operation, COUNT(*) AS calls, SUM(status = 'error') AS errors,
       SUM(status = 'error') / COUNT(*) AS error_rate
FROM audit_log
GROUP BY app_name, operation;

-- Latency per operation: p50 and p95 (nearest rank, by window functions: OceanBase, MySQL 8 and
-- MariaDB all run them) and the maximum, in milliseconds.
CREATE OR REPLACE VIEW v_audit_latency AS
SELECT app_name, operation, COUNT(*) AS calls,
       MAX(CASE WHEN pos = CEIL(0.50 * n) THEN duration_ms END) AS p50_ms,
       MAX(CASE WHEN pos = CEIL(0.95 * n) THEN duration_ms END) AS p95_ms,
       MAX(duration_ms) AS max_ms
FROM (SELECT app_name, operation, duration_ms,
             ROW_NUMBER() OVER (PARTITION BY app_name, operation ORDER BY duration_ms) AS pos,
             COUNT(*) OVER (PARTITION BY app_name, operation) AS n
      FROM audit_log) ranked
GROUP BY app_name, operation;

-- One row per model response that reported usage (ADK's usage_metadata and model_version, revision
-- 0016): prompt tokens (cached ones included, as Gemini counts them), completion, cached, thinking.
CREATE OR REPLACE VIEW v_model_usage AS
SELECT app_name, user_id, session_id, seq, event_time, invocation_id, author,
       JSON_UNQUOTE(JSON_EXTRACT(event_json, '$.model_version')) AS model,
       COALESCE(CAST(JSON_EXTRACT(event_json, '$.usage_metadata.prompt_token_count') AS SIGNED), 0) AS prompt_tokens,
       COALESCE(CAST(JSON_EXTRACT(event_json, '$.usage_metadata.candidates_token_count') AS SIGNED), 0) AS completion_tokens,
       COALESCE(CAST(JSON_EXTRACT(event_json, '$.usage_metadata.cached_content_token_count') AS SIGNED), 0) AS cached_tokens,
       COALESCE(CAST(JSON_EXTRACT(event_json, '$.usage_metadata.thoughts_token_count') AS SIGNED), 0) AS thoughts_tokens
FROM session_events
WHERE JSON_EXTRACT(event_json, '$.usage_metadata') IS NOT NULL;

-- One row per tool result: the tool, its call id, success or error (a result object with an
-- "error" member; its "error_type", else 'error', as the error class), and the time from the
-- call's event to the result's in milliseconds (NULL when the call is not stored).
CREATE OR REPLACE VIEW v_tool_results AS
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
WHERE r.event_type = 'function_response' AND p.tool_name IS NOT NULL;

-- Tokens and cost per app, user, day and model; cost_usd is NULL for a model without a row in
-- model_prices (USD per million tokens; cached prompt tokens at the cached price when set).
CREATE OR REPLACE VIEW v_cost_daily AS
SELECT u.app_name, u.user_id, DATE(u.event_time) AS day, u.model, COUNT(*) AS responses,
       SUM(u.prompt_tokens) AS prompt_tokens, SUM(u.completion_tokens) AS completion_tokens,
       SUM(u.cached_tokens) AS cached_tokens,
       SUM((u.prompt_tokens - u.cached_tokens) * p.prompt_usd_per_mtok
           + u.cached_tokens * COALESCE(p.cached_usd_per_mtok, p.prompt_usd_per_mtok)
           + u.completion_tokens * p.completion_usd_per_mtok) / 1000000 AS cost_usd
FROM v_model_usage u LEFT JOIN model_prices p ON p.model = u.model
GROUP BY u.app_name, u.user_id, DATE(u.event_time), u.model;

-- Failure rate and duration per tool (v_tool_results).
CREATE OR REPLACE VIEW v_tool_failure_rate AS
SELECT app_name, tool_name, COUNT(*) AS calls, SUM(status = 'error') AS failures,
       SUM(status = 'error') / COUNT(*) AS failure_rate,
       AVG(duration_ms) AS avg_duration_ms, MAX(duration_ms) AS max_duration_ms
FROM v_tool_results
GROUP BY app_name, tool_name;

-- LangGraph threads (OceanBaseSaver): one row per thread and checkpoint namespace, with its user
-- ('' when the thread is tied to none), how many checkpoints it holds, when, and their bytes.
CREATE OR REPLACE VIEW v_lg_threads AS
SELECT app_name, user_id, thread_id, checkpoint_ns, COUNT(*) AS checkpoints,
       MIN(created_at) AS first_at, MAX(created_at) AS last_at,
       SUM(LENGTH(checkpoint)) AS checkpoint_bytes
FROM lg_checkpoints
GROUP BY app_name, user_id, thread_id, checkpoint_ns;

-- LangGraph checkpoints with the metadata analysts ask for: source (input | loop | update | fork), step, run.
CREATE OR REPLACE VIEW v_lg_checkpoints AS
SELECT app_name, user_id, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id,
       JSON_UNQUOTE(JSON_EXTRACT(metadata, '$.source')) AS source,
       JSON_EXTRACT(metadata, '$.step') AS step, created_at, LENGTH(checkpoint) AS checkpoint_bytes
FROM lg_checkpoints;

-- LangGraph Store items (OceanBaseStore): namespace ("a.b.c"), key, lifetimes, how many fields are
-- indexed for semantic search (as agent_memories rows), and the value's size.
CREATE OR REPLACE VIEW v_lg_store_items AS
SELECT app_name, user_id, namespace, item_key, created_at, updated_at, expires_at, ttl_minutes,
       indexed_fields, LENGTH(value_json) AS value_bytes
FROM lg_store_items;

-- Procedural memory (revision 0019): success rate of every tool path per scenario (scope_user '' is
-- the app's aggregate over all users), with the scenario's label when the agent gave one.
CREATE OR REPLACE VIEW v_procedure_success AS
SELECT s.app_name, s.user_id AS scope_user, s.scenario_id, c.label, s.path_hash, s.tool_path,
       s.successes, s.failures, s.unknowns,
       s.successes / NULLIF(s.successes + s.failures, 0) AS success_rate,
       s.iterations_sum / NULLIF(s.successes + s.failures + s.unknowns, 0) AS mean_iterations,
       s.tool_calls_sum / NULLIF(s.successes + s.failures + s.unknowns, 0) AS mean_tool_calls,
       s.tainted, s.last_seen
FROM procedure_stats s
LEFT JOIN procedure_scenarios c
  ON c.app_name = s.app_name AND c.user_id = s.user_id AND c.scenario_id = s.scenario_id;

-- Failing tools: per tool, the runs where its response was an error, how many of those runs
-- failed in the end, across how many scenarios, and when last.
CREATE OR REPLACE VIEW v_procedure_failing_tools AS
SELECT app_name, scope_user, failed_tool, COUNT(*) AS runs_with_error,
       SUM(outcome = 'failure') AS failed_runs, COUNT(DISTINCT scenario_id) AS scenarios,
       MAX(created_at) AS last_error_at
FROM procedure_runs
WHERE counted = 1 AND failed_tool IS NOT NULL
GROUP BY app_name, scope_user, failed_tool;

-- Success per path and week (weeks start on Monday): compare a path's weeks to see it getting
-- worse: join the view to itself on week_start - INTERVAL 7 DAY.
CREATE OR REPLACE VIEW v_procedure_weekly AS
SELECT app_name, scope_user, scenario_id, path_hash,
       DATE_SUB(DATE(created_at), INTERVAL WEEKDAY(created_at) DAY) AS week_start,
       SUM(outcome = 'success') AS successes, SUM(outcome = 'failure') AS failures,
       SUM(outcome = 'success') / NULLIF(SUM(outcome IN ('success', 'failure')), 0) AS success_rate
FROM procedure_runs
WHERE counted = 1
GROUP BY app_name, scope_user, scenario_id, path_hash,
         DATE_SUB(DATE(created_at), INTERVAL WEEKDAY(created_at) DAY);
