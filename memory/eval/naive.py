"""The naive reference design: one shared memory of every message, recalled by word overlap for
whoever speaks, and the whole history in the prompt.

It is what the layered design is measured against (attribution split, history reduction) and it runs
without any store, so the harness and the metrics can be exercised end to end on their own.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memory import models
from memory.history import batcher as batcher_module
from memory.spaces import embedders

if TYPE_CHECKING:
    from collections.abc import Sequence

SHARED_SPACE = "shared"


@dataclass(slots=True)
class _Doc:
    id: str
    text: str
    terms: frozenset[str]
    source: str


@dataclass(slots=True)
class NaiveSystem:
    """Replays events in batches (the real batcher) and reports turns like the pipeline does."""

    window_seconds: float = 2.0
    max_messages: int = 20
    limit: int = 5
    system_prompt: str = ""
    #: (lore id, text) documents, stored in the same shared memory
    lore: Sequence[tuple[str, str]] = ()
    #: the bot's name is in most questions and matches nothing useful
    bot_name: str = "Mnemo"
    _docs: list[_Doc] = field(default_factory=list)
    _history_tokens: int = 0
    _turn: int = 0

    def _remember(self, doc_id: str, text: str, source: str) -> None:
        terms = frozenset(embedders.terms(text))
        if terms:
            self._docs.append(_Doc(id=doc_id, text=text, terms=terms, source=source))

    def _search(self, query: str) -> list[tuple[float, _Doc]]:
        wanted = frozenset(embedders.terms(query)) - frozenset(embedders.terms(self.bot_name))
        if not wanted:
            return []
        scored = [
            (len(wanted & doc.terms) / math.sqrt(len(wanted) * len(doc.terms)), doc)
            for doc in self._docs
            if wanted & doc.terms
        ]
        scored.sort(key=lambda pair: -pair[0])
        return scored[: self.limit]

    def run_batch(self, batch: models.Batch) -> models.TurnReport:
        self._turn += 1
        report = models.TurnReport(
            turn_id=f"naive-{self._turn}", stream=batch.stream, message_ids=batch.message_ids
        )
        started = time.perf_counter()
        for event in batch.chat:
            for score, doc in self._search(event.text):
                report.recall.append(
                    models.RecallItem(
                        source=doc.source,
                        space=SHARED_SPACE,
                        viewer=event.login,
                        memory_id=doc.id,
                        text=doc.text,
                        origin_message_ids=(doc.id,),
                        score=score,
                    )
                )
        report.timings_ms["memory_total"] = (time.perf_counter() - started) * 1000
        for event in batch.chat:
            self._history_tokens += models.estimate_tokens(event.text) + 4
        memory_tokens = sum(models.estimate_tokens(item.text) for item in report.recall)
        report.prompt = models.PromptStats(
            messages_in_history=len(self._docs) + len(batch.chat),
            messages_sent=len(self._docs) + len(batch.chat) + 1,
            tokens_estimate=models.estimate_tokens(self.system_prompt)
            + self._history_tokens
            + memory_tokens,
        )
        report.status = models.TurnStatus.COMPLETED
        for event in batch.chat:
            self._remember(event.id, event.text, "recall")
        return report

    async def replay(self, events: Sequence[models.ChatEvent]) -> list[models.TurnReport]:
        for lore_id, text in self.lore:
            self._remember(lore_id, text, "lore")
        batcher = batcher_module.Batcher(
            window_seconds=self.window_seconds, max_messages=self.max_messages
        )
        reports: list[models.TurnReport] = []
        for event in events:
            reports.extend(self.run_batch(batch) for batch in batcher.feed(event) if batch.chat)
        reports.extend(self.run_batch(batch) for batch in batcher.flush() if batch.chat)
        return reports
