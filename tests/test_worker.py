"""Workers against a real Postgres: outcomes, retries, leases, concurrency, wake-up, the CLI."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

import asyncpg
import pytest

from memory import errors
from memory.adapters import postgres
from memory.consolidate import jobs, outcomes, worker

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Mapping

    from config.settings import Settings
    from tests.conftest import SettingsFactory

KIND = "consolidate_turn"
WAIT = 20  # generous upper bound for awaited events (never reached when things work)


class Recorder:
    """A fake idempotent handler: records every call, keeps one result per job (like point ids
    derived from the turn id), fails on demand, and never runs one job twice at the same time."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.results: dict[str, Any] = {}
        self.running: set[str] = set()
        self.overlaps: list[str] = []
        #: dedupe key → exceptions to raise on its next calls
        self.failures: dict[str, list[BaseException]] = {}
        self.started = asyncio.Event()
        #: when set, handlers wait for it (to hold a job in the middle of its run)
        self.gate: asyncio.Event | None = None
        self.all_done = asyncio.Event()
        self.expected = 0

    async def __call__(self, job: jobs.Job) -> None:
        key = job.dedupe_key
        if key in self.running:
            self.overlaps.append(key)
        self.running.add(key)
        self.calls.append(key)
        try:
            self.started.set()
            for _ in range(3):
                await asyncio.sleep(0)  # let other jobs interleave
            if self.gate is not None:
                await self.gate.wait()
            if self.failures.get(key):
                raise self.failures[key].pop(0)
            if not isinstance(job.payload, dict) or "turn_id" not in job.payload:
                raise errors.JobValidationError(f"payload has no turn_id: {job.payload!r}")
            self.results[key] = job.payload
            if self.expected and len(self.results) >= self.expected:
                self.all_done.set()
        finally:
            self.running.discard(key)


@pytest.fixture
def settings(make_settings: SettingsFactory) -> Settings:
    return make_settings(worker={"heartbeat_seconds": 5, "lease_seconds": 60, "poll_seconds": 30})


async def enqueue(db: postgres.Database, key: str, *, kind: str = KIND, **extra: Any) -> int:
    payload = {"turn_id": key, "stream": "s1", **extra}
    job_id = await jobs.enqueue(db.pool, kind, key, payload, 5)
    assert job_id is not None
    return job_id


async def job_of(db: postgres.Database, key: str, kind: str = KIND) -> jobs.Job:
    job = await jobs.by_dedupe_key(db, kind, key)
    assert job is not None
    return job


def make_worker(
    db: postgres.Database,
    settings: Settings,
    handler: Callable[[jobs.Job], Any],
    **kwargs: Any,
) -> worker.Worker:
    handlers: Mapping[str, Any] = {KIND: handler}
    return worker.Worker(db, settings, handlers, **kwargs)


@contextlib.asynccontextmanager
async def running(w: worker.Worker) -> AsyncIterator[asyncio.Task[None]]:
    """Run ``w`` in the background; stop it (and surface its errors) on exit."""
    stop = asyncio.Event()
    task = asyncio.create_task(w.run(stop), name=f"test:{w.name}")
    try:
        yield task
    finally:
        stop.set()
        await asyncio.wait_for(task, WAIT)


# -- outcomes ----------------------------------------------------------------------------------


async def test_run_until_empty_runs_every_job_once(
    db: postgres.Database, settings: Settings
) -> None:
    for i in range(5):
        await enqueue(db, f"t{i}")
    handler = Recorder()

    counts = await make_worker(db, settings, handler).run_until_empty()

    assert counts[outcomes.Outcome.SUCCEEDED] == 5
    assert sorted(handler.calls) == [f"t{i}" for i in range(5)]
    assert (await jobs.counts(db))[jobs.JobStatus.SUCCEEDED] == 5
    assert await db.pool.fetchval("SELECT count(*) FROM workers") == 0


async def test_run_until_empty_stops_when_asked_and_leaves_the_rest_queued(
    db: postgres.Database, settings: Settings
) -> None:
    """A signal during ``memory.worker --until-empty``: the running job ends, no new one is
    claimed, the rest stay queued for the next run."""
    for i in range(3):
        await enqueue(db, f"t{i}")
    handler = Recorder()
    handler.gate = asyncio.Event()
    stop = asyncio.Event()
    burst = asyncio.create_task(
        make_worker(db, settings, handler, concurrency=1).run_until_empty(stop)
    )
    await asyncio.wait_for(handler.started.wait(), WAIT)  # the first job holds at the gate
    stop.set()
    handler.gate.set()
    counts = await asyncio.wait_for(burst, WAIT)

    assert counts[outcomes.Outcome.SUCCEEDED] == 1 and len(handler.calls) == 1
    assert (await jobs.counts(db))[jobs.JobStatus.TODO] == 2
    assert await db.pool.fetchval("SELECT count(*) FROM workers") == 0


