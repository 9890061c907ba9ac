-- Purpose: a readable transcript of one session, in order, including archived (compacted) events.
-- Parameters: @app_name, @user_id, @session_id
-- Output: seq, event_time, author, event_type, compacted, text
SELECT seq, event_time, author, event_type, compacted_by IS NOT NULL AS compacted,
       COALESCE(JSON_UNQUOTE(JSON_EXTRACT(JSON_EXTRACT(event_json, '$.content.parts[*].text'), '$[0]')),
                JSON_UNQUOTE(JSON_EXTRACT(event_json, '$.actions.compaction.compacted_content.parts[0].text')),
                JSON_UNQUOTE(JSON_EXTRACT(event_json, '$.content.parts[*].function_call.name'))) AS text
FROM session_events
WHERE app_name = @app_name AND user_id = @user_id AND session_id = @session_id
ORDER BY seq;
