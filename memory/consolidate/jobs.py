"""The durable job queue (outbox) in Postgres, after procrastinate's shape.

A job is a row of ``jobs``: enqueued in the caller's transaction (the turn's transcript rows and its
consolidation job commit together), one per ``(kind, dedupe_key)``, claimed with
``FOR UPDATE SKIP LOCKED``, retried with exponential backoff, failed for good on a validation error or
after ``max_attempts``. Workers heart-beat in ``workers``; a job whose worker went silent for longer
than the lease goes back to ``todo``. The worker loop is in ``memory.consolidate.worker``.
"""

from __future__ import annotations

import enum
import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory import sql
from memory.adapters import postgres

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping
    from datetime import datetime
    from typing import TypeAlias

    #: what a worker runs for a job kind; raise ``errors.JobValidationError`` for a bad payload,
    #: ``errors.StoreUnavailable`` (or ``OSError``, ``TimeoutError``) for a transient failure
    Handler: TypeAlias = Callable[["Job"], Awaitable[None]]

logger = logging.getLogger(__name__)

#: the queue of consolidation jobs (the default of ``jobs.queue``)
DEFAULT_QUEUE = "consolidation"
#: the ``pg_notify`` channel a new job is announced on (payload: its queue)
NOTIFY_CHANNEL = "livememory_jobs"


class JobStatus(enum.StrEnum):
    """Mirror of the Postgres enum ``job_status``."""

    TODO = "todo"  #: waiting to run (now or at ``scheduled_at``)
    DOING = "doing"  #: claimed by a worker
    SUCCEEDED = "succeeded"  #: done
    FAILED = "failed"  #: terminal: invalid payload, or out of attempts; ``last_error`` says why
    CANCELLED = "cancelled"  #: terminal: withdrawn by an admin


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    """One row of ``jobs``."""

    #: queue-wide id
    id: int
    #: the queue workers listen on
    queue: str
    #: what to do (``consolidate_turn``): selects the handler
    kind: str
    #: one job per kind and key (the turn id for consolidation)
    dedupe_key: str
    #: the decoded JSON payload; a JSON object for well-formed jobs, handlers validate it
    payload: Any
    status: JobStatus
    #: attempts started so far, this one included
    attempts: int
    max_attempts: int
    #: not runnable before this time (backoff)
    scheduled_at: datetime
    #: the worker that holds it (``doing``) or held it last
    worker_id: int | None
    started_at: datetime | None
    finished_at: datetime | None
    #: the error of the last failed attempt
    last_error: str | None
    created_at: datetime

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Job:
        payload = row["payload"]
        return cls(
            id=row["id"],
            queue=row["queue"],
            kind=row["kind"],
            dedupe_key=row["dedupe_key"],
            payload=json.loads(payload) if isinstance(payload, str) else payload,
            status=JobStatus(row["status"]),
            attempts=row["attempts"],
            max_attempts=row["max_attempts"],
            scheduled_at=row["scheduled_at"],
            worker_id=row["worker_id"],
            started_at=row["started_at"],
            finished_at=row["finished_at"],
            last_error=row["last_error"],
            created_at=row["created_at"],
        )


def backoff_seconds(attempts: int, base: float, cap: float) -> float:
    """Delay before the next attempt after ``attempts`` failed ones: ``base * 2**(attempts-1)``, capped."""
    if attempts < 1 or base <= 0:
        return 0.0
    # bound the exponent: 2**1000 is a float overflow, and the cap is reached long before
    return min(base * 2.0 ** min(attempts - 1, 60), cap)


async def enqueue(
    conn: postgres.Connection | postgres.Pool,
    kind: str,
    dedupe_key: str,
    payload: Mapping[str, Any],
    max_attempts: int,
) -> int | None:
    """Add a job, in the caller's transaction when ``conn`` is in one.

    Returns
    -------
    int | None
        The new job's id, or None when a job of that kind and key already exists (a no-op).
    """
    with postgres.wrap_errors("enqueue job"):
        job_id: int | None = await conn.fetchval(
            sql.queries["jobs_enqueue"], kind, dedupe_key, json.dumps(payload), max_attempts
        )
    if job_id is not None:
        logger.debug(
            "enqueued job %s %s:%s", job_id, kind, dedupe_key, extra={"action": "job_enqueue"}
        )
    return job_id


async def claim(db: postgres.Database, worker_id: int, queue: str = DEFAULT_QUEUE) -> Job | None:
    """Take the next runnable job of ``queue`` for ``worker_id`` (None when there is none)."""
    with postgres.wrap_errors("claim job"):
        row = await db.pool.fetchrow(sql.queries["jobs_claim"], worker_id, queue)
    return Job.from_row(row) if row is not None else None


async def _transition(db: postgres.Database, query: str, action: str, *args: Any) -> bool:
    with postgres.wrap_errors(action):
        changed = await db.pool.fetchval(sql.queries[query], *args)
    return changed is not None


async def succeed(db: postgres.Database, job_id: int, worker_id: int) -> bool:
    """Mark the job done; False when it is no longer this worker's (taken over after its lease)."""
    return await _transition(db, "jobs_succeed", "finish job", job_id, worker_id)


