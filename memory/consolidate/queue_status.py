"""The job queue as an operator sees it: depth per status, age of the oldest runnable job, the
failed jobs with their error, and a retry of one of them (``memory.admin jobs``, the dashboard,
the metrics)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory import errors, sql
from memory.adapters import postgres
from memory.consolidate import jobs

if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import datetime


class JobError(errors.MemoryServiceError):
    """unknown job, or a job that cannot be retried"""


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueStatus:
    #: jobs per status (every status present, zero included)
    counts: dict[str, int]
    #: seconds since the oldest runnable ``todo`` job became due; None when none waits
    oldest_todo_seconds: float | None

    def to_json(self) -> dict[str, Any]:
        return {"counts": self.counts, "oldest_todo_seconds": self.oldest_todo_seconds}


@dataclass(frozen=True, slots=True, kw_only=True)
class JobLine:
    """One job as listed: what it is, how far it went, why it failed."""

    id: int
    kind: str
    dedupe_key: str
    status: str
    attempts: int
    max_attempts: int
    last_error: str | None
    created_at: datetime
    finished_at: datetime | None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> JobLine:
        return cls(**{name: row[name] for name in cls.__slots__})

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


async def status(db: postgres.Database) -> QueueStatus:
    counts = {state.value: 0 for state in jobs.JobStatus}
    counts |= {state.value: n for state, n in (await jobs.counts(db)).items()}
    with postgres.wrap_errors("read job queue"):
        oldest = await db.pool.fetchval(sql.queries["admin_jobs_oldest_todo"])
    return QueueStatus(counts=counts, oldest_todo_seconds=oldest)


async def listed(db: postgres.Database, state: str = "failed", limit: int = 20) -> list[JobLine]:
    """The newest jobs of one status (``failed`` by default)."""
    if state not in {s.value for s in jobs.JobStatus}:
        valid = ", ".join(s.value for s in jobs.JobStatus)
        raise errors.ConfigurationError(f"unknown job status {state!r} (one of {valid})")
    with postgres.wrap_errors("read jobs"):
        rows = await db.pool.fetch(sql.queries["admin_jobs_list"], state, limit)
    return [JobLine.from_row(row) for row in rows]


async def retry(db: postgres.Database, job_id: int) -> None:
    """Run a failed or cancelled job again (attempts reset); refuses any other job."""
    with postgres.wrap_errors("retry job"):
        done = await db.pool.fetchval(sql.queries["admin_jobs_retry"], job_id)
    if done is not None:
        return
    job = await jobs.get(db, job_id)
    if job is None:
        raise JobError(f"unknown job {job_id}")
    raise JobError(f"job {job_id} is {job.status.value}: only failed or cancelled jobs are retried")
