"""Quiet, readable logs during outages: an expected, handled failure — Redis or Ollama
unavailable, a memory source over its time budget — logs one line when it starts and one when it
ends, counts it in ``livememory_outages_total``, and never prints a traceback (each failure's
traceback is at DEBUG).

The outages are of servers these tests started themselves: a ``redis-server`` on its own port
(``tests.servers``) and the fake Ollama (driven through the real ``ollama`` client), stopped and
started again. Nothing waits on the clock: each phase is a number of turns.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

import asyncpg
import pytest

from memory import errors, logs, models, outage, session
from memory import runtime as services_module
from memory.adapters import postgres
from tests import retrieval_support as support
from tests import servers
from tests.test_faults import chat

if TYPE_CHECKING:
    from tests.conftest import SettingsFactory
    from tests.fakes import ollama as fake_ollama_module

FORMAT = logging.Formatter(logs.TEXT_FORMAT)


class Replayed:
    """A replay fed in phases, its turn reports kept."""

    def __init__(self, services: services_module.Services) -> None:
        self.reports: list[models.TurnReport] = []
        self.runner = session.Replay(services, self._deliver)
        self.fed = 0

    async def _deliver(self, report: models.TurnReport) -> None:
        self.reports.append(report)

    async def feed(self, count: int) -> list[models.TurnReport]:
        """``count`` more messages, each its own batch; the reports of the turns that ended."""
        before = len(self.reports)
        for _ in range(count):
            await self.runner.feed(chat(self.fed))
            self.fed += 1
        await self.runner.finish()
        return self.reports[before:]


def shown(caplog: pytest.LogCaptureFixture) -> tuple[str, list[logging.LogRecord]]:
    """What an operator sees at the default level (INFO), formatted as the bot prints it."""
    records = [r for r in caplog.records if r.levelno >= logging.INFO]
    return "\n".join(FORMAT.format(r) for r in records), records


def lines_of(records: list[logging.LogRecord], action: str, condition: str) -> list[str]:
    return [
        r.getMessage()
        for r in records
        if getattr(r, "action", None) == action and getattr(r, "condition", None) == condition
    ]


def assert_one_outage(caplog: pytest.LogCaptureFixture, condition: str, name: str) -> None:
    text, records = shown(caplog)
    assert "Traceback" not in text, text
    assert not [r for r in records if r.exc_info], text
    started = lines_of(records, "outage_start", condition)
    ended = lines_of(records, "outage_end", condition)
    assert len(started) == 1 and started[0].startswith(f"{name} unavailable: "), text
    assert len(ended) == 1 and ended[0].startswith(f"{name} is back after "), text
    # nothing else is shouted about it (a source over its time budget on a loaded machine is
    # another condition, and may come and go)
    warnings = [
        r.getMessage()
        for r in records
        if r.levelno >= logging.WARNING and not getattr(r, "condition", "").startswith("source:")
    ]
    assert warnings == [*started, *ended], text
    # the tracebacks are kept, at DEBUG
    assert any(r.exc_info for r in caplog.records if r.levelno == logging.DEBUG)


async def test_a_redis_outage_is_one_line_when_it_starts_and_one_when_it_ends(
    make_settings: SettingsFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with servers.redis_server() as redis:
        settings = make_settings(redis_url=redis.url)
        async with services_module.lifespan(settings, no_llm=True) as services:
            replay = Replayed(services)
            before = await replay.feed(4)
            redis.stop()
            during = await replay.feed(6)
            assert outage.conditions.is_open(outage.REDIS)
            redis.start()
            after = await replay.feed(4)
            metric = services.metrics.registry.get_sample_value
            started = metric("livememory_outages_total", {"condition": "redis"})
            failures = metric("livememory_outage_failures_total", {"condition": "redis"})

    assert {r.status for r in before} == {models.TurnStatus.COMPLETED}
    assert {r.status for r in during} == {models.TurnStatus.DEGRADED}  # handled: turns go on
    assert after[-1].status is models.TurnStatus.COMPLETED
    assert started == 1 and failures is not None and failures >= len(during)
    assert_one_outage(caplog, outage.REDIS, "Redis")


async def test_an_ollama_outage_is_one_line_when_it_starts_and_one_when_it_ends(
    make_settings: SettingsFactory,
    fake_ollama: fake_ollama_module.FakeOllama,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    settings = make_settings(ollama_host=fake_ollama.url, worker={"max_attempts": 1})
    async with services_module.lifespan(settings) as services:
        replay = Replayed(services)
        before = await replay.feed(3)
        await fake_ollama.stop()
        during = await replay.feed(5)
        await fake_ollama.start()
        after = await replay.feed(3)
        metric = services.metrics.registry.get_sample_value
        started = metric("livememory_outages_total", {"condition": "ollama"})

    assert all(r.reply for r in before) and all(r.reply for r in after)
    assert {r.status for r in during} == {models.TurnStatus.FAILED}
    assert all("ollama serve" in (r.error or "") for r in during)  # the report says why
    assert started == 1
    assert_one_outage(caplog, outage.OLLAMA, f"Ollama at {fake_ollama.url}")


async def test_a_source_over_its_time_budget_is_one_line_when_it_starts_and_one_when_it_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    late = asyncio.Event()
    fetchers = {"recall": support.Fetcher("recall", wait=late)}
    retriever = support.make_retriever(fetchers, source_timeout_ms=50, budget_ms=5000)
    plan = models.Plan(sources=(support.source("recall", "alice"),))
    async with asyncio.timeout(5):  # a hang fails the test instead of the suite
        slow = [await retriever.retrieve(plan, support.one_batch(), []) for _ in range(3)]
        late.set()  # answers at once from now on
        fast = await retriever.retrieve(plan, support.one_batch(), [])
    assert all(r.degraded for r in slow) and not fast.degraded
    _, records = shown(caplog)
    started = lines_of(records, "outage_start", "source:recall")
    ended = lines_of(records, "outage_end", "source:recall")
    assert started == ["memory source recall unavailable: over its time budget (50 ms); "
                       "carrying on without it, a line follows when it is back"]  # fmt: skip
    assert len(ended) == 1 and ended[0].startswith("memory source recall is back after ")
    assert [r for r in records if r.levelno >= logging.WARNING and r.name != "memory.outage"] == []


async def test_a_pool_this_process_closed_is_no_postgres_outage(
    server_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A task still querying when the process closes its stores (a run stopped by a signal) gets
    ``StoreClosed``, a ``StoreUnavailable`` its callers already handle, but nothing says Postgres
    is down: the server was never asked."""
    caplog.set_level(logging.DEBUG)
    pool = await asyncpg.create_pool(server_dsn, min_size=1, max_size=1)
    await pool.close()
    try:
        with (
            pytest.raises(errors.StoreClosed, match="pool is closed"),
            postgres.wrap_errors("a test"),
        ):
            await pool.fetchval("SELECT 1")
        assert not outage.conditions.is_open(outage.POSTGRES)
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    finally:
        outage.conditions.reset()