async def retry(
    db: postgres.Database, job_id: int, worker_id: int, delay_seconds: float, error: str
) -> bool:
    """Put the job back to ``todo`` in ``delay_seconds``, keeping ``error``."""
    return await _transition(
        db, "jobs_retry", "retry job", job_id, worker_id, float(delay_seconds), error
    )


async def fail(db: postgres.Database, job_id: int, worker_id: int, error: str) -> bool:
    """Mark the job failed for good, keeping ``error``."""
    return await _transition(db, "jobs_fail", "fail job", job_id, worker_id, error)


async def release(db: postgres.Database, job_id: int, worker_id: int) -> bool:
    """Give back a job its worker was stopped in the middle of (the attempt does not count)."""
    return await _transition(db, "jobs_release", "release job", job_id, worker_id)


async def register_worker(db: postgres.Database, name: str) -> int:
    """Register a worker named ``name``; returns its id.

    A name is an identity: a worker that restarts under its name (``--name``, a container's
    hostname) gives back at once the jobs its earlier incarnation held when it died, instead of
    leaving them ``doing`` until the lease expires. Two live workers must never share a name.
    """
    with postgres.wrap_errors("register worker"):
        async with db.pool.acquire() as conn, conn.transaction():
            worker_id: int = await conn.fetchval(sql.queries["jobs_register_worker"], name)
            rows = await conn.fetch(sql.queries["jobs_release_same_name"], name, worker_id)
            await conn.execute(sql.queries["jobs_forget_same_name"], name, worker_id)
    for row in rows:
        logger.warning(
            "job %s: worker %s restarted while holding it, job is %s again",
            row["id"],
            name,
            row["status"],
            extra={"action": "job_recover"},
        )
    return worker_id


async def heartbeat(db: postgres.Database, worker_id: int) -> bool:
    """Record that the worker is alive; False when its row is gone (pruned as stalled)."""
    return await _transition(db, "jobs_heartbeat", "heartbeat", worker_id)


async def unregister_worker(db: postgres.Database, worker_id: int) -> None:
    with postgres.wrap_errors("unregister worker"):
        await db.pool.execute(sql.queries["jobs_unregister_worker"], worker_id)


async def recover_stalled(
    db: postgres.Database, lease_seconds: float, *, exclude_worker: int | None = None
) -> list[int]:
    """Put back the ``doing`` jobs of workers silent for longer than ``lease_seconds`` (or gone).

    A recovered job out of attempts is failed instead. Those workers' rows are deleted.
    ``exclude_worker`` (the caller) is never considered stalled. Returns the recovered job ids.
    """
    with postgres.wrap_errors("recover stalled jobs"):
        async with db.pool.acquire() as conn, conn.transaction():
            rows = await conn.fetch(
                sql.queries["jobs_recover_stalled"], float(lease_seconds), exclude_worker
            )
            pruned = await conn.fetch(
                sql.queries["jobs_prune_workers"], float(lease_seconds), exclude_worker
            )
    for row in rows:
        logger.warning(
            "job %s: its worker stopped heart-beating, job is %s again",
            row["id"],
            row["status"],
            extra={"action": "job_recover"},
        )
    if pruned:
        logger.info("pruned %d stalled worker(s)", len(pruned), extra={"action": "worker_prune"})
    return [row["id"] for row in rows]


async def next_due(db: postgres.Database, queue: str = DEFAULT_QUEUE) -> float | None:
    """Seconds until the next ``todo`` job of ``queue`` is runnable (0: now; None: no job)."""
    with postgres.wrap_errors("next due job"):
        due: float | None = await db.pool.fetchval(sql.queries["jobs_next_due"], queue)
    return None if due is None else max(due, 0.0)


async def live_workers(
    db: postgres.Database, lease_seconds: float, name_prefix: str = ""
) -> list[dict[str, Any]]:
    """Workers (named ``name_prefix…``) whose last heartbeat is younger than ``lease_seconds``."""
    with postgres.wrap_errors("list workers"):
        rows = await db.pool.fetch(
            sql.queries["jobs_live_workers"], float(lease_seconds), name_prefix
        )
    return [dict(row) for row in rows]


async def counts(db: postgres.Database, queue: str | None = None) -> dict[JobStatus, int]:
    """Number of jobs per status (every status present, 0 when none)."""
    with postgres.wrap_errors("count jobs"):
        rows = await db.pool.fetch(sql.queries["jobs_counts"], queue)
    found = {JobStatus(row["status"]): row["n"] for row in rows}
    return {status: found.get(status, 0) for status in JobStatus}


async def get(db: postgres.Database, job_id: int) -> Job | None:
    with postgres.wrap_errors("get job"):
        row = await db.pool.fetchrow(sql.queries["jobs_get"], job_id)
    return Job.from_row(row) if row is not None else None


async def by_dedupe_key(db: postgres.Database, kind: str, key: str) -> Job | None:
    with postgres.wrap_errors("get job"):
        row = await db.pool.fetchrow(sql.queries["jobs_by_dedupe_key"], kind, key)
    return Job.from_row(row) if row is not None else None
