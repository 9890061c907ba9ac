-- Purpose: what was done with one user's data, per session and operation, since a point in time
--          (audit_log: writes always, reads as sampled by AuditSettings.read_sample; session_id is
--          NULL for memory operations and user-wide lists).
-- Parameters: @app_name, @user_id, @since (DATETIME, UTC)
-- Output: session_id, operation, calls, errors, first_at, last_at
SELECT session_id, operation, COUNT(*) AS calls, SUM(status = 'error') AS errors,
       MIN(at) AS first_at, MAX(at) AS last_at
FROM audit_log
WHERE app_name = @app_name AND user_id = @user_id AND at >= @since
GROUP BY session_id, operation
ORDER BY last_at DESC, session_id, operation;
