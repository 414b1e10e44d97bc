"""The metrics an operator watches: served by the bot and by a worker, and recorded from real turns,
commands, jobs and chat deliveries."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx

from bot.twitch import sending
from memory import models, runtime, session
from memory.consolidate import queue_status
from tests import dashboard_helpers
from tests import test_consolidation as helpers

if TYPE_CHECKING:
    from tests.conftest import SettingsFactory

WANTED = (
    "# TYPE livememory_turn_seconds histogram",
    "# TYPE livememory_model_seconds histogram",
    "# TYPE livememory_turns_total counter",
    "# TYPE livememory_memory_stage_seconds histogram",
    "# TYPE livememory_jobs gauge",
    "# TYPE livememory_jobs_oldest_todo_seconds gauge",
    "# TYPE livememory_job_attempts_total counter",
    "# TYPE livememory_job_seconds histogram",
    "# TYPE livememory_chat_messages_total counter",
    "# TYPE livememory_chat_rate_limited_total counter",
    "# TYPE livememory_commands_total counter",
)


async def test_bot_and_worker_each_serve_the_metrics(make_settings: SettingsFactory) -> None:
    for role in ("bot", "worker"):
        port = dashboard_helpers.free_port()
        settings = make_settings(metrics_port=port)
        async with runtime.lifespan(settings, role=role, no_llm=True), httpx.AsyncClient() as http:
            text = (await http.get(f"http://127.0.0.1:{port}/metrics")).text
        missing = [line for line in WANTED if line not in text]
        assert missing == [], (role, missing)


async def test_turns_commands_jobs_and_the_queue_are_recorded(
    make_settings: SettingsFactory,
) -> None:
    async with runtime.lifespan(make_settings(), no_llm=True) as services:
        reports: list[models.TurnReport] = []

        async def keep(report: models.TurnReport) -> None:
            reports.append(report)

        replay = session.Replay(services, keep, commands=services.commands)
        await replay.feed(helpers.msg("m1", "alice", "I moved to Turin"))
        command = models.EventKind.COMMAND
        await replay.feed(helpers.msg("m2", "alice", "!memory", second=30, kind=command))
        await replay.feed(helpers.msg("m3", "bob", "!dance", second=31, kind=command))
        await replay.finish()
        registry = services.metrics.registry
        value = registry.get_sample_value
        assert value("livememory_turn_seconds_count") == 1  # the chat turn, not the commands
        assert value("livememory_model_seconds_count") == 0  # no model: nothing measured
        assert (
            value("livememory_commands_total", {"command": "memory", "outcome": "completed"}) == 1
        )
        assert value("livememory_commands_total", {"command": "other", "outcome": "completed"}) == 1
        status = await queue_status.status(services.db)
        services.metrics.operator.record_queue(status.counts, status.oldest_todo_seconds)
        assert value("livememory_jobs", {"status": "todo"}) == 1
        await replay.consolidate_now()
        outcome = {"kind": "consolidate_turn", "outcome": "succeeded"}
        assert value("livememory_job_attempts_total", outcome) == 1
        assert value("livememory_job_seconds_count", {"kind": "consolidate_turn"}) == 1
        assert [r.timings_ms["turn_total"] > 0 for r in reports if r.command is None] == [True]


def test_deliveries_count_sent_dropped_failed_and_429_answers(
    make_settings: SettingsFactory,
) -> None:
    import prometheus_client

    from memory import metrics

    operator = metrics.OperatorMetrics(prometheus_client.CollectorRegistry())
    sent_after_two_429 = sending.Delivery(
        part=0, channel="42", text="hi", status=sending.DeliveryStatus.SENT, attempts=3
    )
    failed_on_429 = sending.Delivery(
        part=1,
        channel="42",
        text="hi",
        status=sending.DeliveryStatus.FAILED,
        attempts=4,
        error=str(sending.RateLimited(1.0)),
    )
    dropped = sending.Delivery(
        part=2, channel="42", text="hi", status=sending.DeliveryStatus.DROPPED, error="automod"
    )
    for delivery in (sent_after_two_429, failed_on_429, dropped):
        operator.record_delivery(
            "42", delivery.status.value, sending.rate_limited_answers(delivery)
        )
    value = operator.registry.get_sample_value
    assert value("livememory_chat_rate_limited_total", {"channel": "42"}) == 2 + 4
    for status in ("sent", "failed", "dropped"):
        assert value("livememory_chat_messages_total", {"channel": "42", "status": status}) == 1
