-- The durable job queue (outbox) for consolidation, after procrastinate's shape: claim with
-- FOR UPDATE SKIP LOCKED, one job per (kind, dedupe key), pg_notify wake-up, worker heartbeats.

CREATE TYPE job_status AS ENUM ('todo', 'doing', 'succeeded', 'failed', 'cancelled');

CREATE TABLE workers (
    id              bigserial PRIMARY KEY,
    name            text NOT NULL,
    started_at      timestamptz NOT NULL DEFAULT now(),
    last_heartbeat  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE jobs (
    id            bigserial PRIMARY KEY,
    queue         text NOT NULL DEFAULT 'consolidation',
    kind          text NOT NULL,
    -- the turn id for consolidation jobs: enqueuing the same turn twice is a no-op
    dedupe_key    text NOT NULL,
    payload       jsonb NOT NULL,
    status        job_status NOT NULL DEFAULT 'todo',
    attempts      integer NOT NULL DEFAULT 0,
    max_attempts  integer NOT NULL DEFAULT 5,
    scheduled_at  timestamptz NOT NULL DEFAULT now(),
    worker_id     bigint REFERENCES workers (id) ON DELETE SET NULL,
    started_at    timestamptz,
    finished_at   timestamptz,
    last_error    text,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX jobs_kind_dedupe_key ON jobs (kind, dedupe_key);
CREATE INDEX jobs_todo ON jobs (queue, scheduled_at, id) WHERE status = 'todo';
CREATE INDEX jobs_doing ON jobs (worker_id) WHERE status = 'doing';

CREATE FUNCTION notify_job_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('livememory_jobs', NEW.queue);
    RETURN NEW;
END;
$$;

CREATE TRIGGER jobs_notify AFTER INSERT ON jobs
    FOR EACH ROW EXECUTE FUNCTION notify_job_inserted();
