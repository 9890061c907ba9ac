-- Purpose: everything stored for one user: their user: state and each session's own state (keys ADK-prefixed).
-- Parameters: @app_name, @user_id
-- Output: scope, session_id, state_key, value_json, updated_at
SELECT scope, session_id,
       CONCAT(CASE scope WHEN 'user' THEN 'user:' ELSE '' END, state_key) AS state_key,
       value_json, updated_at
FROM session_state
WHERE app_name = @app_name AND user_id = @user_id
ORDER BY scope, session_id, state_key;
