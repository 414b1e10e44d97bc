-- twitch_token_save --
-- Store (or replace) a user's token pair: $1 user_id, $2 token, $3 refresh
INSERT INTO twitch_tokens (user_id, token, refresh)
VALUES ($1, $2, $3)
ON CONFLICT (user_id) DO UPDATE
SET token = EXCLUDED.token, refresh = EXCLUDED.refresh, updated_at = now();

-- twitch_tokens_all --
-- Every stored token pair, newest first (no parameters)
SELECT user_id, token, refresh, updated_at FROM twitch_tokens ORDER BY updated_at DESC;

-- twitch_token_delete --
-- Forget a user's token pair: $1 user_id
DELETE FROM twitch_tokens WHERE user_id = $1;

-- twitch_delivery_record --
-- Record the delivery of one reply part: $1 turn_id, $2 part, $3 channel, $4 twitch_message_id, $5 status, $6 attempts, $7 error
INSERT INTO turn_deliveries (turn_id, part, channel, twitch_message_id, status, attempts, error)
VALUES ($1, $2, $3, $4, $5, $6, $7);

-- twitch_deliveries_of_turn --
-- The deliveries of a turn in part order: $1 turn_id
SELECT turn_id, part, channel, twitch_message_id, status::text AS status, attempts, error, at
FROM turn_deliveries WHERE turn_id = $1 ORDER BY part, id;
