-- Which turn answered a message, by message id (issue 15). The answered-message check runs for
-- every incoming message and the history rebuild for every stored message; both used to unnest the
-- ``message_ids`` of every turn (a sequential scan growing with the channel's whole life). One row
-- per (message, turn), written by a trigger when a turn opens, read through its primary key.

CREATE TABLE turn_messages (
    message_id  text NOT NULL,
    turn_id     text NOT NULL REFERENCES turns (id),
    PRIMARY KEY (message_id, turn_id)
);
CREATE INDEX turn_messages_turn ON turn_messages (turn_id);

INSERT INTO turn_messages (message_id, turn_id)
SELECT DISTINCT m.id, t.id FROM turns t, unnest(t.message_ids) AS m(id);

CREATE FUNCTION index_turn_messages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO turn_messages (message_id, turn_id)
    SELECT DISTINCT m.id, NEW.id FROM unnest(NEW.message_ids) AS m(id)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END;
$$;

CREATE TRIGGER turns_index_messages AFTER INSERT ON turns
    FOR EACH ROW EXECUTE FUNCTION index_turn_messages();

CREATE TRIGGER turn_messages_append_only BEFORE UPDATE OR DELETE ON turn_messages
    FOR EACH ROW EXECUTE FUNCTION forbid_rewrite();

-- Tools look viewers up by lower(login) (state_viewer_by_login): an index instead of a scan of
-- every viewer the channel ever had.
CREATE INDEX viewers_login_lower ON viewers (lower(login));
