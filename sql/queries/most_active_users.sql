-- Purpose: the users who produced the most events (and tokens) since a point in time.
-- Parameters: @app_name, @since (DATETIME, UTC), @limit (integer)
-- Output: user_id, sessions, events, tokens, last_event_at
-- (MySQL takes no variable in LIMIT outside prepared statements, so the top @limit come from a window.)
SELECT user_id, sessions, events, tokens, last_event_at
FROM (
    SELECT user_id, COUNT(DISTINCT session_id) AS sessions, COUNT(*) AS events,
           SUM(token_count) AS tokens, MAX(event_time) AS last_event_at,
           ROW_NUMBER() OVER (ORDER BY COUNT(*) DESC, user_id) AS pos
    FROM session_events
    WHERE app_name = @app_name AND event_time >= @since
    GROUP BY user_id
) ranked
WHERE pos <= @limit
ORDER BY pos;
