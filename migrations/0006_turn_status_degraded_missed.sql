-- Every turn ends (issue 11): a turn that answered without a part (the working history fell back
-- to the transcript) is 'degraded'; chat that waited in the ingest spool longer than its max age is
-- stored and journaled as a 'missed' turn (consolidated, never answered).
ALTER TYPE turn_status ADD VALUE IF NOT EXISTS 'degraded';
ALTER TYPE turn_status ADD VALUE IF NOT EXISTS 'missed';
