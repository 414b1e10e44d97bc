-- Memory administration (issue 3): viewer profiles, paused streams, transcript redactions,
-- tombstones (what was forgotten must not come back on re-consolidation) and the audit trail.

-- A short profile per viewer: at most one fact per slot (location, job, pet:cat, …); a newer
-- statement replaces an older one of the same slot. ``note:<memory id>`` slots hold a few recent
-- durable statements that fit no slot.
CREATE TABLE viewer_profiles (
    user_id             text NOT NULL,
    slot                text NOT NULL,
    -- the extracted value ("Turin") and the statement it came from ("I moved to Turin")
    value               text NOT NULL,
    statement           text NOT NULL,
    memory_id           text,
    turn_id             text,
    stream              text,
    origin_message_ids  text[] NOT NULL DEFAULT '{}',
    -- chat time of the statement: decides which of two conflicting facts is newer
    stated_at           timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, slot)
);
CREATE INDEX viewer_profiles_memory ON viewer_profiles (memory_id);
CREATE INDEX viewer_profiles_turn ON viewer_profiles (turn_id);

-- Streams whose memory writing is paused (!pause / memory.admin pause).
CREATE TABLE memory_paused_streams (
    stream     text PRIMARY KEY,
    paused_by  text NOT NULL,
    paused_at  timestamptz NOT NULL DEFAULT now()
);

-- The transcript is append-only; a viewer's "forget everywhere" records a redaction per message.
-- Every read that serves message text must honor it (join, or read the view below).
CREATE TABLE message_redactions (
    message_id   text PRIMARY KEY,
    user_id      text NOT NULL,
    actor        text NOT NULL,
    reason       text NOT NULL DEFAULT 'forget',
    redacted_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX message_redactions_user ON message_redactions (user_id);

-- The messages as they may be served: redacted text replaced by a placeholder.
CREATE VIEW messages_visible AS
SELECT m.id, m.seq, m.stream, m.user_id, m.login, m.display_name, m.badges,
       CASE WHEN r.message_id IS NULL THEN m.text ELSE '[redacted]' END AS text,
       m.ts, m.kind, m.event, m.reply_to, m.received_at,
       (r.message_id IS NOT NULL) AS redacted
FROM messages m LEFT JOIN message_redactions r ON r.message_id = m.id;

-- What was forgotten, so a retried or replayed consolidation does not bring it back.
-- kind 'memory' (target = memory id), 'turn' (target = turn id), 'viewer' (target = user id:
-- that viewer's messages up to ``until_ts`` are not ingested again).
CREATE TABLE memory_tombstones (
    kind        text NOT NULL CHECK (kind IN ('memory', 'turn', 'viewer')),
    target      text NOT NULL,
    until_ts    timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, target)
);

-- Who changed what in memory, and when.
CREATE TABLE memory_audit (
    id       bigserial PRIMARY KEY,
    actor    text NOT NULL,
    action   text NOT NULL,
    target   text NOT NULL,
    details  jsonb NOT NULL DEFAULT '{}',
    at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX memory_audit_target ON memory_audit (target, at);
