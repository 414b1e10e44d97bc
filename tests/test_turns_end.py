"""Every turn ends, and restarts pick up where a crash left off.

- Redis down mid-run: the working history falls back to the transcript, the turn ends ``degraded``
  (journaled with its consolidation job, never ``pending``), a metric counts it, and the history is
  rebuilt from the transcript once Redis is back (a Redis server of the test's own).
- Start-up: turns a crash left ``pending`` are closed ``failed`` with a reason and their messages
  queued for consolidation.
- A worker restarting under its name takes back its own claimed jobs at once (no lease wait).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import prometheus_client

from memory import metrics, models, pipeline, session
from memory import runtime as services_module
from memory.adapters import redis as redis_adapter
from memory.consolidate import jobs, outcomes, worker
from memory.history import transcript, working
from tests import servers

if TYPE_CHECKING:
    from memory.adapters import postgres
    from tests.conftest import SettingsFactory

T0 = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)


def chat(n: int, text: str, login: str = "alice", stream: str = "s1") -> models.ChatEvent:
    return models.ChatEvent(
        id=f"m{n}", stream=stream, user_id=f"id-{login}", login=login, text=text,
        ts=T0 + timedelta(seconds=n),
    )  # fmt: skip


async def turn(p: pipeline.TurnPipeline, *events: models.ChatEvent) -> models.TurnReport:
    await p.transcript.append_events(list(events))
    return await p.run(models.Batch(stream=events[0].stream, events=events))


async def test_redis_down_mid_run_degrades_the_turn_and_history_recovers(
    db: postgres.Database,
) -> None:
    store = transcript.Transcript(db)
    registry = prometheus_client.CollectorRegistry()
    counters = metrics.ReliabilityMetrics(registry)
    with servers.redis_server() as redis:
        client = await redis_adapter.connect(redis.url, attempts=3, retry_seconds=0.1)
        try:
            history = working.Fallback(
                redis_adapter.RedisHistory(client, cap=50, prefix="t:"),
                store,
                50,
                on_fallback=counters.history_fallback,
            )
            p = pipeline.TurnPipeline(
                transcript=store,
                history=history,
                model=None,
                seams=pipeline.Seams(
                    planner=pipeline.NoPlanner(),
                    retriever=pipeline.NoRetrieval(),
                    reducer=pipeline.KeepAll(),
                ),
                system_prompt="You are Mnemo.",
            )
            first = await turn(p, chat(1, "I moved to Turin"))
            redis.stop()
            down = await turn(p, chat(2, "I have a cat named Miso"))
            redis.start()
            back = await turn(p, chat(3, "what do you remember?"))
            in_redis = await redis_adapter.RedisHistory(client, cap=50, prefix="t:").recent("s1")
        finally:
            await client.aclose()

    assert first.status is models.TurnStatus.COMPLETED
    assert down.status is models.TurnStatus.DEGRADED and down.error is None
    assert [d.to_json() for d in down.degraded] == [{"source": "history", "reason": "unavailable"}]
    assert "alice: I moved to Turin" in down.prompt.preview  # the transcript stood in
    assert back.status is models.TurnStatus.COMPLETED
    assert "alice: I have a cat named Miso" in back.prompt.preview
    # rebuilt from the transcript: what was said while Redis was down is in it again
    assert [i.message_id for i in in_redis if i.message_id] == ["m1", "m2", "m3"]
    for report in (first, down, back):
        row = await store.turn(report.turn_id)
        assert row is not None and row.status is report.status
        job = await jobs.by_dedupe_key(db, transcript.CONSOLIDATE_TURN, report.turn_id)
        assert job is not None
    fallbacks = registry.get_sample_value(
        "livememory_history_fallback_total", {"operation": "read"}
    )
    assert fallbacks is not None and fallbacks >= 1


async def test_start_up_closes_pending_turns_and_queues_their_messages(
    make_settings: SettingsFactory,
) -> None:
    settings = make_settings()
    async with services_module.lifespan(settings, no_llm=True) as svc:
        await svc.transcript.append_events([chat(1, "I bake bread"), chat(2, "sourdough")])
        crashed = await svc.transcript.start_turn("s1", ["m1", "m2"])  # then the process died

    async def deliver(report: models.TurnReport) -> None:
        return None

    async with services_module.lifespan(settings, no_llm=True) as svc:
        replay = session.Replay(svc, deliver)
        await replay.feed(chat(3, "hello again"))
        await replay.finish()
        row = await svc.transcript.turn(crashed)
        assert row is not None and row.status is models.TurnStatus.FAILED
        assert row.error == session.INTERRUPTED
        await replay.consolidate_now()
        job = await jobs.by_dedupe_key(svc.db, transcript.CONSOLIDATE_TURN, crashed)
        assert job is not None and job.status is jobs.JobStatus.SUCCEEDED
        assert all(
            t.status is not models.TurnStatus.PENDING for t in await svc.transcript.turns("s1")
        )


async def test_a_worker_restarting_under_its_name_takes_back_its_jobs_at_once(
    db: postgres.Database, make_settings: SettingsFactory
) -> None:
    settings = make_settings(worker={"lease_seconds": 3600.0})  # a lease far longer than the test
    ran: list[int] = []

    async def handler(job: jobs.Job) -> None:
        ran.append(job.id)

    first = await jobs.enqueue(db.pool, "k", "a", {}, max_attempts=5)
    second = await jobs.enqueue(db.pool, "k", "b", {}, max_attempts=5)
    dead = await jobs.register_worker(db, "worker-1")
    other = await jobs.register_worker(db, "worker-2")
    claimed = await jobs.claim(db, dead)
    by_other = await jobs.claim(db, other)
    assert claimed is not None and by_other is not None  # both "die" holding their job

    done = await worker.Worker(db, settings, {"k": handler}, name="worker-1").run_until_empty()

    assert ran == [claimed.id] and done[outcomes.Outcome.SUCCEEDED] == 1
    again = await jobs.get(db, claimed.id)
    assert again is not None and again.status is jobs.JobStatus.SUCCEEDED
    assert again.attempts == 2  # the interrupted attempt counts
    # another name's job waits for its lease, as before
    untouched = await jobs.get(db, by_other.id)
    assert untouched is not None and untouched.status is jobs.JobStatus.DOING
    assert {first, second} == {claimed.id, by_other.id}
