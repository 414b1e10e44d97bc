-- Reply policy (issue 10): a turn that chose not to reply ends 'silent' with its reason, the
-- quiet switch of a channel (!quiet / !unquiet; a row = quiet), and a lookup of the bot's own chat
-- messages (a reply thread to one of them addresses the bot).

ALTER TYPE turn_status ADD VALUE IF NOT EXISTS 'silent';

-- why the turn ended as it did (for 'silent': not_addressed, viewer_cooldown, quiet, ...)
ALTER TABLE turn_outcomes ADD COLUMN reason text;

CREATE TABLE reply_quiet (
    -- the stream's channel (streams.channel), or the stream id when no channel is known
    channel   text PRIMARY KEY,
    quiet_by  text NOT NULL,
    quiet_at  timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX turn_deliveries_message ON turn_deliveries (twitch_message_id)
    WHERE twitch_message_id IS NOT NULL;