async def test_transient_failure_is_retried_after_backoff_and_succeeds(
    db: postgres.Database, settings: Settings
) -> None:
    await enqueue(db, "t1")
    handler = Recorder()
    handler.failures["t1"] = [OSError("connection reset"), TimeoutError("slow")]

    counts = await make_worker(db, settings, handler).run_until_empty()

    assert counts[outcomes.Outcome.RETRIED] == 2
    assert counts[outcomes.Outcome.SUCCEEDED] == 1
    job = await job_of(db, "t1")
    assert job.status is jobs.JobStatus.SUCCEEDED
    assert job.attempts == 3
    assert job.last_error == "TimeoutError: slow"
    assert handler.results == {"t1": {"turn_id": "t1", "stream": "s1"}}


async def test_qdrant_unavailable_then_back_succeeds(
    db: postgres.Database, settings: Settings
) -> None:
    await enqueue(db, "t1")
    await enqueue(db, "t2")
    handler = Recorder()
    handler.failures["t1"] = [errors.StoreUnavailable("Qdrant is unavailable")] * 3

    counts = await make_worker(db, settings, handler).run_until_empty()

    assert counts[outcomes.Outcome.RETRIED] == 3
    assert counts[outcomes.Outcome.SUCCEEDED] == 2
    job = await job_of(db, "t1")
    assert job.status is jobs.JobStatus.SUCCEEDED
    assert job.attempts == 4
    assert job.last_error is not None
    assert "Qdrant is unavailable" in job.last_error
    assert (await job_of(db, "t2")).attempts == 1
    assert sorted(handler.results) == ["t1", "t2"]


async def test_backoff_postpones_the_retry(
    make_settings: SettingsFactory, db: postgres.Database
) -> None:
    settings = make_settings(worker={"backoff_base_seconds": 120, "backoff_max_seconds": 600})
    job_id = await enqueue(db, "t1")
    handler = Recorder()
    handler.failures["t1"] = [errors.ModelUnavailable()]

    counts = await make_worker(db, settings, handler).run_until_empty()

    assert counts[outcomes.Outcome.RETRIED] == 1
    assert handler.calls == ["t1"]  # not runnable again now: burst mode stops
    delay = await db.pool.fetchval(
        "SELECT extract(epoch FROM scheduled_at - now()) FROM jobs WHERE id = $1", job_id
    )
    assert 100 < delay <= 120
    job = await job_of(db, "t1")
    assert job.status is jobs.JobStatus.TODO
    assert job.last_error == "ModelUnavailable: The language model server cannot be reached."


async def test_malformed_job_fails_at_once_and_other_jobs_succeed(
    db: postgres.Database, settings: Settings
) -> None:
    await enqueue(db, "t1")
    assert await jobs.enqueue(db.pool, KIND, "bad", {"stream": "s1"}, 5) is not None
    assert await jobs.enqueue(db.pool, "no_such_kind", "t9", {"turn_id": "t9"}, 5) is not None
    await enqueue(db, "t2")
    handler = Recorder()

    counts = await make_worker(db, settings, handler).run_until_empty()

    assert counts[outcomes.Outcome.FAILED] == 2
    assert counts[outcomes.Outcome.SUCCEEDED] == 2
    bad = await job_of(db, "bad")
    assert bad.status is jobs.JobStatus.FAILED
    assert bad.attempts == 1
    assert bad.last_error is not None
    assert bad.last_error.startswith("JobValidationError: payload has no turn_id")
    unknown = await job_of(db, "t9", "no_such_kind")
    assert unknown.status is jobs.JobStatus.FAILED
    assert unknown.last_error == "JobValidationError: no handler for job kind 'no_such_kind'"
    assert sorted(handler.results) == ["t1", "t2"]


async def test_max_attempts_then_failed(db: postgres.Database, settings: Settings) -> None:
    assert await jobs.enqueue(db.pool, KIND, "t1", {"turn_id": "t1"}, 3) is not None
    handler = Recorder()
    handler.failures["t1"] = [errors.StoreUnavailable(f"down {i}") for i in range(10)]

    counts = await make_worker(db, settings, handler).run_until_empty()

    assert counts[outcomes.Outcome.RETRIED] == 2
    assert counts[outcomes.Outcome.FAILED] == 1
    job = await job_of(db, "t1")
    assert job.status is jobs.JobStatus.FAILED
    assert job.attempts == 3
    assert job.last_error == "StoreUnavailable: down 2"
    assert handler.results == {}


