-- Erasure (issue 10): the one rewrite the append-only transcript allows. Forgetting a viewer
-- everywhere (`erase_viewer`) and retention (`erase_before`) replace texts with the placeholder
-- '[erased]'; nothing else of a transcript row may change, nothing is deleted. The append-only
-- trigger admits such an update only while one of these functions runs: each sets the flag
-- `livememory.erasing` for its own duration (a function SET clause: restored when it returns).
-- Every erasure writes an `erasures` row: who, when, what scope, how many rows — never the text.

CREATE TABLE erasures (
    id       bigserial PRIMARY KEY,
    actor    text NOT NULL,
    -- 'viewer': one viewer's words everywhere; 'retention': every text older than `cutoff`
    scope    text NOT NULL CHECK (scope IN ('viewer', 'retention')),
    user_id  text,
    cutoff   timestamptz,
    reason   text NOT NULL,
    counts   jsonb NOT NULL DEFAULT '{}',
    at       timestamptz NOT NULL DEFAULT now(),
    CHECK ((scope = 'viewer') = (user_id IS NOT NULL)),
    CHECK ((scope = 'retention') = (cutoff IS NOT NULL))
);
CREATE INDEX erasures_user ON erasures (user_id, at);

-- retention reads messages by chat time across streams
CREATE INDEX messages_ts ON messages (ts);

-- The columns an erasure may rewrite, per append-only table (NULL: none).
CREATE FUNCTION erasable_columns(tab text) RETURNS text[] LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE tab
        WHEN 'messages' THEN ARRAY['text']
        WHEN 'turn_outcomes' THEN ARRAY['reply', 'report']
        WHEN 'turn_tool_calls' THEN ARRAY['arguments', 'result']
    END;
$$;

CREATE OR REPLACE FUNCTION forbid_rewrite() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    erasable text[] := erasable_columns(TG_TABLE_NAME);
BEGIN
    IF TG_OP = 'UPDATE' AND erasable IS NOT NULL
       AND current_setting('livememory.erasing', true) = 'on'
       AND (to_jsonb(NEW) - erasable) = (to_jsonb(OLD) - erasable)
       AND (TG_TABLE_NAME <> 'messages' OR to_jsonb(NEW) ->> 'text' = '[erased]') THEN
        RETURN NEW;  -- an erasure: only the texts change, a message's to the placeholder
    END IF;
    RAISE EXCEPTION 'the transcript is append-only: % on % refused', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'restrict_violation';
END;
$$;

