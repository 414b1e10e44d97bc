-- memory_profile_get --
-- description: a viewer's profile facts ($1 user_id)
SELECT user_id, slot, value, statement, memory_id, turn_id, stream, origin_message_ids, stated_at,
       updated_at
FROM viewer_profiles WHERE user_id = $1;

-- memory_profile_upsert --
-- description: set a profile slot unless it holds a newer fact ($1 user_id, $2 slot, $3 value, $4 statement, $5 memory_id, $6 turn_id, $7 stream, $8 origin_message_ids, $9 stated_at); returns the slot when taken
INSERT INTO viewer_profiles
    (user_id, slot, value, statement, memory_id, turn_id, stream, origin_message_ids, stated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (user_id, slot) DO UPDATE
SET value = EXCLUDED.value, statement = EXCLUDED.statement, memory_id = EXCLUDED.memory_id,
    turn_id = EXCLUDED.turn_id, stream = EXCLUDED.stream,
    origin_message_ids = EXCLUDED.origin_message_ids, stated_at = EXCLUDED.stated_at,
    updated_at = now()
WHERE EXCLUDED.stated_at >= viewer_profiles.stated_at
RETURNING slot;

-- memory_profile_trim_notes --
-- description: keep only the newest notes of a profile ($1 user_id, $2 how many)
DELETE FROM viewer_profiles
WHERE user_id = $1 AND slot LIKE 'note:%' AND slot NOT IN (
    SELECT slot FROM viewer_profiles WHERE user_id = $1 AND slot LIKE 'note:%'
    ORDER BY stated_at DESC, slot LIMIT $2
);

-- memory_profile_delete_viewer --
-- description: delete a viewer's whole profile ($1 user_id); returns the slots deleted
DELETE FROM viewer_profiles WHERE user_id = $1 RETURNING slot;

-- memory_profile_delete_memories --
-- description: delete the profile facts derived from memories ($1 memory ids); returns their user ids
DELETE FROM viewer_profiles WHERE memory_id = ANY($1::text[]) RETURNING user_id;

-- memory_profile_delete_turn --
-- description: delete the profile facts that came from a turn ($1 turn id); returns their user ids
DELETE FROM viewer_profiles WHERE turn_id = $1 RETURNING user_id;

-- memory_turn_messages --
-- description: a turn's messages in transcript order, redacted ones flagged ($1 message ids)
SELECT id, stream, user_id, login, display_name, badges, text, ts, kind, event, reply_to, redacted
FROM messages_visible WHERE id = ANY($1::text[]) ORDER BY ts, seq;

-- memory_messages_before --
-- description: the two chat messages of stream $1 just before message $2, the nearest first, with their author, time, whether redacted and the turns that hold them (context for the noise filter, the question a memory answers and the thread it continues); fewer rows when there are fewer
SELECT m.id, m.user_id, m.text, m.ts, m.redacted,
       ARRAY(SELECT tm.turn_id FROM turn_messages tm WHERE tm.message_id = m.id) AS turn_ids
FROM messages_visible m
WHERE m.stream = $1 AND m.kind = 'message'
  AND (m.ts, m.seq) < (SELECT ts, seq FROM messages WHERE id = $2)
ORDER BY m.ts DESC, m.seq DESC LIMIT 2;

-- memory_turn_authors --
-- description: the stream, the message ids and the distinct authors of a turn's messages ($1 turn id); no row when the turn is unknown
SELECT t.stream, t.message_ids,
       coalesce(array_agg(DISTINCT m.user_id) FILTER (WHERE m.user_id IS NOT NULL), '{}') AS user_ids
FROM turns t LEFT JOIN messages m ON m.id = ANY(t.message_ids)
WHERE t.id = $1
GROUP BY t.stream, t.message_ids;

-- memory_stream_paused --
-- description: whether memory writing is paused for a stream ($1 stream)
SELECT EXISTS (SELECT 1 FROM memory_paused_streams WHERE stream = $1);

-- memory_pause_stream --
-- description: pause memory writing for a stream ($1 stream, $2 actor); returns the stream when newly paused
INSERT INTO memory_paused_streams (stream, paused_by) VALUES ($1, $2)
ON CONFLICT (stream) DO NOTHING
RETURNING stream;

-- memory_resume_stream --
-- description: resume memory writing for a stream ($1 stream); returns the stream when it was paused
DELETE FROM memory_paused_streams WHERE stream = $1 RETURNING stream;

-- memory_add_tombstone --
-- description: remember that something was forgotten ($1 kind memory|turn|viewer, $2 target, $3 until_ts or NULL)
INSERT INTO memory_tombstones (kind, target, until_ts) VALUES ($1, $2, $3)
ON CONFLICT (kind, target) DO UPDATE
SET until_ts = greatest(memory_tombstones.until_ts, EXCLUDED.until_ts);

-- memory_viewer_lock --
-- description: wait for and take a viewer's session-level advisory lock ($1 lock key bigint)
SELECT pg_advisory_lock($1::bigint);

-- memory_viewer_unlock --
-- description: release a viewer's session-level advisory lock ($1 lock key bigint)
SELECT pg_advisory_unlock($1::bigint);

-- memory_tombstones_for_turn --
-- description: tombstones that concern a turn ($1 turn ids: the turn's and those of the messages before it, $2 memory ids, $3 user ids)
SELECT kind, target, until_ts FROM memory_tombstones
WHERE (kind = 'turn' AND target = ANY($1::text[]))
   OR (kind = 'memory' AND target = ANY($2::text[]))
   OR (kind = 'viewer' AND target = ANY($3::text[]));

-- memory_audit_insert --
-- description: record a memory change ($1 actor, $2 action, $3 target, $4 details jsonb)
INSERT INTO memory_audit (actor, action, target, details) VALUES ($1, $2, $3, $4)
RETURNING id, at;

-- memory_audit_list --
-- description: the newest audit rows ($1 limit)
SELECT id, actor, action, target, details, at FROM memory_audit ORDER BY id DESC LIMIT $1;

-- memory_viewer_by_login --
-- description: a viewer by normalized login, most recently seen first ($1 login)
SELECT user_id, login, display_name FROM viewers WHERE login = $1
ORDER BY last_seen DESC LIMIT 1;

-- memory_viewers_by_login --
-- description: every viewer whose normalized login is $1, most recently seen first, with the login as last seen in chat ($1 login)
SELECT v.user_id, v.login, v.display_name, v.last_seen,
       (SELECT m.login FROM messages m WHERE m.user_id = v.user_id ORDER BY m.seq DESC LIMIT 1)
           AS seen_as
FROM viewers v WHERE v.login = $1
ORDER BY v.last_seen DESC, v.user_id;

-- memory_viewer_by_id --
-- description: a viewer by user id ($1 user_id)
SELECT user_id, login, display_name FROM viewers WHERE user_id = $1;

-- memory_viewer_streams --
-- description: the streams a viewer wrote in ($1 user_id)
SELECT DISTINCT stream FROM messages WHERE user_id = $1 ORDER BY stream;

-- memory_viewer_forget_until --
-- description: the time up to which a forgotten viewer's messages stay out of memory: now, or their newest message's chat time when later ($1 user_id)
SELECT greatest(now(), (SELECT max(ts) FROM messages WHERE user_id = $1));

-- memory_bot_replies --
-- description: the bot's replies that chat messages answer in a reply thread ($1 Twitch message ids of the bot's delivered messages): each id and the text of its turn's reply, unless that turn was forgotten
SELECT d.twitch_message_id AS id, o.reply FROM turn_deliveries d
JOIN turn_outcomes o ON o.turn_id = d.turn_id
WHERE d.twitch_message_id = ANY($1::text[]) AND o.reply IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM memory_tombstones f WHERE f.kind = 'turn' AND f.target = d.turn_id);

