-- admin_list_viewers --
-- description: viewers with their message counts, most recently seen first ($1 search: login prefix or exact user id, NULL for all; $2 limit)
SELECT v.user_id, v.login, v.display_name, v.first_seen, v.last_seen,
       (SELECT count(*) FROM messages m WHERE m.user_id = v.user_id)::int AS messages
FROM viewers v
WHERE $1::text IS NULL OR starts_with(v.login, lower($1)) OR v.user_id = $1
ORDER BY v.last_seen DESC, v.user_id
LIMIT $2;

-- admin_list_streams --
-- description: streams with their message and turn counts, whether memory writing is paused and the channel quiet ($1 limit)
SELECT s.id, s.channel, s.created_at,
       (SELECT count(*) FROM messages m WHERE m.stream = s.id)::int AS messages,
       (SELECT count(*) FROM turns t WHERE t.stream = s.id)::int AS turns,
       (SELECT max(m.ts) FROM messages m WHERE m.stream = s.id) AS last_message,
       EXISTS (SELECT 1 FROM memory_paused_streams p WHERE p.stream = s.id) AS paused,
       EXISTS (SELECT 1 FROM reply_quiet q WHERE q.channel = coalesce(s.channel, s.id)) AS quiet
FROM streams s
ORDER BY last_message DESC NULLS LAST, s.id
LIMIT $1;

-- admin_stream_known --
-- description: whether a stream is in the transcript ($1 stream id)
SELECT EXISTS (SELECT 1 FROM streams WHERE id = $1);

-- admin_jobs_oldest_todo --
-- description: seconds since the oldest runnable todo job was scheduled, NULL when none
SELECT extract(epoch FROM now() - min(scheduled_at))::float8
FROM jobs WHERE status = 'todo' AND scheduled_at <= now();

-- admin_jobs_list --
-- description: the newest jobs of a status ($1 status text, $2 limit)
SELECT id, queue, kind, dedupe_key, status::text AS status, attempts, max_attempts, scheduled_at,
       finished_at, last_error, created_at
FROM jobs WHERE status = $1::job_status
ORDER BY id DESC LIMIT $2;

-- admin_jobs_retry --
-- description: run a failed or cancelled job again, its attempts reset ($1 job id); no row when the job is not failed or cancelled
UPDATE jobs
SET status = 'todo', attempts = 0, scheduled_at = now(), finished_at = NULL, worker_id = NULL
WHERE id = $1 AND status IN ('failed', 'cancelled')
RETURNING id;
