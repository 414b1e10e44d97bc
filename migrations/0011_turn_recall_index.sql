-- The dashboard shows, for each memory, the turns whose recall carried it: a lookup by memory id
-- inside every turn report's recall list (`report -> 'recall' @> '[{"memory_id": …}]'`), an index
-- scan instead of a scan of every report the channel ever journaled.

CREATE INDEX turn_outcomes_recall ON turn_outcomes USING gin ((report -> 'recall') jsonb_path_ops);
