-- Structured channel state, tool-call records, ingestion barriers and history summaries.

-- state_channel_of_stream --
-- description: the channel of a stream ($1 stream); no row when the stream is unknown
SELECT coalesce(channel, id) AS channel FROM streams WHERE id = $1;

-- state_viewer_by_login --
-- description: the user id and login of a viewer by normalized login ($1 login)
SELECT user_id, login FROM viewers WHERE lower(login) = $1 ORDER BY last_seen DESC LIMIT 1;

-- state_logins --
-- description: current logins of user ids ($1 user_ids text[])
SELECT user_id, login FROM viewers WHERE user_id = ANY($1::text[]);

-- state_insert_request --
-- description: open a viewer request ($1 channel, $2 user_id, $3 text, $4 at, $5 turn_id)
INSERT INTO state_requests (channel, user_id, text, status, created_at, created_turn, updated_at, updated_turn)
VALUES ($1, $2, $3, 'open', $4, $5, $4, $5)
RETURNING *;

-- state_set_request_status --
-- description: close an open request ($1 channel, $2 id, $3 status, $4 at, $5 turn_id); no row when not open
UPDATE state_requests
SET status = $3::state_request_status, updated_at = $4, updated_turn = $5
WHERE channel = $1 AND id = $2 AND status = 'open'
RETURNING *;

-- state_request_by_id --
-- description: one request ($1 channel, $2 id)
SELECT * FROM state_requests WHERE channel = $1 AND id = $2;

-- state_list_requests --
-- description: requests of a channel ($1 channel, $2 user_id or NULL for all, $3 status or NULL for all, $4 limit)
SELECT * FROM state_requests
WHERE channel = $1
  AND ($2::text IS NULL OR user_id = $2)
  AND ($3::state_request_status IS NULL OR status = $3::state_request_status)
ORDER BY id DESC
LIMIT $4;

-- state_upsert_relationship --
-- description: set the current relationship of a pair ($1 channel, $2 user_a, $3 user_b, $4 kind, $5 since, $6 at, $7 turn_id); user_a < user_b
INSERT INTO state_relationships (channel, user_a, user_b, kind, since, created_at, created_turn, updated_at, updated_turn)
VALUES ($1, $2, $3, $4, $5, $6, $7, $6, $7)
ON CONFLICT (channel, user_a, user_b) WHERE removed_at IS NULL
DO UPDATE SET kind = EXCLUDED.kind,
              since = coalesce(EXCLUDED.since, state_relationships.since),
              updated_at = EXCLUDED.updated_at,
              updated_turn = EXCLUDED.updated_turn
RETURNING *;

-- state_remove_relationship --
-- description: remove the current relationship of a pair ($1 channel, $2 user_a, $3 user_b, $4 at, $5 turn_id); no row when none
UPDATE state_relationships
SET removed_at = $4, removed_turn = $5
WHERE channel = $1 AND user_a = $2 AND user_b = $3 AND removed_at IS NULL
RETURNING *;

-- state_list_relationships --
-- description: current relationships of a channel ($1 channel, $2 user_id or NULL for all, $3 limit)
SELECT * FROM state_relationships
WHERE channel = $1 AND removed_at IS NULL
  AND ($2::text IS NULL OR user_a = $2 OR user_b = $2)
ORDER BY updated_at DESC, id DESC
LIMIT $3;

-- state_insert_note --
-- description: add a note ($1 channel, $2 user_id or NULL, $3 text, $4 expires_at or NULL, $5 at, $6 turn_id)
INSERT INTO state_notes (channel, user_id, text, expires_at, created_at, created_turn)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING *;

-- state_list_notes --
-- description: unexpired notes ($1 channel, $2 user_id or NULL for all, $3 now, $4 limit)
SELECT * FROM state_notes
WHERE channel = $1
  AND ($2::text IS NULL OR user_id = $2)
  AND (expires_at IS NULL OR expires_at > $3)
ORDER BY id DESC
LIMIT $4;

