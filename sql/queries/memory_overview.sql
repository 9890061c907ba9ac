-- Purpose: per user, how many memories exist, how many are searchable (embedded, not superseded),
--          their average importance and how often they were recalled.
-- Parameters: @app_name
-- Output: user_id, memories, searchable, pending_embedding, superseded, avg_importance, recalls
SELECT user_id, COUNT(*) AS memories,
       SUM(CASE WHEN embed_status = 'ready' AND superseded_by IS NULL THEN 1 ELSE 0 END) AS searchable,
       SUM(CASE WHEN embed_status <> 'ready' THEN 1 ELSE 0 END) AS pending_embedding,
       SUM(CASE WHEN superseded_by IS NOT NULL THEN 1 ELSE 0 END) AS superseded,
       AVG(importance_score) AS avg_importance,
       SUM(access_count) AS recalls
FROM agent_memories
WHERE app_name = @app_name
GROUP BY user_id
ORDER BY memories DESC, user_id;
