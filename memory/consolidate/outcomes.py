"""What became of a job's attempt, and writing it back to the queue.

An attempt ends ``succeeded``, ``retried`` (back to ``todo`` after an exponential backoff),
``failed`` (invalid job, or ``max_attempts`` reached), ``released`` (the worker stopped mid-job) or
``lost`` (the job was taken over after the worker's lease ran out). The outcome write is retried
while Postgres is away, for at most a lease.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from typing import TYPE_CHECKING

from memory import errors
from memory.consolidate import jobs

if TYPE_CHECKING:
    from config.settings import WorkerSettings
    from memory.adapters import postgres

#: the workers' logger: an outcome line belongs with the worker's other lines
logger = logging.getLogger("memory.consolidate.worker")

#: handler errors worth retrying
TRANSIENT_ERRORS = (errors.StoreUnavailable, OSError, TimeoutError)


class Outcome(enum.StrEnum):
    """What became of one attempt (the keys of ``run_until_empty()``'s counts)."""

    SUCCEEDED = "succeeded"
    RETRIED = "retried"  #: back to ``todo`` after its backoff
    FAILED = "failed"  #: terminal
    RELEASED = "released"  #: the worker stopped mid-job and gave it back
    LOST = "lost"  #: the job was no longer this worker's (taken over after its lease)


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def after_failure(job: jobs.Job) -> Outcome:
    """``failed`` once the job used its attempts, else ``retried``."""
    return Outcome.FAILED if job.attempts >= job.max_attempts else Outcome.RETRIED


class OutcomeWriter:
    """Writes an attempt's outcome to the job queue on behalf of one worker."""

    def __init__(self, db: postgres.Database, settings: WorkerSettings) -> None:
        self.db = db
        self.settings = settings

    async def record(
        self, job: jobs.Job, worker_id: int, outcome: Outcome, error: str | None
    ) -> Outcome:
        """Write the outcome; retried while Postgres is away, for at most a lease (then the
        job is another worker's to recover)."""
        tries = (
            1
            if outcome is Outcome.RELEASED
            else 1 + int(self.settings.lease_seconds // self.settings.heartbeat_seconds)
        )
        for attempt in range(1, tries + 1):
            try:
                written = await self._write(job, worker_id, outcome, error)
            except errors.StoreUnavailable as exc:
                logger.warning("job %s: cannot record %s (%s)", job.id, outcome, exc)
                if attempt == tries:
                    return Outcome.LOST
                await asyncio.sleep(self.settings.heartbeat_seconds)
            else:
                break
        if not written:
            logger.warning("job %s was taken over by another worker", job.id)
            return Outcome.LOST
        logger.info(
            "job %s %s:%s %s",
            job.id,
            job.kind,
            job.dedupe_key,
            outcome,
            extra={"action": "job_" + outcome.value, "job_id": job.id},
        )
        return outcome

    async def _write(
        self, job: jobs.Job, worker_id: int, outcome: Outcome, error: str | None
    ) -> bool:
        if outcome is Outcome.SUCCEEDED:
            return await jobs.succeed(self.db, job.id, worker_id)
        if outcome is Outcome.RELEASED:
            return await jobs.release(self.db, job.id, worker_id)
        assert error is not None
        if outcome is Outcome.FAILED:
            return await jobs.fail(self.db, job.id, worker_id, error)
        delay = jobs.backoff_seconds(
            job.attempts, self.settings.backoff_base_seconds, self.settings.backoff_max_seconds
        )
        return await jobs.retry(self.db, job.id, worker_id, delay, error)