-- state_upsert_joke --
-- description: record an inside joke ($1 channel, $2 text, $3 text_key, $4 user_ids text[], $5 at, $6 turn_id); adds viewers, keeps the first time
INSERT INTO state_inside_jokes (channel, text, text_key, user_ids, first_at, created_turn, updated_at, updated_turn)
VALUES ($1, $2, $3, $4, $5, $6, $5, $6)
ON CONFLICT (channel, text_key)
DO UPDATE SET user_ids = ARRAY(
                  SELECT DISTINCT u FROM unnest(state_inside_jokes.user_ids || EXCLUDED.user_ids) AS u
                  ORDER BY u),
              first_at = least(state_inside_jokes.first_at, EXCLUDED.first_at),
              updated_at = EXCLUDED.updated_at,
              updated_turn = EXCLUDED.updated_turn
RETURNING *;

-- state_list_jokes --
-- description: inside jokes ($1 channel, $2 user_id or NULL for all, $3 limit)
SELECT * FROM state_inside_jokes
WHERE channel = $1 AND ($2::text IS NULL OR $2 = ANY(user_ids))
ORDER BY first_at DESC, id DESC
LIMIT $3;

-- state_turn_message_ids --
-- description: message ids of turns ($1 turn_ids text[])
SELECT id, message_ids FROM turns WHERE id = ANY($1::text[]);

-- state_next_tool_seq --
-- description: the next tool-call sequence number of a turn ($1 turn_id)
SELECT coalesce(max(seq), 0) + 1 AS seq FROM turn_tool_calls WHERE turn_id = $1;

-- state_turn_chat_time --
-- description: chat time of a turn's newest message ($1 turn_id); NULL when unknown
SELECT max(m.ts) AS ts FROM turns t JOIN messages m ON m.id = ANY(t.message_ids) WHERE t.id = $1;

-- state_insert_tool_call --
-- description: record a tool call and its result ($1 turn_id, $2 seq, $3 call_id, $4 tool_name, $5 arguments jsonb, $6 result jsonb, $7 error, $8 at)
INSERT INTO turn_tool_calls (turn_id, seq, call_id, tool_name, arguments, result, error, at)
VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb, $7, $8);

-- state_tool_calls --
-- description: the tool calls of a turn in order ($1 turn_id)
SELECT turn_id, seq, call_id, tool_name, arguments, result, error, at
FROM turn_tool_calls WHERE turn_id = $1 ORDER BY seq;

-- state_upsert_barrier --
-- description: record (merge) a turn's barrier ($1 turn_id, $2 domains text[], $3 user_ids text[], $4 whole_batch)
INSERT INTO turn_barriers (turn_id, domains, user_ids, whole_batch)
VALUES ($1, $2, $3, $4)
ON CONFLICT (turn_id) DO UPDATE
SET domains = ARRAY(SELECT DISTINCT d FROM unnest(turn_barriers.domains || EXCLUDED.domains) AS d ORDER BY d),
    user_ids = ARRAY(SELECT DISTINCT u FROM unnest(turn_barriers.user_ids || EXCLUDED.user_ids) AS u ORDER BY u),
    whole_batch = turn_barriers.whole_batch OR EXCLUDED.whole_batch,
    updated_at = now()
RETURNING domains, user_ids, whole_batch;

-- state_barrier_for_turn --
-- description: a turn's barrier ($1 turn_id); no row when the turn changed no state
SELECT domains, user_ids, whole_batch FROM turn_barriers WHERE turn_id = $1;

-- state_latest_summary --
-- description: the current history summary of a stream ($1 stream)
SELECT id, stream, covers_key, covers_ts, covers_count, text, model, created_at
FROM history_summaries WHERE stream = $1 ORDER BY id DESC LIMIT 1;

-- state_insert_summary --
-- description: store a history summary ($1 stream, $2 covers_key, $3 covers_ts, $4 covers_count, $5 text, $6 model)
INSERT INTO history_summaries (stream, covers_key, covers_ts, covers_count, text, model)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING id;
