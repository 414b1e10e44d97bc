-- Twitch: the bot's OAuth tokens (TwitchIO's token store, never a file) and the delivery of every
-- reply part to chat (append-only, like the transcript: a retried part is a row of its own).

CREATE TABLE twitch_tokens (
    user_id     text PRIMARY KEY,
    token       text NOT NULL,
    refresh     text NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TYPE delivery_status AS ENUM ('sent', 'dropped', 'failed');

-- turn_id is not a foreign key: a reply can be delivered by a process other than the one that
-- journalled its turn, and a delivery is never a reason to refuse a turn row.
CREATE TABLE turn_deliveries (
    id                 bigserial PRIMARY KEY,
    turn_id            text NOT NULL,
    part               integer NOT NULL CHECK (part >= 0),
    channel            text NOT NULL,
    twitch_message_id  text,
    status             delivery_status NOT NULL,
    attempts           integer NOT NULL DEFAULT 1,
    error              text,
    at                 timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX turn_deliveries_turn ON turn_deliveries (turn_id, part);

CREATE TRIGGER turn_deliveries_append_only BEFORE UPDATE OR DELETE ON turn_deliveries
    FOR EACH ROW EXECUTE FUNCTION forbid_rewrite();
