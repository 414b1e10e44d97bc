-- erasure_viewer --
-- description: forget a viewer everywhere in Postgres, audited in erasures (migration 0010) ($1 user_id, $2 actor, $3 reason, $4 history cap: later previews erased up to that many messages after theirs, NULL: all); returns counts, streams and turn_ids (jsonb)
SELECT erase_viewer($1, $2, $3, $4);

-- erasure_before --
-- description: erase every text older than a chat time, audited in erasures ($1 cutoff, $2 actor); returns counts (jsonb)
SELECT erase_before($1, $2);

-- erasure_viewer_texts --
-- description: the distinct texts of a viewer's messages not yet erased ($1 user_id)
SELECT DISTINCT text FROM messages WHERE user_id = $1 AND text <> '[erased]';

-- erasure_list --
-- description: the newest erasures ($1 limit)
SELECT id, actor, scope, user_id, cutoff, reason, counts, at FROM erasures ORDER BY id DESC LIMIT $1;

-- erasure_profiles_before --
-- description: retention: delete the profile facts stated before a chat time ($1 cutoff); returns their user ids
DELETE FROM viewer_profiles WHERE stated_at < $1 RETURNING user_id;

-- erasure_state_about --
-- description: the channel-state rows about a viewer, for export ($1 user_id): one row per state row with its table and the row as jsonb
SELECT 'notes' AS kind, to_jsonb(n) AS row FROM state_notes n WHERE n.user_id = $1
UNION ALL
SELECT 'requests', to_jsonb(r) FROM state_requests r WHERE r.user_id = $1
UNION ALL
SELECT 'relationships', to_jsonb(r) FROM state_relationships r WHERE $1 IN (r.user_a, r.user_b)
UNION ALL
SELECT 'inside_jokes', to_jsonb(j) FROM state_inside_jokes j WHERE $1 = ANY(j.user_ids);

-- retention_schedule --
-- description: schedule a job at a time unless one with that kind and dedupe key exists ($1 kind, $2 dedupe_key, $3 payload jsonb text, $4 max_attempts, $5 scheduled_at); returns the id when new
INSERT INTO jobs (kind, dedupe_key, payload, max_attempts, scheduled_at)
VALUES ($1, $2, $3::jsonb, $4, $5)
ON CONFLICT (kind, dedupe_key) DO NOTHING
RETURNING id;

-- erasure_answered --
-- description: the messages that came right after one of viewer $1's in its stream, by someone else (a memory of theirs may be indexed with the terms of the viewer's question: lexical.context_terms); returns each one's author and the viewer's message id
SELECT n.user_id, m.id AS question_id
FROM messages m
CROSS JOIN LATERAL (
    SELECT user_id FROM messages n
    WHERE n.stream = m.stream AND n.kind = 'message' AND (n.ts, n.seq) > (m.ts, m.seq)
    ORDER BY n.ts, n.seq
    LIMIT 1
) n
WHERE m.user_id = $1 AND m.kind = 'message' AND n.user_id <> $1;
