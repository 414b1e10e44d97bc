-- Structured channel state (the canonical record, changed by model tools and chat commands), the
-- transcript of tool calls, the ingestion barrier of each turn, and the summaries of the
-- summarizing reducer.
--
-- State is per channel: the stream's `streams.channel`, or the stream id itself when no channel is
-- known (`memory.state.channel_of`). Viewers are user ids (stable across renames). Every state row
-- carries the time and the turn that created and last changed it (`*_turn` is NULL for changes made
-- outside a turn, e.g. by a chat command). Relationships are removed softly (`removed_at`), so the
-- record of what was true stays.

CREATE TYPE state_request_status AS ENUM ('open', 'completed', 'cancelled');

CREATE TABLE state_requests (
    id            bigserial PRIMARY KEY,
    channel       text NOT NULL,
    -- the viewer who asked
    user_id       text NOT NULL,
    text          text NOT NULL,
    status        state_request_status NOT NULL DEFAULT 'open',
    created_at    timestamptz NOT NULL,
    created_turn  text,
    updated_at    timestamptz NOT NULL,
    updated_turn  text
);
CREATE INDEX state_requests_channel ON state_requests (channel, status, id);
CREATE INDEX state_requests_user ON state_requests (channel, user_id);

-- One current relationship per pair of viewers (stored with user_a < user_b); setting it again
-- changes its kind. `since` is free text as chat says it ("2019", "last stream").
CREATE TABLE state_relationships (
    id            bigserial PRIMARY KEY,
    channel       text NOT NULL,
    user_a        text NOT NULL,
    user_b        text NOT NULL,
    kind          text NOT NULL,
    since         text,
    created_at    timestamptz NOT NULL,
    created_turn  text,
    updated_at    timestamptz NOT NULL,
    updated_turn  text,
    removed_at    timestamptz,
    removed_turn  text,
    CHECK (user_a < user_b)
);
CREATE UNIQUE INDEX state_relationships_current ON state_relationships (channel, user_a, user_b)
    WHERE removed_at IS NULL;
CREATE INDEX state_relationships_a ON state_relationships (channel, user_a);
CREATE INDEX state_relationships_b ON state_relationships (channel, user_b);

-- Notes, about a viewer or the channel (user_id NULL); an expired note is never served.
CREATE TABLE state_notes (
    id            bigserial PRIMARY KEY,
    channel       text NOT NULL,
    user_id       text,
    text          text NOT NULL,
    expires_at    timestamptz,
    created_at    timestamptz NOT NULL,
    created_turn  text
);
CREATE INDEX state_notes_channel ON state_notes (channel, id);

-- Inside jokes: who shares it, what it is, when it was first recorded. Recording the same joke
-- again (same normalized text) adds viewers and keeps the first time.
CREATE TABLE state_inside_jokes (
    id            bigserial PRIMARY KEY,
    channel       text NOT NULL,
    text          text NOT NULL,
    text_key      text NOT NULL,
    user_ids      text[] NOT NULL,
    first_at      timestamptz NOT NULL,
    created_turn  text,
    updated_at    timestamptz NOT NULL,
    updated_turn  text,
    UNIQUE (channel, text_key)
);
CREATE INDEX state_inside_jokes_users ON state_inside_jokes USING gin (user_ids);

-- The transcript of tool calls: one row per call the model made during a turn (bad and unknown
-- calls included), with the result the model got back. Append-only.
CREATE TABLE turn_tool_calls (
    turn_id    text NOT NULL REFERENCES turns (id),
    seq        integer NOT NULL,
    call_id    text NOT NULL,
    tool_name  text NOT NULL,
    arguments  jsonb NOT NULL,
    result     jsonb,
    error      text,
    at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (turn_id, seq)
);
CREATE TRIGGER turn_tool_calls_append_only BEFORE UPDATE OR DELETE ON turn_tool_calls
    FOR EACH ROW EXECUTE FUNCTION forbid_rewrite();

-- The ingestion barrier of a turn: the structured domains its tools changed and the viewers they
-- involve; consolidation keeps those viewers' messages of the turn (or the whole batch) out of
-- personal memory.
CREATE TABLE turn_barriers (
    turn_id      text PRIMARY KEY REFERENCES turns (id),
    domains      text[] NOT NULL,
    user_ids     text[] NOT NULL,
    whole_batch  boolean NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- Summaries of the summarizing reducer: the history of `stream` up to and including the item
-- `covers_key` (chat time `covers_ts`) folded into `text`. The newest row of a stream is current.
CREATE TABLE history_summaries (
    id          bigserial PRIMARY KEY,
    stream      text NOT NULL,
    covers_key  text NOT NULL,
    covers_ts   timestamptz NOT NULL,
    -- how many history items this summary folds in all (its predecessors' included)
    covers_count integer NOT NULL,
    text        text NOT NULL,
    model       text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX history_summaries_stream ON history_summaries (stream, id DESC);
