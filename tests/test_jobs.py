"""The job queue's operations against a real Postgres (one cloned database per test)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from memory import sql
from memory.consolidate import jobs

if TYPE_CHECKING:
    from memory.adapters import postgres

KIND = "consolidate_turn"


async def _enqueue(db: postgres.Database, key: str, **payload: object) -> int:
    job_id = await jobs.enqueue(db.pool, KIND, key, {"turn_id": key, **payload}, 5)
    assert job_id is not None
    return job_id


async def test_enqueue_twice_is_a_no_op(db: postgres.Database) -> None:
    first = await jobs.enqueue(db.pool, KIND, "t1", {"turn_id": "t1", "stream": "s1"}, 5)
    second = await jobs.enqueue(db.pool, KIND, "t1", {"turn_id": "t1", "stream": "other"}, 3)

    assert first is not None
    assert second is None
    job = await jobs.by_dedupe_key(db, KIND, "t1")
    assert job is not None
    assert job.id == first
    assert job.payload == {"turn_id": "t1", "stream": "s1"}
    assert job.max_attempts == 5
    assert job.status is jobs.JobStatus.TODO
    assert (await jobs.counts(db))[jobs.JobStatus.TODO] == 1


async def test_same_key_of_another_kind_is_another_job(db: postgres.Database) -> None:
    assert await jobs.enqueue(db.pool, KIND, "t1", {}, 5) is not None
    assert await jobs.enqueue(db.pool, "summarize", "t1", {}, 5) is not None
    assert (await jobs.counts(db))[jobs.JobStatus.TODO] == 2


async def test_enqueue_joins_the_callers_transaction(db: postgres.Database) -> None:
    async with db.pool.acquire() as conn:
        with pytest.raises(RuntimeError):
            async with conn.transaction():
                assert await jobs.enqueue(conn, KIND, "rolled-back", {}, 5) is not None
                raise RuntimeError("the turn failed")
        async with conn.transaction():
            assert await jobs.enqueue(conn, KIND, "committed", {}, 5) is not None

    assert await jobs.by_dedupe_key(db, KIND, "rolled-back") is None
    assert await jobs.by_dedupe_key(db, KIND, "committed") is not None


async def test_claim_takes_jobs_in_order_and_counts_the_attempt(db: postgres.Database) -> None:
    worker_id = await jobs.register_worker(db, "w")
    first = await _enqueue(db, "a")
    second = await _enqueue(db, "b")

    claimed = await jobs.claim(db, worker_id)
    assert claimed is not None
    assert claimed.id == first
    assert claimed.status is jobs.JobStatus.DOING
    assert claimed.attempts == 1
    assert claimed.worker_id == worker_id
    assert claimed.started_at is not None
    again = await jobs.claim(db, worker_id)
    assert again is not None
    assert again.id == second
    assert await jobs.claim(db, worker_id) is None


async def test_claim_skips_rows_locked_by_a_concurrent_claim(db: postgres.Database) -> None:
    worker_id = await jobs.register_worker(db, "w")
    first = await _enqueue(db, "a")
    second = await _enqueue(db, "b")

    async with db.pool.acquire() as conn, conn.transaction():
        # a claim still in flight in another transaction holds its row lock
        held = await conn.fetchrow(sql.queries["jobs_claim"], worker_id, jobs.DEFAULT_QUEUE)
        assert held["id"] == first
        other = await jobs.claim(db, worker_id)
        assert other is not None
        assert other.id == second


async def test_claim_ignores_future_jobs_other_queues_and_unknown_workers(
    db: postgres.Database,
) -> None:
    worker_id = await jobs.register_worker(db, "w")
    later = await _enqueue(db, "later")
    await db.pool.execute(
        "UPDATE jobs SET scheduled_at = now() + interval '1 hour' WHERE id = $1", later
    )
    elsewhere = await _enqueue(db, "elsewhere")
    await db.pool.execute("UPDATE jobs SET queue = 'other' WHERE id = $1", elsewhere)

    assert await jobs.next_due(db, "other") == 0.0
    assert await jobs.claim(db, worker_id) is None
    assert await jobs.claim(db, worker_id + 1000, "other") is None
    claimed = await jobs.claim(db, worker_id, "other")
    assert claimed is not None
    assert claimed.id == elsewhere
    due = await jobs.next_due(db)
    assert due is not None
    assert 3000 < due <= 3600
    assert await jobs.next_due(db, "empty") is None


async def test_outcome_writes_need_the_owning_worker(db: postgres.Database) -> None:
    owner = await jobs.register_worker(db, "owner")
    other = await jobs.register_worker(db, "other")
    job_id = await _enqueue(db, "a")
    assert await jobs.claim(db, owner) is not None

    assert not await jobs.succeed(db, job_id, other)
    assert await jobs.retry(db, job_id, owner, 0.0, "OSError: boom")
    job = await jobs.get(db, job_id)
    assert job is not None
    assert job.status is jobs.JobStatus.TODO
    assert job.last_error == "OSError: boom"
    assert job.worker_id is None
    # a finished attempt cannot be finished twice
    assert not await jobs.fail(db, job_id, owner, "late")
    assert await jobs.claim(db, other) is not None
    assert await jobs.fail(db, job_id, other, "JobValidationError: bad")
    job = await jobs.get(db, job_id)
    assert job is not None
    assert job.status is jobs.JobStatus.FAILED
    assert job.finished_at is not None
    assert job.attempts == 2


async def test_release_gives_the_attempt_back(db: postgres.Database) -> None:
    worker_id = await jobs.register_worker(db, "w")
    job_id = await _enqueue(db, "a")
    assert await jobs.claim(db, worker_id) is not None

    assert await jobs.release(db, job_id, worker_id)

    job = await jobs.get(db, job_id)
    assert job is not None
    assert (job.status, job.attempts, job.worker_id) == (jobs.JobStatus.TODO, 0, None)


async def test_recover_stalled_requeues_jobs_of_silent_or_gone_workers(
    db: postgres.Database,
) -> None:
    silent = await jobs.register_worker(db, "silent")
    gone = await jobs.register_worker(db, "gone")
    alive = await jobs.register_worker(db, "alive")
    keys = {"silent": silent, "gone": gone, "alive": alive}
    ids = {}
    for key, worker_id in keys.items():
        ids[key] = await _enqueue(db, key)
        claimed = await jobs.claim(db, worker_id)
        assert claimed is not None
        assert claimed.id == ids[key]
    await db.pool.execute(
        "UPDATE workers SET last_heartbeat = now() - interval '1 hour' WHERE id = $1", silent
    )
    await jobs.unregister_worker(db, gone)

    recovered = await jobs.recover_stalled(db, 60.0)

    assert sorted(recovered) == sorted([ids["silent"], ids["gone"]])
    for key in ("silent", "gone"):
        job = await jobs.get(db, ids[key])
        assert job is not None
        assert job.status is jobs.JobStatus.TODO
        assert job.attempts == 1
        assert job.last_error is not None
        assert "lease expired" in job.last_error
    job = await jobs.get(db, ids["alive"])
    assert job is not None
    assert job.status is jobs.JobStatus.DOING
    # the silent worker's row is pruned; the live one stays
    live = await jobs.live_workers(db, 60.0)
    assert [row["id"] for row in live] == [alive]
    assert await db.pool.fetchval("SELECT count(*) FROM workers") == 1


async def test_recover_stalled_never_takes_the_callers_jobs(db: postgres.Database) -> None:
    me = await jobs.register_worker(db, "me")
    job_id = await _enqueue(db, "a")
    assert await jobs.claim(db, me) is not None
    await db.pool.execute("UPDATE workers SET last_heartbeat = now() - interval '1 hour'")

    assert await jobs.recover_stalled(db, 60.0, exclude_worker=me) == []
    assert await jobs.recover_stalled(db, 60.0) == [job_id]


async def test_a_stalled_job_out_of_attempts_fails(db: postgres.Database) -> None:
    worker_id = await jobs.register_worker(db, "w")
    job_id = await jobs.enqueue(db.pool, KIND, "a", {}, 1)
    assert job_id is not None
    assert await jobs.claim(db, worker_id) is not None
    await jobs.unregister_worker(db, worker_id)

    assert await jobs.recover_stalled(db, 60.0) == [job_id]

    job = await jobs.get(db, job_id)
    assert job is not None
    assert job.status is jobs.JobStatus.FAILED
    assert job.finished_at is not None


async def test_heartbeat_reports_a_pruned_worker(db: postgres.Database) -> None:
    worker_id = await jobs.register_worker(db, "w")
    before = await db.pool.fetchval(
        "UPDATE workers SET last_heartbeat = now() - interval '1 minute' WHERE id = $1"
        " RETURNING last_heartbeat",
        worker_id,
    )
    assert await jobs.heartbeat(db, worker_id)
    after = await db.pool.fetchval("SELECT last_heartbeat FROM workers WHERE id = $1", worker_id)
    assert after > before
    await jobs.unregister_worker(db, worker_id)
    assert not await jobs.heartbeat(db, worker_id)


async def test_counts_get_and_by_dedupe_key(db: postgres.Database) -> None:
    worker_id = await jobs.register_worker(db, "w")
    first = await _enqueue(db, "a")
    await _enqueue(db, "b")
    assert await jobs.claim(db, worker_id) is not None
    assert await jobs.succeed(db, first, worker_id)

    counts = await jobs.counts(db)
    assert counts == {
        jobs.JobStatus.TODO: 1,
        jobs.JobStatus.DOING: 0,
        jobs.JobStatus.SUCCEEDED: 1,
        jobs.JobStatus.FAILED: 0,
        jobs.JobStatus.CANCELLED: 0,
    }
    assert (await jobs.counts(db, "other"))[jobs.JobStatus.TODO] == 0
    job = await jobs.get(db, first)
    assert job is not None
    assert job.status is jobs.JobStatus.SUCCEEDED
    assert job.kind == KIND
    assert job.dedupe_key == "a"
    assert await jobs.get(db, 10_000) is None
    assert await jobs.by_dedupe_key(db, KIND, "missing") is None


async def test_a_new_job_is_announced_on_the_notify_channel(db: postgres.Database) -> None:
    received: asyncio.Queue[str] = asyncio.Queue()

    def on_notify(_conn: object, _pid: int, _channel: str, payload: str) -> None:
        received.put_nowait(payload)

    async with db.pool.acquire() as conn:
        await conn.add_listener(jobs.NOTIFY_CHANNEL, on_notify)
        try:
            await _enqueue(db, "a")
            assert await asyncio.wait_for(received.get(), 10) == jobs.DEFAULT_QUEUE
        finally:
            await conn.remove_listener(jobs.NOTIFY_CHANNEL, on_notify)


@pytest.mark.parametrize(
    ("attempts", "expected"), [(1, 2.0), (2, 4.0), (3, 8.0), (6, 50.0), (10_000, 50.0)]
)
def test_backoff_doubles_and_is_capped(attempts: int, expected: float) -> None:
    assert jobs.backoff_seconds(attempts, 2.0, 50.0) == expected


def test_backoff_zero_base_means_no_delay() -> None:
    assert jobs.backoff_seconds(4, 0.0, 50.0) == 0.0