-- Whether a JSON value names a viewer: their login as a word, or their user id as a string.
CREATE FUNCTION json_mentions(value jsonb, login text, user_id text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT value IS NOT NULL AND (
        (login IS NOT NULL AND login <> '' AND value::text ~* (
            '\m' || regexp_replace(login, '([^[:alnum:]_])', '\\\1', 'g') || '\M'))
        OR (user_id IS NOT NULL AND strpos(value::text, '"' || user_id || '"') > 0)
    );
$$;

-- A turn report with a viewer's words erased: the prompt preview always; recall items of the
-- viewer (their login or user id, or made from their messages `ids`), or every recall item when
-- `everything`; with `whole` (the turn answered them, or recalled them) the reply, the planned
-- queries and every tool call too; else the tool calls that name the viewer.
CREATE FUNCTION erased_report(
    report jsonb, login text, user_id text, ids text[], whole boolean, everything boolean
) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN report IS NULL OR jsonb_typeof(report) <> 'object' THEN report ELSE
        report
        || CASE WHEN jsonb_typeof(report -> 'prompt') = 'object'
                 AND coalesce(report -> 'prompt' ->> 'preview', '') NOT IN ('', '[erased]')
            THEN jsonb_build_object('prompt', (report -> 'prompt') || '{"preview": "[erased]"}')
            ELSE '{}'::jsonb END
        || CASE WHEN jsonb_typeof(report -> 'recall') = 'array' THEN jsonb_build_object('recall', (
                SELECT coalesce(jsonb_agg(
                    CASE WHEN everything OR r.item ->> 'viewer' IN (login, user_id)
                              OR coalesce((r.item -> 'origin_message_ids') ?| ids, false)
                         THEN r.item || '{"text": "[erased]"}' ELSE r.item END
                    ORDER BY r.ord), '[]')
                FROM jsonb_array_elements(report -> 'recall') WITH ORDINALITY AS r(item, ord)))
            ELSE '{}'::jsonb END
        || CASE WHEN whole AND jsonb_typeof(report -> 'reply') = 'string'
            THEN '{"reply": "[erased]"}'::jsonb ELSE '{}'::jsonb END
        || CASE WHEN whole AND jsonb_typeof(report -> 'plan' -> 'sources') = 'array'
            THEN jsonb_build_object('plan', (report -> 'plan') || jsonb_build_object('sources', (
                SELECT coalesce(jsonb_agg(
                    CASE WHEN jsonb_typeof(s.item -> 'query') = 'string'
                         THEN s.item || '{"query": "[erased]"}' ELSE s.item END
                    ORDER BY s.ord), '[]')
                FROM jsonb_array_elements(report -> 'plan' -> 'sources')
                    WITH ORDINALITY AS s(item, ord))))
            ELSE '{}'::jsonb END
        || CASE WHEN jsonb_typeof(report -> 'tools') = 'array' THEN jsonb_build_object('tools', (
                SELECT coalesce(jsonb_agg(
                    CASE WHEN whole OR json_mentions(t.item, login, user_id)
                         THEN t.item || '{"arguments": {"erased": true}}'
                              || CASE WHEN t.item -> 'result' IS NULL
                                        OR jsonb_typeof(t.item -> 'result') = 'null'
                                      THEN '{}'::jsonb ELSE '{"result": {"erased": true}}'::jsonb END
                         ELSE t.item END
                    ORDER BY t.ord), '[]')
                FROM jsonb_array_elements(report -> 'tools') WITH ORDINALITY AS t(item, ord)))
            ELSE '{}'::jsonb END
    END;
$$;

-- Forget a viewer everywhere in Postgres: their message texts, the replies and reports of the
-- turns that answered or recalled them, the prompt previews of the later turns whose working
-- history could still hold their messages (until `p_history_cap` more messages of the stream came;
-- NULL: every later turn, for a summarizing reducer whose summary may carry them on), the tool
-- calls of those turns or naming them, the channel-state rows about them, their profile and the
-- history summaries that may quote them. Returns the counts plus the touched `streams` and
-- `turns` (for the caller's working history); the `erasures` row keeps the counts only.
CREATE FUNCTION erase_viewer(
    p_user_id text, p_actor text, p_reason text, p_history_cap integer
) RETURNS jsonb
LANGUAGE plpgsql
SET livememory.erasing = 'on'
AS $$
DECLARE
    v_login    text;
    v_ids      text[];
    v_streams  text[];
    v_turns    text[];
    v_counts   jsonb;
    n_messages integer;
    n_answered integer;
    n_previews integer;
    n_tools    integer;
    n_state    integer := 0;
    n_profile  integer;
    n_summary  integer;
    n          integer;
BEGIN
    SELECT login INTO v_login FROM viewers WHERE user_id = p_user_id;
    SELECT coalesce(array_agg(id), '{}'), coalesce(array_agg(DISTINCT stream), '{}')
    INTO v_ids, v_streams
    FROM messages WHERE user_id = p_user_id;

    -- the turns that answered the viewer's messages, or recalled their words (in any stream)
    SELECT coalesce(array_agg(DISTINCT found.turn_id), '{}') INTO v_turns FROM (
        SELECT tm.turn_id FROM turn_messages tm WHERE tm.message_id = ANY(v_ids)
        UNION
        SELECT o.turn_id FROM turn_outcomes o
        WHERE jsonb_typeof(o.report -> 'recall') = 'array'
          AND EXISTS (
              SELECT 1 FROM jsonb_array_elements(o.report -> 'recall') AS r(item)
              WHERE r.item ->> 'viewer' IN (v_login, p_user_id)
                 OR coalesce((r.item -> 'origin_message_ids') ?| v_ids, false))
    ) AS found;

    UPDATE messages SET text = '[erased]' WHERE user_id = p_user_id AND text <> '[erased]';
    GET DIAGNOSTICS n_messages = ROW_COUNT;
    INSERT INTO message_redactions (message_id, user_id, actor, reason)
    SELECT id, user_id, p_actor, p_reason FROM messages WHERE user_id = p_user_id
    ON CONFLICT (message_id) DO NOTHING;

    UPDATE turn_outcomes o
    SET reply = CASE WHEN o.reply IS NULL THEN NULL ELSE '[erased]' END,
        report = erased_report(o.report, v_login, p_user_id, v_ids, true, false)
    WHERE o.turn_id = ANY(v_turns)
      AND (o.reply IS DISTINCT FROM CASE WHEN o.reply IS NULL THEN NULL ELSE '[erased]' END
           OR o.report IS DISTINCT FROM erased_report(o.report, v_login, p_user_id, v_ids, true, false));
    GET DIAGNOSTICS n_answered = ROW_COUNT;

    -- later turns of their streams whose prompt (working history) may show their messages: from
    -- each message until `p_history_cap` messages of the stream came after it
    UPDATE turn_outcomes o
    SET report = erased_report(o.report, v_login, p_user_id, v_ids, false, false)
    FROM turns t, (
        SELECT win.stream,
               range_agg(tstzrange(win.since, CASE WHEN win.until IS NOT NULL
                                                   THEN greatest(win.since, win.until) END, '[]'))
                   AS span
        FROM (
            SELECT m.stream, m.received_at AS since,
                   CASE WHEN p_history_cap IS NOT NULL THEN (
                       SELECT later.received_at FROM messages later
                       WHERE later.stream = m.stream AND later.kind <> 'command'
                         AND (later.ts, later.seq) > (m.ts, m.seq)
                       ORDER BY later.ts, later.seq OFFSET p_history_cap - 1 LIMIT 1) END AS until
            FROM messages m WHERE m.user_id = p_user_id
        ) AS win
        GROUP BY win.stream
    ) AS w
    WHERE t.id = o.turn_id AND t.stream = w.stream AND t.created_at <@ w.span
      AND o.turn_id <> ALL(v_turns)
      AND o.report IS DISTINCT FROM erased_report(o.report, v_login, p_user_id, v_ids, false, false);
    GET DIAGNOSTICS n_previews = ROW_COUNT;

    UPDATE turn_tool_calls c
    SET arguments = '{"erased": true}',
        result = CASE WHEN c.result IS NULL THEN NULL ELSE '{"erased": true}'::jsonb END
    WHERE c.arguments <> '{"erased": true}'::jsonb
      AND (c.turn_id = ANY(v_turns) OR json_mentions(c.arguments, v_login, p_user_id)
           OR json_mentions(c.result, v_login, p_user_id));
    GET DIAGNOSTICS n_tools = ROW_COUNT;

    DELETE FROM state_notes WHERE user_id = p_user_id;
    GET DIAGNOSTICS n = ROW_COUNT; n_state := n_state + n;
    DELETE FROM state_requests WHERE user_id = p_user_id;
    GET DIAGNOSTICS n = ROW_COUNT; n_state := n_state + n;
    DELETE FROM state_relationships WHERE p_user_id IN (user_a, user_b);
    GET DIAGNOSTICS n = ROW_COUNT; n_state := n_state + n;
    DELETE FROM state_inside_jokes WHERE p_user_id = ANY(user_ids);
    GET DIAGNOSTICS n = ROW_COUNT; n_state := n_state + n;

    DELETE FROM viewer_profiles WHERE user_id = p_user_id;
    GET DIAGNOSTICS n_profile = ROW_COUNT;
    -- summaries of their streams, and of the streams whose turns recalled them, may quote them
    DELETE FROM history_summaries h
    WHERE h.stream = ANY(v_streams)
       OR h.stream IN (SELECT t.stream FROM turns t WHERE t.id = ANY(v_turns));
    GET DIAGNOSTICS n_summary = ROW_COUNT;

    v_counts := jsonb_build_object(
        'messages', n_messages, 'turns', n_answered, 'previews', n_previews,
        'tool_calls', n_tools, 'state_rows', n_state, 'profile_facts', n_profile,
        'summaries', n_summary);
    INSERT INTO erasures (actor, scope, user_id, reason, counts)
    VALUES (p_actor, 'viewer', p_user_id, p_reason, v_counts);
    RETURN v_counts || jsonb_build_object(
        'streams', (SELECT coalesce(jsonb_agg(DISTINCT s), '[]') FROM (
            SELECT unnest(v_streams) AS s
            UNION SELECT t.stream FROM turns t WHERE t.id = ANY(v_turns)) AS touched),
        'turn_ids', to_jsonb(v_turns));
END;
$$;

-- Retention: every text older than `p_cutoff` (chat time) erased — message texts, the replies and
-- reports of the turns that ended before it, their tool calls, the history summaries folding it.
CREATE FUNCTION erase_before(p_cutoff timestamptz, p_actor text) RETURNS jsonb
LANGUAGE plpgsql
SET livememory.erasing = 'on'
AS $$
DECLARE
    v_counts   jsonb;
    v_streams  text[];
    n_messages integer;
    n_turns    integer;
    n_tools    integer;
    n_summary  integer;
BEGIN
    WITH erased AS (
        UPDATE messages SET text = '[erased]' WHERE ts < p_cutoff AND text <> '[erased]'
        RETURNING stream
    )
    SELECT count(*), coalesce(array_agg(DISTINCT stream), '{}') INTO n_messages, v_streams
    FROM erased;

    UPDATE turn_outcomes o
    SET reply = CASE WHEN o.reply IS NULL THEN NULL ELSE '[erased]' END,
        report = erased_report(o.report, NULL, NULL, '{}', true, true)
    WHERE o.ts < p_cutoff
      AND (o.reply IS DISTINCT FROM CASE WHEN o.reply IS NULL THEN NULL ELSE '[erased]' END
           OR o.report IS DISTINCT FROM erased_report(o.report, NULL, NULL, '{}', true, true));
    GET DIAGNOSTICS n_turns = ROW_COUNT;

    UPDATE turn_tool_calls c
    SET arguments = '{"erased": true}',
        result = CASE WHEN c.result IS NULL THEN NULL ELSE '{"erased": true}'::jsonb END
    FROM turn_outcomes o
    WHERE o.turn_id = c.turn_id AND o.ts < p_cutoff AND c.arguments <> '{"erased": true}'::jsonb;
    GET DIAGNOSTICS n_tools = ROW_COUNT;

    -- a summary folds its stream's history from the start: those of streams with erased texts go
    DELETE FROM history_summaries WHERE stream = ANY(v_streams);
    GET DIAGNOSTICS n_summary = ROW_COUNT;

    v_counts := jsonb_build_object(
        'messages', n_messages, 'turns', n_turns, 'tool_calls', n_tools, 'summaries', n_summary);
    INSERT INTO erasures (actor, scope, cutoff, reason, counts)
    VALUES (p_actor, 'retention', p_cutoff, 'retention', v_counts);
    RETURN v_counts;
END;
$$;

-- the record of erasures is append-only too
CREATE TRIGGER erasures_append_only BEFORE UPDATE OR DELETE ON erasures
    FOR EACH ROW EXECUTE FUNCTION forbid_rewrite();
