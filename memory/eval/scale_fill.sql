-- python -m memory.eval bench --scale: stored turns :first to :last of stream 'filled' (a message
-- each, finished, consolidated), written in bulk: no per-row triggers, the turn index filled here.
SET session_replication_role = replica;
INSERT INTO streams (id) VALUES ('filled') ON CONFLICT DO NOTHING;
INSERT INTO messages (id, stream, user_id, login, text, ts)
SELECT 'f' || i, 'filled', 'u' || (i % 1000), 'viewer' || (i % 1000), 'message ' || i,
       timestamptz '2026-01-01' + i * interval '2 second'
FROM generate_series(:first, :last) AS i;
INSERT INTO turns (id, stream, message_ids)
SELECT 'ft' || i, 'filled', ARRAY['f' || i] FROM generate_series(:first, :last) AS i;
INSERT INTO turn_messages (message_id, turn_id)
SELECT 'f' || i, 'ft' || i FROM generate_series(:first, :last) AS i;
INSERT INTO turn_outcomes (turn_id, status, reply, ts)
SELECT 'ft' || i, 'completed', 'reply ' || i, timestamptz '2026-01-01' + (2 * i + 1) * interval '1 second'
FROM generate_series(:first, :last) AS i;
INSERT INTO jobs (kind, dedupe_key, payload, status)
SELECT 'consolidate_turn', 'ft' || i, '{}', 'succeeded' FROM generate_series(:first, :last) AS i;
RESET session_replication_role;
ANALYZE;
