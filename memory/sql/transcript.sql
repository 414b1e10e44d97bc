-- transcript_ensure_stream --
-- description: register a stream session ($1 id, $2 channel, $3 temporary)
INSERT INTO streams (id, channel, temporary) VALUES ($1, $2, $3)
ON CONFLICT (id) DO NOTHING;

-- transcript_upsert_viewer --
-- description: remember a viewer's current login ($1 user_id, $2 login, $3 display_name, $4 seen at)
INSERT INTO viewers (user_id, login, display_name, first_seen, last_seen)
VALUES ($1, $2, $3, $4, $4)
ON CONFLICT (user_id) DO UPDATE
SET login = EXCLUDED.login,
    display_name = coalesce(EXCLUDED.display_name, viewers.display_name),
    last_seen = greatest(viewers.last_seen, EXCLUDED.last_seen);

-- transcript_insert_message --
-- description: append a chat message ($1 id, $2 stream, $3 user_id, $4 login, $5 display_name, $6 badges, $7 text, $8 ts, $9 kind, $10 event, $11 reply_to, $12 redacted kinds); returns the id when new
INSERT INTO messages (id, stream, user_id, login, display_name, badges, text, ts, kind, event, reply_to,
                      redacted_kinds)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (id) DO NOTHING
RETURNING id;

-- transcript_insert_turn --
-- description: open a turn ($1 id, $2 stream, $3 message ids)
INSERT INTO turns (id, stream, message_ids) VALUES ($1, $2, $3);

-- transcript_reopen_turn --
-- description: open again a turn whose opening the client saw fail ($1 id, $2 stream, $3 message ids): the row if it was not written; returns the message ids of the open turn under that id (none when it ended)
WITH opened AS (
    INSERT INTO turns (id, stream, message_ids) VALUES ($1, $2, $3)
    ON CONFLICT (id) DO NOTHING
    RETURNING message_ids
)
SELECT message_ids FROM opened
UNION ALL
SELECT t.message_ids FROM turns t
WHERE t.id = $1 AND NOT EXISTS (SELECT 1 FROM opened)
  AND NOT EXISTS (SELECT 1 FROM turn_outcomes o WHERE o.turn_id = t.id);

-- transcript_insert_outcome --
-- description: end a turn ($1 turn id, $2 status, $3 reply, $4 error, $5 reply ts, $6 timings jsonb, $7 report jsonb, $8 reason); a retry after a commit whose answer the connection lost finds the outcome written and leaves it
INSERT INTO turn_outcomes (turn_id, status, reply, error, ts, timings, report, reason)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (turn_id) DO NOTHING;

-- transcript_get_turn --
-- description: one turn with its status ($1 turn id)
SELECT id, seq, stream, message_ids, created_at, status, reply, error, reply_ts, timings, report,
       finished_at
FROM turns_with_status WHERE id = $1;

-- transcript_stream_turns --
-- description: turns of a stream in order ($1 stream)
SELECT id, seq, stream, message_ids, created_at, status, reply, error, reply_ts, timings, report,
       finished_at
FROM turns_with_status WHERE stream = $1 ORDER BY seq;

-- transcript_get_messages --
-- description: messages by id, in transcript order, redactions honoured ($1 ids)
SELECT id, stream, user_id, login, display_name, badges, text, ts, kind, event, reply_to
FROM messages_visible WHERE id = ANY($1::text[]) ORDER BY ts, seq;

-- transcript_answered_message_ids --
-- description: which of these message ids already belong to a finished turn ($1 ids); an index lookup per id (turn_messages)
SELECT DISTINCT tm.message_id AS id
FROM turn_messages tm JOIN turn_outcomes o ON o.turn_id = tm.turn_id
WHERE tm.message_id = ANY($1::text[]);

-- transcript_recent_history --
-- description: the newest history entries of a stream, newest first ($1 stream, $2 limit): chat messages (not commands; redactions honoured) and replies of completed turns; each branch reads only its newest $2 rows
SELECT * FROM (
    (SELECT 'user' AS role, m.text, m.ts, m.seq AS ord, 0 AS sub, m.id AS message_id,
            m.user_id, m.login,
            (SELECT tm.turn_id FROM turn_messages tm JOIN turns t ON t.id = tm.turn_id
             WHERE tm.message_id = m.id AND t.stream = m.stream
             ORDER BY t.seq LIMIT 1) AS turn_id
     FROM messages_visible m
     WHERE m.stream = $1 AND m.kind <> 'command'
     ORDER BY m.ts DESC, m.seq DESC
     LIMIT $2)
    UNION ALL
    (SELECT 'assistant', o.reply, o.ts, t.seq, 1, NULL, NULL, NULL, t.id
     FROM turns t JOIN turn_outcomes o ON o.turn_id = t.id
     WHERE t.stream = $1 AND o.status IN ('completed', 'degraded') AND o.reply IS NOT NULL
     ORDER BY t.seq DESC
     LIMIT $2)
) h
ORDER BY ts DESC, sub DESC, ord DESC
LIMIT $2;

-- transcript_viewer_by_login --
-- description: a viewer by current normalized login ($1 login)
SELECT user_id, login, display_name, first_seen, last_seen FROM viewers WHERE login = $1
ORDER BY last_seen DESC LIMIT 1;

-- transcript_viewer_by_id --
-- description: a viewer by user id ($1 user_id)
SELECT user_id, login, display_name, first_seen, last_seen FROM viewers WHERE user_id = $1;

-- transcript_redacted_ids --
-- description: which of these message ids were redacted (forget --everywhere) ($1 ids)
SELECT message_id FROM message_redactions WHERE message_id = ANY($1::text[]);

-- transcript_list_viewers --
-- description: the most recently seen viewers, newest first ($1 limit)
SELECT user_id, login, display_name FROM viewers ORDER BY last_seen DESC, user_id LIMIT $1;

-- transcript_stream_spans --
-- description: first and last message time of the most recently registered streams that have messages ($1 limit); two index lookups a stream (messages_stream_ts)
SELECT s.id AS stream, f.ts AS first_ts, l.ts AS last_ts
FROM (SELECT id FROM streams ORDER BY created_at DESC LIMIT $1) s
CROSS JOIN LATERAL (SELECT m.ts FROM messages m WHERE m.stream = s.id ORDER BY m.ts LIMIT 1) f
CROSS JOIN LATERAL (SELECT m.ts FROM messages m WHERE m.stream = s.id ORDER BY m.ts DESC LIMIT 1) l;

-- transcript_pending_turns --
-- description: the turns of a stream that never ended (no outcome), oldest first ($1 stream)
SELECT t.id, t.created_at
FROM turns t LEFT JOIN turn_outcomes o ON o.turn_id = t.id
WHERE t.stream = $1 AND o.turn_id IS NULL
ORDER BY t.seq;
