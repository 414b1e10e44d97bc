-- reply_is_quiet --
-- description: whether the channel of a stream is quiet ($1 stream)
SELECT EXISTS (
    SELECT 1 FROM reply_quiet
    WHERE channel = coalesce((SELECT channel FROM streams WHERE id = $1), $1)
);

-- reply_quiet_on --
-- description: make the channel of a stream quiet ($1 stream, $2 actor); returns the channel when it changed
INSERT INTO reply_quiet (channel, quiet_by)
VALUES (coalesce((SELECT channel FROM streams WHERE id = $1), $1), $2)
ON CONFLICT (channel) DO NOTHING
RETURNING channel;

-- reply_quiet_off --
-- description: let the channel of a stream speak again ($1 stream); returns the channel when it changed
DELETE FROM reply_quiet
WHERE channel = coalesce((SELECT channel FROM streams WHERE id = $1), $1)
RETURNING channel;

-- reply_is_bot_message --
-- description: whether a chat message id is one of the bot's delivered replies ($1 message id)
SELECT EXISTS (SELECT 1 FROM turn_deliveries WHERE twitch_message_id = $1);
