-- jobs_enqueue --
-- description: add a job unless one with that kind and dedupe key exists ($1 kind, $2 dedupe_key, $3 payload jsonb text, $4 max_attempts); returns the id when new
INSERT INTO jobs (kind, dedupe_key, payload, max_attempts) VALUES ($1, $2, $3::jsonb, $4)
ON CONFLICT (kind, dedupe_key) DO NOTHING
RETURNING id;

-- jobs_claim --
-- description: take the next runnable job of a queue ($1 worker id, $2 queue); the worker row must exist
UPDATE jobs
SET status = 'doing', attempts = attempts + 1, worker_id = $1, started_at = now()
WHERE id = (
    SELECT id FROM jobs
    WHERE status = 'todo' AND scheduled_at <= now() AND queue = $2
    ORDER BY scheduled_at, id
    FOR UPDATE SKIP LOCKED
    LIMIT 1
)
AND EXISTS (SELECT 1 FROM workers WHERE workers.id = $1)
RETURNING *;

-- jobs_succeed --
-- description: the job ran to completion ($1 job id, $2 worker id); no row when the job is no longer that worker's
UPDATE jobs SET status = 'succeeded', finished_at = now()
WHERE id = $1 AND worker_id = $2 AND status = 'doing'
RETURNING id;

-- jobs_retry --
-- description: put a job back to run later ($1 job id, $2 worker id, $3 delay seconds, $4 error)
UPDATE jobs
SET status = 'todo', scheduled_at = now() + make_interval(secs => $3), last_error = $4,
    worker_id = NULL
WHERE id = $1 AND worker_id = $2 AND status = 'doing'
RETURNING id;

-- jobs_fail --
-- description: the job failed for good ($1 job id, $2 worker id, $3 error)
UPDATE jobs SET status = 'failed', finished_at = now(), last_error = $3
WHERE id = $1 AND worker_id = $2 AND status = 'doing'
RETURNING id;

-- jobs_release --
-- description: give back a job interrupted by a worker stop, the attempt not counted ($1 job id, $2 worker id)
UPDATE jobs
SET status = 'todo', attempts = greatest(attempts - 1, 0), worker_id = NULL, scheduled_at = now()
WHERE id = $1 AND worker_id = $2 AND status = 'doing'
RETURNING id;

-- jobs_recover_stalled --
-- description: jobs of workers silent for longer than the lease (or gone) go back to todo, or fail when out of attempts ($1 lease seconds, $2 worker id of the caller, excluded)
UPDATE jobs
SET status = (CASE WHEN attempts >= max_attempts THEN 'failed' ELSE 'todo' END)::job_status,
    finished_at = (CASE WHEN attempts >= max_attempts THEN now() END),
    last_error = 'worker lost: no heartbeat for ' || $1::float8 || ' s (lease expired)',
    worker_id = NULL,
    scheduled_at = now()
WHERE status = 'doing'
  AND (worker_id IS NULL OR worker_id IN (
      SELECT id FROM workers
      WHERE last_heartbeat < now() - make_interval(secs => $1) AND id IS DISTINCT FROM $2
  ))
RETURNING id, status;

-- jobs_prune_workers --
-- description: forget workers silent for longer than the lease ($1 lease seconds, $2 worker id of the caller, kept)
DELETE FROM workers
WHERE last_heartbeat < now() - make_interval(secs => $1) AND id IS DISTINCT FROM $2
RETURNING id;

-- jobs_next_due --
-- description: seconds until the next todo job of a queue is runnable (negative: overdue), NULL when none ($1 queue)
SELECT extract(epoch FROM min(scheduled_at) - now())::float8
FROM jobs WHERE status = 'todo' AND queue = $1;

-- jobs_register_worker --
-- description: a worker starts ($1 name); returns its id
INSERT INTO workers (name) VALUES ($1) RETURNING id;

-- jobs_release_same_name --
-- description: a worker restarting under a name it had takes back, at once, the jobs its earlier incarnations still held (no wait for the lease): back to todo, or failed when out of attempts ($1 name, $2 the new worker id)
UPDATE jobs
SET status = (CASE WHEN attempts >= max_attempts THEN 'failed' ELSE 'todo' END)::job_status,
    finished_at = (CASE WHEN attempts >= max_attempts THEN now() END),
    last_error = 'worker restarted: the attempt was interrupted',
    worker_id = NULL,
    scheduled_at = now()
WHERE status = 'doing'
  AND worker_id IN (SELECT id FROM workers WHERE name = $1 AND id <> $2)
RETURNING id, status;

-- jobs_forget_same_name --
-- description: drop the rows of a worker's earlier incarnations ($1 name, $2 the new worker id)
DELETE FROM workers WHERE name = $1 AND id <> $2;

-- jobs_heartbeat --
-- description: a worker is alive ($1 worker id); no row when the worker was pruned
UPDATE workers SET last_heartbeat = now() WHERE id = $1 RETURNING id;

-- jobs_unregister_worker --
-- description: a worker stops ($1 worker id); its unfinished jobs lose their worker and are recovered
DELETE FROM workers WHERE id = $1;

-- jobs_live_workers --
-- description: workers whose heartbeat is younger than the lease ($1 lease seconds, $2 name prefix)
SELECT id, name, started_at, last_heartbeat FROM workers
WHERE last_heartbeat >= now() - make_interval(secs => $1) AND starts_with(name, $2)
ORDER BY id;

-- jobs_counts --
-- description: number of jobs per status ($1 queue, NULL for every queue)
SELECT status::text AS status, count(*)::int AS n FROM jobs
WHERE $1::text IS NULL OR queue = $1
GROUP BY status;

-- jobs_get --
-- description: one job ($1 id)
SELECT * FROM jobs WHERE id = $1;

-- jobs_by_dedupe_key --
-- description: the job of a kind and dedupe key ($1 kind, $2 dedupe_key)
SELECT * FROM jobs WHERE kind = $1 AND dedupe_key = $2;
