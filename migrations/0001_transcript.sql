-- The transcript: streams, chat messages, turns and their outcomes. Append-only: rows are inserted,
-- never updated or deleted (a trigger refuses it); a turn's outcome is a row of its own.

CREATE TABLE streams (
    id          text PRIMARY KEY,
    channel     text,
    temporary   boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- The latest login and display name of each viewer, keyed by the stable platform user id.
-- (Identity, not transcript: a rename updates the row, memory stays keyed by the user id.)
CREATE TABLE viewers (
    user_id       text PRIMARY KEY,
    login         text NOT NULL,
    display_name  text,
    first_seen    timestamptz NOT NULL DEFAULT now(),
    last_seen     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX viewers_login ON viewers (login);

CREATE TYPE message_kind AS ENUM ('message', 'event', 'command');

CREATE TABLE messages (
    id            text PRIMARY KEY,
    seq           bigserial NOT NULL,
    stream        text NOT NULL REFERENCES streams (id),
    user_id       text NOT NULL,
    login         text NOT NULL,
    display_name  text,
    badges        text[] NOT NULL DEFAULT '{}',
    text          text NOT NULL,
    ts            timestamptz NOT NULL,
    kind          message_kind NOT NULL DEFAULT 'message',
    event         text,
    reply_to      text,
    received_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX messages_stream_ts ON messages (stream, ts, seq);
CREATE INDEX messages_user ON messages (user_id);

CREATE TABLE turns (
    id           text PRIMARY KEY,
    seq          bigserial NOT NULL,
    stream       text NOT NULL REFERENCES streams (id),
    message_ids  text[] NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX turns_stream ON turns (stream, seq);
CREATE INDEX turns_message_ids ON turns USING gin (message_ids);

CREATE TYPE turn_status AS ENUM ('pending', 'completed', 'failed');

-- One row when a turn ends; a turn without one is pending.
CREATE TABLE turn_outcomes (
    turn_id      text PRIMARY KEY REFERENCES turns (id),
    status       turn_status NOT NULL CHECK (status <> 'pending'),
    reply        text,
    error        text,
    -- chat time of the reply (orders it after the turn's messages in the history)
    ts           timestamptz NOT NULL,
    timings      jsonb NOT NULL DEFAULT '{}',
    report       jsonb,
    finished_at  timestamptz NOT NULL DEFAULT now()
);

CREATE VIEW turns_with_status AS
SELECT t.id, t.seq, t.stream, t.message_ids, t.created_at,
       coalesce(o.status, 'pending') AS status, o.reply, o.error, o.ts AS reply_ts, o.timings,
       o.report, o.finished_at
FROM turns t LEFT JOIN turn_outcomes o ON o.turn_id = t.id;

CREATE FUNCTION forbid_rewrite() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the transcript is append-only: % on % refused', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE TRIGGER messages_append_only BEFORE UPDATE OR DELETE ON messages
    FOR EACH ROW EXECUTE FUNCTION forbid_rewrite();
CREATE TRIGGER turns_append_only BEFORE UPDATE OR DELETE ON turns
    FOR EACH ROW EXECUTE FUNCTION forbid_rewrite();
CREATE TRIGGER turn_outcomes_append_only BEFORE UPDATE OR DELETE ON turn_outcomes
    FOR EACH ROW EXECUTE FUNCTION forbid_rewrite();