-- memory_bot_questions --
-- description: the bot's replies delivered to chat in the stream's three turns before turn $2 ($1 stream), but a forgotten turn's, newest first: the Twitch id of each one's last part, its text, the first chat message received after it in the stream (next_id) and the first of each viewer of $3 (firsts): received after its delivery (both on Postgres' clock), of a chat time from five minutes before it on (Twitch's clock; the bound lets the index start near): a message outside a reply thread may answer the bot's reply just before it, or one that named its author
WITH recent AS (
    SELECT t.id, t.seq FROM turns t
    WHERE t.stream = $1 AND t.seq < (SELECT seq FROM turns WHERE id = $2)
    ORDER BY t.seq DESC LIMIT 3
), replies AS (
    SELECT r.seq, o.reply, d.id, d.at
    FROM recent r
    JOIN turn_outcomes o ON o.turn_id = r.id AND o.reply IS NOT NULL
        AND NOT EXISTS (
            SELECT 1 FROM memory_tombstones f WHERE f.kind = 'turn' AND f.target = r.id
        )
    JOIN LATERAL (
        SELECT (array_agg(twitch_message_id ORDER BY part DESC, id DESC))[1] AS id, min(at) AS at
        FROM turn_deliveries
        WHERE turn_id = r.id AND status = 'sent' AND twitch_message_id IS NOT NULL
    ) d ON d.id IS NOT NULL
)
SELECT p.id, p.reply,
       (SELECT m.id FROM messages_visible m
        WHERE m.stream = $1 AND m.kind = 'message' AND m.received_at > p.at
          AND m.ts > p.at - interval '5 minutes'
        ORDER BY m.ts, m.seq LIMIT 1) AS next_id,
       ARRAY(SELECT f.id FROM unnest($3::text[]) AS a (user_id)
             CROSS JOIN LATERAL (
                 SELECT m.id FROM messages_visible m
                 WHERE m.stream = $1 AND m.user_id = a.user_id AND m.kind = 'message'
                   AND m.received_at > p.at AND m.ts > p.at - interval '5 minutes'
                 ORDER BY m.ts, m.seq LIMIT 1) f) AS firsts
FROM replies p ORDER BY p.seq DESC;
