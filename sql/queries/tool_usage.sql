-- Purpose: which tools the agents call, how often, and in how many sessions (every call of an
--          event counts: v_tool_calls has one row per function_call part).
-- Parameters: @app_name
-- Output: tool_name, calls, sessions
SELECT tool_name, COUNT(*) AS calls, COUNT(DISTINCT user_id, session_id) AS sessions
FROM v_tool_calls
WHERE app_name = @app_name
GROUP BY tool_name
ORDER BY calls DESC, tool_name;
