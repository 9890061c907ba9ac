-- Purpose: who touched one user's data since a point in time: per actor and operation (audit_log.actor,
--          revision 0014; rows written before it, or by services without AuditSettings.actor, say "(unknown)").
--          The user's rows outlive delete_user_data, so this answers after an erasure too.
-- Parameters: @app_name, @user_id, @since (DATETIME, UTC)
-- Output: actor, operation, calls, errors, first_at, last_at
SELECT COALESCE(actor, '(unknown)') AS actor, operation, COUNT(*) AS calls, SUM(status = 'error') AS errors,
       MIN(at) AS first_at, MAX(at) AS last_at
FROM audit_log
WHERE app_name = @app_name AND user_id = @user_id AND at >= @since
GROUP BY COALESCE(actor, '(unknown)'), operation
ORDER BY last_at DESC, actor, operation;
