-- Purpose: the slowest audited calls since a point in time that took at least a threshold.
-- Parameters: @app_name, @since (DATETIME, UTC), @min_ms (milliseconds), @limit (integer)
-- Output: at, operation, user_id, session_id, event_id, duration_ms, status, error_code
-- (MySQL takes no variable in LIMIT outside prepared statements, so the top @limit come from a window.)
SELECT at, operation, user_id, session_id, event_id, duration_ms, status, error_code
FROM (
    SELECT at, operation, user_id, session_id, event_id, duration_ms, status, error_code,
           ROW_NUMBER() OVER (ORDER BY duration_ms DESC, audit_id) AS pos
    FROM audit_log
    WHERE app_name = @app_name AND at >= @since AND duration_ms >= @min_ms
) slow
WHERE pos <= @limit
ORDER BY pos;
