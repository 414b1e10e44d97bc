-- Redaction at ingestion (issue 10): the kinds of secrets or personal data replaced in a message's
-- text before it was stored ([redacted:<kind>] placeholders; the original is never written).

ALTER TABLE messages ADD COLUMN redacted_kinds text[] NOT NULL DEFAULT '{}';