async def test_unexpected_error_is_retried_and_logged_with_traceback(
    db: postgres.Database, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    await enqueue(db, "t1")
    handler = Recorder()
    handler.failures["t1"] = [KeyError("oops")]

    with caplog.at_level(logging.WARNING, logger="memory.consolidate.worker"):
        counts = await make_worker(db, settings, handler).run_until_empty()

    assert counts[outcomes.Outcome.RETRIED] == 1
    assert counts[outcomes.Outcome.SUCCEEDED] == 1
    crashed = [r for r in caplog.records if "crashed" in r.getMessage()]
    assert len(crashed) == 1
    assert crashed[0].exc_info is not None
    assert crashed[0].exc_info[0] is KeyError


async def test_burst_mode_raises_when_postgres_is_gone(
    db: postgres.Database, settings: Settings
) -> None:
    pool = await asyncpg.create_pool(db.dsn, min_size=1, max_size=1)
    own = postgres.Database(pool=pool, dsn=db.dsn)
    await pool.close()

    with pytest.raises(errors.StoreUnavailable):
        await make_worker(own, settings, Recorder()).run_until_empty()


# -- stopping, dying, leases -------------------------------------------------------------------


async def test_cancelled_worker_gives_its_job_back_and_another_completes_it(
    db: postgres.Database, settings: Settings
) -> None:
    await enqueue(db, "t1")
    await enqueue(db, "t2")
    handler = Recorder()
    handler.gate = asyncio.Event()  # hold the first job in the middle of its run
    first = make_worker(db, settings, handler, name="first")
    task = asyncio.create_task(first.run(asyncio.Event()))
    await asyncio.wait_for(handler.started.wait(), WAIT)
    held = handler.calls[0]
    assert (await job_of(db, held)).status is jobs.JobStatus.DOING

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    job = await job_of(db, held)
    assert (job.status, job.attempts, job.worker_id) == (jobs.JobStatus.TODO, 0, None)
    assert await db.pool.fetchval("SELECT count(*) FROM workers") == 0
    handler.gate.set()
    counts = await make_worker(db, settings, handler, name="second").run_until_empty()
    assert counts[outcomes.Outcome.SUCCEEDED] == 2
    assert handler.calls.count(held) == 2
    assert sorted(handler.results) == ["t1", "t2"]
    assert handler.overlaps == []


async def test_a_dead_workers_job_is_taken_again_after_its_lease(
    make_settings: SettingsFactory, db: postgres.Database
) -> None:
    settings = make_settings(worker={"lease_seconds": 30, "heartbeat_seconds": 5})
    await enqueue(db, "t1")
    await enqueue(db, "t2")
    handler = Recorder()
    handler.gate = asyncio.Event()
    # the doomed worker has a pool of its own: "killing the process" takes its connections away,
    # so it cannot give the job back nor unregister, like a SIGKILL
    pool = await asyncpg.create_pool(db.dsn, min_size=1, max_size=4)
    doomed = make_worker(postgres.Database(pool=pool, dsn=db.dsn), settings, handler, name="doomed")
    task = asyncio.create_task(doomed.run(asyncio.Event()))
    await asyncio.wait_for(handler.started.wait(), WAIT)
    held = handler.calls[0]
    dead_id = doomed.worker_id
    pool.terminate()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task

    job = await job_of(db, held)
    assert (job.status, job.worker_id) == (jobs.JobStatus.DOING, dead_id)
    rescuer = make_worker(db, settings, handler, name="rescuer")
    # its heartbeat is recent: within the lease nobody takes the job
    assert await rescuer.recover_stalled() == []
    await db.pool.execute(
        "UPDATE workers SET last_heartbeat = now() - interval '1 hour' WHERE id = $1", dead_id
    )
    handler.gate.set()

    counts = await rescuer.run_until_empty()  # recovers stalled jobs at start

    assert counts[outcomes.Outcome.SUCCEEDED] == 2
    job = await job_of(db, held)
    assert job.status is jobs.JobStatus.SUCCEEDED
    assert job.attempts == 2
    assert handler.calls.count(held) == 2
    assert sorted(handler.results) == ["t1", "t2"]
    assert await db.pool.fetchval("SELECT count(*) FROM workers") == 0


async def test_stop_lets_a_running_job_finish(
    make_settings: SettingsFactory, db: postgres.Database
) -> None:
    settings = make_settings(worker={"shutdown_grace_seconds": WAIT})
    await enqueue(db, "t1")
    handler = Recorder()
    handler.gate = asyncio.Event()
    stop = asyncio.Event()
    task = asyncio.create_task(make_worker(db, settings, handler).run(stop))
    await asyncio.wait_for(handler.started.wait(), WAIT)

    stop.set()
    handler.gate.set()
    await asyncio.wait_for(task, WAIT)

    assert (await job_of(db, "t1")).status is jobs.JobStatus.SUCCEEDED
    assert await db.pool.fetchval("SELECT count(*) FROM workers") == 0


async def test_stop_after_the_grace_period_gives_the_job_back(
    make_settings: SettingsFactory, db: postgres.Database
) -> None:
    settings = make_settings(worker={"shutdown_grace_seconds": 0})
    await enqueue(db, "t1")
    handler = Recorder()
    handler.gate = asyncio.Event()  # never set: the job would run forever
    stop = asyncio.Event()
    w = make_worker(db, settings, handler)
    task = asyncio.create_task(w.run(stop))
    await asyncio.wait_for(handler.started.wait(), WAIT)

    stop.set()
    await asyncio.wait_for(task, WAIT)

    job = await job_of(db, "t1")
    assert (job.status, job.attempts) == (jobs.JobStatus.TODO, 0)
    assert w.counts[outcomes.Outcome.RELEASED] == 1


# -- concurrency and wake-up -------------------------------------------------------------------


async def test_three_workers_share_twenty_jobs_without_running_one_twice(
    db: postgres.Database, settings: Settings
) -> None:
    for i in range(20):
        await enqueue(db, f"t{i:02}")
    handler = Recorder()
    workers = [make_worker(db, settings, handler, name=f"w{n}", concurrency=2) for n in range(3)]

    results = await asyncio.gather(*(w.run_until_empty() for w in workers))

    assert sum(r[outcomes.Outcome.SUCCEEDED] for r in results) == 20
    assert sorted(handler.calls) == [f"t{i:02}" for i in range(20)]
    assert handler.overlaps == []
    assert (await jobs.counts(db))[jobs.JobStatus.SUCCEEDED] == 20


async def test_running_workers_pick_up_jobs_enqueued_while_they_wait(
    make_settings: SettingsFactory, db: postgres.Database
) -> None:
    # polling would take an hour: only pg_notify can wake them
    settings = make_settings(worker={"poll_seconds": 3600})
    handler = Recorder()
    handler.expected = 20
    workers = [make_worker(db, settings, handler, name=f"w{n}", concurrency=2) for n in range(3)]
    async with contextlib.AsyncExitStack() as stack:
        for w in workers:
            await stack.enter_async_context(running(w))
        for w in workers:
            await asyncio.wait_for(w.listening.wait(), WAIT)
        for i in range(20):
            await enqueue(db, f"t{i:02}")
        await asyncio.wait_for(handler.all_done.wait(), WAIT)

    assert sorted(handler.calls) == [f"t{i:02}" for i in range(20)]
    assert handler.overlaps == []
    assert sum(w.counts[outcomes.Outcome.SUCCEEDED] for w in workers) == 20


async def test_notify_wakes_a_waiting_worker(
    make_settings: SettingsFactory, db: postgres.Database
) -> None:
    settings = make_settings(worker={"poll_seconds": 3600})
    handler = Recorder()
    w = make_worker(db, settings, handler)
    async with running(w):
        await asyncio.wait_for(w.listening.wait(), WAIT)
        await asyncio.wait_for(w.idle.wait(), WAIT)  # the claim after LISTEN found nothing
        await enqueue(db, "t1")
        await asyncio.wait_for(handler.started.wait(), WAIT)
    assert handler.calls == ["t1"]


async def test_listen_reconnects_after_losing_its_connection(
    make_settings: SettingsFactory, db: postgres.Database
) -> None:
    settings = make_settings(worker={"poll_seconds": 3600})
    handler = Recorder()
    w = make_worker(db, settings, handler)
    async with running(w):
        await asyncio.wait_for(w.listening.wait(), WAIT)
        await asyncio.wait_for(w.idle.wait(), WAIT)
        killed = await db.pool.fetchval(
            # waits (up to 10 s) for the backend to be gone: no notification can reach it after
            "SELECT count(pg_terminate_backend(pid, 10000)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND query LIKE 'LISTEN%'"
        )
        assert killed == 1
        await enqueue(db, "t1")
        await asyncio.wait_for(handler.started.wait(), WAIT)
        assert w.listening.is_set()
        new_listener = await db.pool.fetchval(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND query LIKE 'LISTEN%'"
        )
        assert new_listener == 1
    assert handler.calls == ["t1"]
