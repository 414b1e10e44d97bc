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

-- web_turn --
-- description: one turn with its report ($1 turn id)
SELECT id, stream, message_ids, created_at, status::text AS status, reply, error, timings, report
FROM turns_with_status
WHERE id = $1;

-- web_viewer_ids --
-- description: the user ids of these normalized logins ($1 logins)
SELECT login, user_id FROM viewers WHERE login = ANY($1::text[]);

-- web_memory_turns --
-- description: the newest turns whose recall carried each memory, newest first ($1 memory ids, $2 turns per memory)
SELECT m.id AS memory_id, t.turn_id, t.finished_at
FROM unnest($1::text[]) AS m(id)
CROSS JOIN LATERAL (
    SELECT o.turn_id, o.finished_at FROM turn_outcomes o
    WHERE o.report -> 'recall' @> jsonb_build_array(jsonb_build_object('memory_id', m.id))
    ORDER BY o.finished_at DESC LIMIT $2
) AS t
ORDER BY m.id, t.finished_at DESC;
