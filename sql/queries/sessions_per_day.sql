-- Purpose: how many sessions each app started per day (UTC), and how many users started them.
-- Parameters: @app_name (an app name), @since (DATETIME, UTC)
-- Output: day, sessions, users
SELECT DATE(created_at) AS day, COUNT(*) AS sessions, COUNT(DISTINCT user_id) AS users
FROM agent_sessions
WHERE app_name = @app_name AND created_at >= @since
GROUP BY DATE(created_at)
ORDER BY day;
