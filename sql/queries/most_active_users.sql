-- Purpose: the users who produced the most events (and tokens) since a point in time.
-- Parameters: :app_name, :since (DATETIME, UTC), :limit (integer)
-- Output: user_id, sessions, events, tokens, last_event_at
SELECT user_id, COUNT(DISTINCT session_id) AS sessions, COUNT(*) AS events,
       SUM(token_count) AS tokens, MAX(event_time) AS last_event_at
FROM session_events
WHERE app_name = :app_name AND event_time >= :since
GROUP BY user_id
ORDER BY events DESC, user_id
LIMIT :limit;
