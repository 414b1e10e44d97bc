"""Prometheus metrics of the memory stage and the prompt, recorded from ``models.TurnReport``.

The turn report is the source of truth; :meth:`MemoryMetrics.record_turn` turns it into the same
figures as metrics. Metrics live in a ``CollectorRegistry`` passed in (tests get their own; the
process passes one it exposes), never the global default registry.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from memory import errors, models

if TYPE_CHECKING:
    from collections.abc import Mapping

    from memory.consolidate import jobs

#: seconds; the stage budget is 1 s by default
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0)
MESSAGE_BUCKETS = (0, 1, 2, 5, 10, 20, 30, 50, 100, 200, 500)
TOKEN_BUCKETS = (100, 250, 500, 1000, 2000, 4000, 8000, 16000)
TOTAL = "memory_total"


def source_kind(key: str) -> str:
    """``recall:alice`` → ``recall`` (label values stay few: kinds, not viewers)."""
    return key.split(":", 1)[0]


class MemoryMetrics:
    """The memory stage's metrics in ``registry``.

    * ``livememory_memory_stage_seconds{source}`` — histogram per source kind and ``memory_total``
    * ``livememory_memory_degraded_total{source, reason}`` — degraded sources by kind and reason
    * ``livememory_memory_recall_items_total{source}`` — recall items that reached the prompt
    * ``livememory_memory_cache_total{source, result}`` — cache hit / miss / shared (single-flight)
    * ``livememory_prompt_messages_in_history`` / ``livememory_prompt_messages_sent`` — histograms
      per turn; their ``_sum`` series are the running totals, so "sent vs in history" compares
      per turn (buckets) and over time (``rate(..._sum)``)
    * ``livememory_prompt_tokens_estimate`` — histogram
    * ``livememory_turns_total{status}``
    * ``livememory_silent_turns_total{reason}`` — turns the reply policy kept quiet, by reason
      (``not_addressed``, ``viewer_cooldown``, ``ambient_interval``, ``quiet``)
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.stage_seconds = Histogram(
            "livememory_memory_stage_seconds",
            "Memory stage latency per source kind and for the whole stage (memory_total)",
            ["source"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.degraded = Counter(
            "livememory_memory_degraded",
            "Memory sources dropped from a turn, by kind and reason (timeout, error, budget)",
            ["source", "reason"],
            registry=registry,
        )
        self.recall_items = Counter(
            "livememory_memory_recall_items",
            "Recall items that reached the prompt, by source kind",
            ["source"],
            registry=registry,
        )
        self.cache = Counter(
            "livememory_memory_cache",
            "Memory cache lookups by source kind and result (hit, miss, shared)",
            ["source", "result"],
            registry=registry,
        )
        self.messages_in_history = Histogram(
            "livememory_prompt_messages_in_history",
            "Messages in the working history of a turn",
            buckets=MESSAGE_BUCKETS,
            registry=registry,
        )
        self.messages_sent = Histogram(
            "livememory_prompt_messages_sent",
            "Messages sent to the model in a turn",
            buckets=MESSAGE_BUCKETS,
            registry=registry,
        )
        self.tokens = Histogram(
            "livememory_prompt_tokens_estimate",
            "Estimated prompt tokens of a turn",
            buckets=TOKEN_BUCKETS,
            registry=registry,
        )
        self.turns = Counter(
            "livememory_turns", "Turns by final status", ["status"], registry=registry
        )
        self.silent = Counter(
            "livememory_silent_turns",
            "Turns without a reply (the reply policy chose silence), by reason",
            ["reason"],
            registry=registry,
        )
        #: turn and model latency, commands, chat delivery, the job queue
        self.operator = OperatorMetrics(registry)

    def cache_lookup(self, kind: str, result: str) -> None:
        self.cache.labels(source=kind, result=result).inc()

    def record_turn(self, report: models.TurnReport) -> None:
        """Record one turn's figures (memory stage and prompt) from its report."""
        for key, milliseconds in report.timings_ms.items():
            if key == TOTAL or ":" in key or key in _STAGE_KINDS:
                self.stage_seconds.labels(source=source_kind(key)).observe(milliseconds / 1000)
        for degraded in report.degraded:
            self.degraded.labels(source=source_kind(degraded.source), reason=degraded.reason).inc()
        for item in report.recall:
            self.recall_items.labels(source=item.source).inc()
        if report.status is models.TurnStatus.SILENT:
            self.silent.labels(reason=report.reason or "unknown").inc()
        elif report.command is None:
            prompt = report.prompt
            self.messages_in_history.observe(prompt.messages_in_history)
            self.messages_sent.observe(prompt.messages_sent)
            self.tokens.observe(prompt.tokens_estimate)
        self.turns.labels(status=report.status.value).inc()
        self.operator.record_turn(report)


#: timing keys of the memory stage without a viewer part (``model`` and others are not memory)
_STAGE_KINDS = frozenset({"profile", "recall", "episodic", "earlier", "lore", "state"})


class ReliabilityMetrics:
    """What outages cost (docs/reliability.md), in the same ``registry``.

    * ``livememory_history_fallback_total{operation}`` — working-history reads served by the
      transcript and writes dropped while the store (Redis) was unavailable
    * ``livememory_ingest_spool_messages`` — chat waiting in the ingest spool for Postgres
    * ``livememory_ingest_spool_oldest_seconds`` — how long the oldest of them has waited
    * ``livememory_ingest_spool_refused_total`` — messages a full spool could not hold
    * ``livememory_outages_total{condition}`` — outages begun (``redis``, ``postgres``, ``qdrant``,
      ``ollama``, ``source:<kind>`` over its time budget), each told in one log line when it starts
      and one when it ends (``memory.outage``)
    * ``livememory_outage_failures_total{condition}`` — the handled failures during them
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.history_fallbacks = Counter(
            "livememory_history_fallback",
            "Working-history operations the store could not serve (read: the transcript stood in)",
            ["operation"],
            registry=registry,
        )
        self.spool_messages = Gauge(
            "livememory_ingest_spool_messages",
            "Chat messages waiting in the ingest spool for Postgres",
            registry=registry,
        )
        self.spool_oldest = Gauge(
            "livememory_ingest_spool_oldest_seconds",
            "Seconds the oldest message in the ingest spool has waited",
            registry=registry,
        )
        self.spool_refused_total = Counter(
            "livememory_ingest_spool_refused",
            "Chat messages a full ingest spool could not hold",
            registry=registry,
        )

        self.outages = Counter(
            "livememory_outages",
            "Outages begun (a store unavailable, a memory source over its time budget)",
            ["condition"],
            registry=registry,
        )
        self.outage_failures = Counter(
            "livememory_outage_failures",
            "Handled failures of a store or memory source (logged once per outage)",
            ["condition"],
            registry=registry,
        )

    def outage_started(self, condition: str) -> None:
        self.outages.labels(condition=condition).inc()

    def outage_failure(self, condition: str) -> None:
        self.outage_failures.labels(condition=condition).inc()

    def history_fallback(self, operation: str) -> None:
        self.history_fallbacks.labels(operation=operation).inc()

    def spool_state(self, size: int, oldest_age_seconds: float) -> None:
        self.spool_messages.set(size)
        self.spool_oldest.set(oldest_age_seconds)

    def spool_refused(self) -> None:
        self.spool_refused_total.inc()


#: seconds of a whole turn or a model call (a local model answers in seconds, not milliseconds)
TURN_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0)
#: chat command names counted by name; anything else a viewer types after ``!`` is ``other``
COMMAND_NAMES = frozenset({"forget", "correct", "memory", "lore", "pause", "resume", "quiet"})


def command_name(text: str) -> str:
    """``!forget last`` → ``forget``; an unknown word → ``other`` (label values stay few)."""
    word = text.lstrip("!").split(maxsplit=1)[0].casefold() if text.strip("! ") else ""
    return word if word in COMMAND_NAMES else "other"


class OperatorMetrics:
    """What an operator watches beside the memory stage, in ``registry``.

    * ``livememory_turn_seconds`` / ``livememory_model_seconds`` — histograms: a whole turn
      (plan → reply journaled) and the model call in it
    * ``livememory_commands_total{command, outcome}`` — chat commands by name and turn status
    * ``livememory_chat_messages_total{channel, status}`` — reply parts sent / dropped / failed
    * ``livememory_chat_rate_limited_total{channel}`` — HTTP 429 answers from Twitch
    * ``livememory_jobs{status}``, ``livememory_jobs_oldest_todo_seconds`` — the queue, refreshed
      by :func:`memory.runtime` every ``QUEUE_POLL_SECONDS`` while metrics are served
    * ``livememory_job_attempts_total{kind, outcome}`` — job attempts: succeeded, retried, failed
    * ``livememory_job_seconds{kind}`` — histogram of job attempt durations
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.turn_seconds = Histogram(
            "livememory_turn_seconds",
            "Whole turn latency: plan, recall, model, journal",
            buckets=TURN_BUCKETS,
            registry=registry,
        )
        self.model_seconds = Histogram(
            "livememory_model_seconds",
            "Model call latency within a turn (tool rounds included)",
            buckets=TURN_BUCKETS,
            registry=registry,
        )
        self.commands = Counter(
            "livememory_commands",
            "Chat commands by name and outcome (turn status)",
            ["command", "outcome"],
            registry=registry,
        )
        self.chat_messages = Counter(
            "livememory_chat_messages",
            "Reply parts by channel and delivery status (sent, dropped, failed)",
            ["channel", "status"],
            registry=registry,
        )
        self.rate_limited = Counter(
            "livememory_chat_rate_limited",
            "HTTP 429 answers from Twitch by channel",
            ["channel"],
            registry=registry,
        )
        self.jobs = Gauge(
            "livememory_jobs", "Jobs in the queue by status", ["status"], registry=registry
        )
        self.oldest_job = Gauge(
            "livememory_jobs_oldest_todo_seconds",
            "Seconds the oldest runnable job has waited (0 when none waits)",
            registry=registry,
        )
        self.job_attempts = Counter(
            "livememory_job_attempts",
            "Job attempts by kind and outcome (succeeded, retried, failed)",
            ["kind", "outcome"],
            registry=registry,
        )
        self.job_seconds = Histogram(
            "livememory_job_seconds",
            "Duration of job attempts by kind",
            ["kind"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )

    def record_turn(self, report: models.TurnReport) -> None:
        if report.command is not None:
            outcome = report.status.value
            self.commands.labels(command=command_name(report.command), outcome=outcome).inc()
            return
        if "turn_total" in report.timings_ms:
            self.turn_seconds.observe(report.timings_ms["turn_total"] / 1000)
        if "model" in report.timings_ms:
            self.model_seconds.observe(report.timings_ms["model"] / 1000)

    def record_delivery(self, channel: str, status: str, rate_limited: int) -> None:
        self.chat_messages.labels(channel=channel, status=status).inc()
        if rate_limited:
            self.rate_limited.labels(channel=channel).inc(rate_limited)

    def record_queue(self, counts: Mapping[str, int], oldest_seconds: float | None) -> None:
        for status, count in counts.items():
            self.jobs.labels(status=status).set(count)
        self.oldest_job.set(oldest_seconds or 0.0)

    def instrument(self, kind: str, handler: jobs.Handler) -> jobs.Handler:
        """``handler`` counting its attempts by outcome, as the worker will record them (a
        validation error or the last attempt fails the job; another error retries it)."""

        async def run(job: jobs.Job) -> None:
            started = time.perf_counter()
            outcome = "failed"
            try:
                await handler(job)
                outcome = "succeeded"
            except errors.JobValidationError:
                raise
            except asyncio.CancelledError:
                outcome = ""
                raise
            except Exception:
                outcome = "failed" if job.attempts >= job.max_attempts else "retried"
                raise
            finally:
                if outcome:
                    self.job_attempts.labels(kind=kind, outcome=outcome).inc()
                    self.job_seconds.labels(kind=kind).observe(time.perf_counter() - started)

        return run
