-- Purpose: stored tokens per user and what compaction keeps out of the context window.
-- Parameters: @app_name
-- Output: user_id, sessions, events, tokens_total, tokens_live, tokens_archived
SELECT user_id, COUNT(DISTINCT session_id) AS sessions, COUNT(*) AS events,
       SUM(token_count) AS tokens_total,
       SUM(CASE WHEN compacted_by IS NULL THEN token_count ELSE 0 END) AS tokens_live,
       SUM(CASE WHEN compacted_by IS NULL THEN 0 ELSE token_count END) AS tokens_archived
FROM session_events
WHERE app_name = @app_name
GROUP BY user_id
ORDER BY tokens_total DESC, user_id;
