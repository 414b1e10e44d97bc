-- web_recent_turns --
-- description: the newest finished or pending turns with their report ($1 limit, $2 stream or NULL)
SELECT id, stream, message_ids, created_at, status::text AS status, reply, error, timings, report
FROM turns_with_status
WHERE $2::text IS NULL OR stream = $2
ORDER BY seq DESC LIMIT $1;

-- web_viewer_state --
-- description: the structured-state rows that name a viewer ($1 user_id): kind, text, status, time
SELECT 'request' AS kind, text, status::text AS status, updated_at AS at FROM state_requests WHERE user_id = $1
UNION ALL
SELECT 'relationship', kind || ' with ' || (CASE WHEN user_a = $1 THEN user_b ELSE user_a END), NULL, updated_at
FROM state_relationships WHERE user_a = $1 OR user_b = $1
UNION ALL
SELECT 'note', text, NULL, created_at FROM state_notes WHERE user_id = $1
UNION ALL
SELECT 'inside joke', text, NULL, updated_at FROM state_inside_jokes WHERE $1 = ANY(user_ids)
ORDER BY at DESC LIMIT 50;
