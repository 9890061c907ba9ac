-- Purpose: which tools the agents call, how often, and in how many sessions.
-- Parameters: :app_name
-- Output: tool_name, calls, sessions
SELECT JSON_UNQUOTE(JSON_EXTRACT(event_json, '$.content.parts[0].function_call.name')) AS tool_name,
       COUNT(*) AS calls, COUNT(DISTINCT user_id, session_id) AS sessions
FROM session_events
WHERE app_name = :app_name AND event_type = 'function_call'
GROUP BY tool_name
ORDER BY calls DESC, tool_name;
