"""Consolidation workers: claim jobs from the Postgres queue and run their handlers.

``Worker.run(stop)`` is the long-running loop (in the bot process, or ``python -m memory.worker``):
heartbeat, stalled-job recovery and a ``LISTEN`` connection run as named side tasks of one
``TaskGroup``; jobs run as tasks of the same group, ``concurrency`` at a time. ``run_until_empty()``
(burst mode, for tests and ``--sync-consolidation``) returns when no job is runnable now.

Outcomes: success → ``succeeded``; ``errors.JobValidationError`` (or an unknown kind) → ``failed`` at
once; a transient error (``errors.StoreUnavailable``, ``OSError``, ``TimeoutError``) or any other
exception → back to ``todo`` after an exponential backoff, ``failed`` after ``max_attempts``. A worker
stopped mid-job gives the job back; one that dies leaves it to the lease recovery of the others.

The command line (``python -m memory.worker``) is in ``memory.consolidate.worker_cli``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import logging
import os
import socket
from typing import TYPE_CHECKING, Any, TypeVar

from memory import errors
from memory.adapters import postgres
from memory.consolidate import jobs, outcomes

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Coroutine, Iterator, Mapping

    from config.settings import Settings

logger = logging.getLogger(__name__)

#: seconds between two attempts to reopen the LISTEN connection (at most ``poll_seconds``)
RECONNECT_SECONDS = 1.0

_serial = itertools.count(1)
_T = TypeVar("_T")


def default_name() -> str:
    """``<host>-<pid>-<n>``: the ``--check`` healthcheck matches the host part."""
    return f"{socket.gethostname()}-{os.getpid()}-{next(_serial)}"


@contextlib.contextmanager
def _single_error() -> Iterator[None]:
    """Let a lone error out of a ``TaskGroup`` as itself (callers catch ``StoreUnavailable``)."""
    try:
        yield
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise


class Worker:
    """Runs the jobs of one queue with ``handlers`` (job kind → async handler).

    Parameters
    ----------
    db
        The open database; the worker also opens one dedicated connection (from ``db.dsn``) for LISTEN.
    settings
        ``settings.worker`` gives lease, heartbeat, backoff, polling and default concurrency.
    handlers
        Job kind → ``async def handler(job: jobs.Job) -> None``; handlers must be idempotent (a job
        can run again after its worker died).
    """

    def __init__(
        self,
        db: postgres.Database,
        settings: Settings,
        handlers: Mapping[str, jobs.Handler],
        *,
        name: str | None = None,
        concurrency: int | None = None,
        queue: str = jobs.DEFAULT_QUEUE,
    ) -> None:
        self.db = db
        self.settings = settings.worker
        self.handlers = dict(handlers)
        self.name = name or default_name()
        self.concurrency = concurrency or self.settings.concurrency
        self.queue = queue
        #: this worker's row in ``workers`` while it runs
        self.worker_id: int | None = None
        #: set while the LISTEN connection is up
        self.listening = asyncio.Event()
        #: attempts finished by this worker, per outcome
        self.counts: collections.Counter[outcomes.Outcome] = collections.Counter()
        #: set while the worker waits with nothing to claim and nothing running (``run`` only)
        self.idle = asyncio.Event()
        self._wakeup = asyncio.Event()
        self._running: set[asyncio.Task[outcomes.Outcome]] = set()
        self._final_writes: set[asyncio.Task[Any]] = set()
        self.outcomes = outcomes.OutcomeWriter(db, self.settings)
        if self.settings.lease_seconds <= self.settings.heartbeat_seconds:
            logger.warning(
                "lease (%ss) is not longer than the heartbeat (%ss): live workers lose their jobs",
                self.settings.lease_seconds,
                self.settings.heartbeat_seconds,
            )

    # -- entry points -------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Work until ``stop`` is set; then let running jobs finish (``shutdown_grace_seconds``),
        cancel (and give back) the rest, and unregister."""
        with _single_error():
            async with self._registered():
                await self._recover()
                async with asyncio.TaskGroup() as group:
                    side = [
                        group.create_task(self._heartbeat_loop(), name=f"{self.name}:heartbeat"),
                        group.create_task(self._recover_loop(), name=f"{self.name}:recover"),
                        group.create_task(self._listen_loop(), name=f"{self.name}:listen"),
                        group.create_task(self._relay(stop), name=f"{self.name}:stop"),
                    ]
                    await self._dispatch(group, stop, burst=False)
                    await self._drain()
                    for task in side:
                        task.cancel()

    async def run_until_empty(
        self, stop: asyncio.Event | None = None
    ) -> dict[outcomes.Outcome, int]:
        """Process jobs until none is runnable now and none runs, or until ``stop`` is set (then
        as ``run`` stops); returns this run's outcomes."""
        start = collections.Counter(self.counts)
        with _single_error():
            async with self._registered():
                await self._recover(raise_errors=True)
                async with asyncio.TaskGroup() as group:
                    side = [
                        group.create_task(self._heartbeat_loop(), name=f"{self.name}:heartbeat")
                    ]
                    if stop is not None:
                        side.append(group.create_task(self._relay(stop), name=f"{self.name}:stop"))
                    try:
                        await self._dispatch(group, stop, burst=True)
                        await self._drain()
                    finally:
                        for task in side:
                            task.cancel()
        return {outcome: self.counts[outcome] - start[outcome] for outcome in outcomes.Outcome}

    async def recover_stalled(self) -> list[int]:
        """Put back the jobs of workers silent for longer than the lease (never this one's)."""
        return await jobs.recover_stalled(
            self.db, self.settings.lease_seconds, exclude_worker=self.worker_id
        )

    # -- registration and side tasks ------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _registered(self) -> AsyncIterator[None]:
        self.worker_id = await jobs.register_worker(self.db, self.name)
        logger.info(
            "worker %s (id %s) started on queue %r, concurrency %d",
            self.name,
            self.worker_id,
            self.queue,
            self.concurrency,
            extra={"action": "worker_start"},
        )
        try:
            yield
        finally:
            while self._final_writes:
                await asyncio.wait(set(self._final_writes))
            worker_id, self.worker_id = self.worker_id, None
            try:
                await self._shielded(jobs.unregister_worker(self.db, worker_id), "unregister")
            except errors.StoreUnavailable as exc:
                logger.warning("worker %s: could not unregister (%s)", self.name, exc)
            logger.info("worker %s stopped", self.name, extra={"action": "worker_stop"})

    async def _shielded(self, coro: Coroutine[Any, Any, _T], what: str) -> _T:
        """Run a final state write to its end even if the caller is cancelled meanwhile."""
        task = asyncio.create_task(coro, name=f"{self.name}:{what}")
        self._final_writes.add(task)
        task.add_done_callback(self._final_writes.discard)
        return await asyncio.shield(task)

    def _wake(self) -> None:
        """Make the dispatcher look for work again (a notification, a finished job, a stop)."""
        self._wakeup.set()
        self.idle.clear()

    async def _relay(self, stop: asyncio.Event) -> None:
        await stop.wait()
        self._wake()

    async def _beat(self) -> None:
        assert self.worker_id is not None
        try:
            if not await jobs.heartbeat(self.db, self.worker_id):
                logger.warning("worker %s was pruned as stalled: registering again", self.name)
                self.worker_id = await jobs.register_worker(self.db, self.name)
        except errors.StoreUnavailable as exc:
            logger.info("worker %s: heartbeat failed (%s)", self.name, exc)  # an outage: told once

    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.heartbeat_seconds)
            await self._beat()

    async def _recover(self, *, raise_errors: bool = False) -> None:
        try:
            if await self.recover_stalled():
                self._wake()
        except errors.StoreUnavailable as exc:
            if raise_errors:
                raise
            logger.info("worker %s: stalled-job recovery failed (%s)", self.name, exc)

    async def _recover_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.lease_seconds)
            await self._beat()
            await self._recover()

    async def _listen_loop(self) -> None:
        """Keep a dedicated LISTEN connection open; every (re)connection triggers one claim.

        Polling covers the gaps, so a failing connection is retried (slower and slower, up to
        ``poll_seconds``), never fatal.
        """
        delay = min(RECONNECT_SECONDS, self.settings.poll_seconds)
        while True:
            try:
                await self._listen_once()
                delay = min(RECONNECT_SECONDS, self.settings.poll_seconds)
            except Exception as exc:
                # Postgres down is an outage (told once by its condition); anything else is news
                expected = isinstance(exc, (errors.StoreUnavailable, OSError))
                logger.log(
                    logging.INFO if expected else logging.WARNING,
                    "worker %s: LISTEN connection failed (%s)",
                    self.name,
                    exc,
                )
                delay = min(delay * 2, self.settings.poll_seconds)
            await asyncio.sleep(delay)

    async def _listen_once(self) -> None:
        conn = await postgres.connect_standalone(self.db.dsn)
        try:
            lost = asyncio.Event()
            conn.add_termination_listener(lambda _conn: lost.set())
            await conn.add_listener(jobs.NOTIFY_CHANNEL, self._on_notify)
            self.listening.set()
            self._wake()
            logger.debug("worker %s listening", self.name, extra={"action": "worker_listen"})
            while not conn.is_closed():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.settings.poll_seconds):
                        await lost.wait()
            logger.warning("worker %s: LISTEN connection lost, reconnecting", self.name)
        finally:
            self.listening.clear()
            if not conn.is_closed():
                conn.terminate()

    def _on_notify(self, _conn: object, _pid: int, _channel: str, payload: str) -> None:
        if payload == self.queue:
            self._wake()

    # -- claiming and running -------------------------------------------------------------------

    async def _dispatch(
        self, group: asyncio.TaskGroup, stop: asyncio.Event | None, *, burst: bool
    ) -> None:
        """Claim and start jobs until ``stop`` is set, or (``burst``) nothing is left."""
        while stop is None or not stop.is_set():
            self._wakeup.clear()
            timeout: float | None = None
            if len(self._running) < self.concurrency:
                job = await self._claim(burst=burst)
                if job is not None:
                    self._start(group, job)
                    continue
                if burst and not self._running:
                    return
                if not burst:
                    timeout = await self._idle_timeout()
                    if not self._running and not self._wakeup.is_set():
                        self.idle.set()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._wakeup.wait()

    async def _claim(self, *, burst: bool) -> jobs.Job | None:
        if self.worker_id is None:
            return None
        try:
            return await jobs.claim(self.db, self.worker_id, self.queue)
        except errors.StoreUnavailable as exc:
            if burst:
                raise
            logger.info("worker %s: cannot claim jobs (%s)", self.name, exc)
            return None

    async def _idle_timeout(self) -> float:
        """Wait for a notification at most until the next poll or the next scheduled job."""
        timeout = self.settings.poll_seconds
        with contextlib.suppress(errors.StoreUnavailable):
            due = await jobs.next_due(self.db, self.queue)
            if due is not None:
                timeout = min(timeout, due)
        return timeout

    def _start(self, group: asyncio.TaskGroup, job: jobs.Job) -> None:
        assert self.worker_id is not None
        task = group.create_task(
            self._run_job(job, self.worker_id), name=f"{self.name}:job-{job.id}"
        )
        self._running.add(task)
        task.add_done_callback(self._job_done)

    def _job_done(self, task: asyncio.Task[outcomes.Outcome]) -> None:
        self._running.discard(task)
        if not task.cancelled() and task.exception() is None:
            self.counts[task.result()] += 1
        self._wake()

    async def _drain(self) -> None:
        if not self._running:
            return
        grace = self.settings.shutdown_grace_seconds
        logger.info(
            "worker %s: %d job(s) running, waiting %ss", self.name, len(self._running), grace
        )
        _, pending = await asyncio.wait(set(self._running), timeout=grace)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)

    async def _run_job(self, job: jobs.Job, worker_id: int) -> outcomes.Outcome:
        extra = {"action": "job_run", "job_id": job.id, "kind": job.kind}
        logger.debug(
            "job %s %s:%s attempt %d", job.id, job.kind, job.dedupe_key, job.attempts, extra=extra
        )
        handler = self.handlers.get(job.kind)
        error: str | None = None
        try:
            if handler is None:
                raise errors.JobValidationError(f"no handler for job kind {job.kind!r}")
            await handler(job)
        except asyncio.CancelledError:
            released = self.outcomes.record(job, worker_id, outcomes.Outcome.RELEASED, None)
            self.counts[await self._shielded(released, "release")] += 1
            raise
        except errors.JobValidationError as exc:
            outcome, error = outcomes.Outcome.FAILED, outcomes.describe(exc)
            logger.error("job %s is invalid: %s", job.id, error, extra=extra)
        except outcomes.TRANSIENT_ERRORS as exc:
            outcome, error = outcomes.after_failure(job), outcomes.describe(exc)
            # an outage is told once by its store's condition (``memory.outage``), not per job
            level = logging.INFO if isinstance(exc, errors.StoreUnavailable) else logging.WARNING
            logger.log(
                level, "job %s attempt %d failed: %s", job.id, job.attempts, error, extra=extra
            )
        except Exception as exc:
            outcome, error = outcomes.after_failure(job), outcomes.describe(exc)
            logger.exception("job %s attempt %d crashed", job.id, job.attempts, extra=extra)
        else:
            outcome = outcomes.Outcome.SUCCEEDED
        return await self._shielded(self.outcomes.record(job, worker_id, outcome, error), "record")
