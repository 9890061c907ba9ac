-- Purpose: how often each operation failed since a point in time, and the most frequent error.
-- Parameters: @app_name, @since (DATETIME, UTC)
-- Output: operation, calls, errors, error_rate, top_error_code
SELECT operation, COUNT(*) AS calls, SUM(status = 'error') AS errors,
       SUM(status = 'error') / COUNT(*) AS error_rate,
       (SELECT e.error_code FROM audit_log e
         WHERE e.app_name = a.app_name AND e.operation = a.operation AND e.at >= @since AND e.status = 'error'
         GROUP BY e.error_code ORDER BY COUNT(*) DESC, e.error_code LIMIT 1) AS top_error_code
FROM audit_log a
WHERE app_name = @app_name AND at >= @since
GROUP BY app_name, operation
ORDER BY error_rate DESC, operation;
