"""Prometheus metrics of the memory stage and the prompt, recorded from ``models.TurnReport``.

The turn report is the source of truth; :meth:`MemoryMetrics.record_turn` turns it into the same
figures as metrics. Metrics live in a ``CollectorRegistry`` passed in (tests get their own; the
process passes one it exposes), never the global default registry.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

from memory import models

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


#: timing keys of the memory stage without a viewer part (``model`` and others are not memory)
_STAGE_KINDS = frozenset({"profile", "recall", "episodic", "lore", "state"})
