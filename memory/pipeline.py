"""One turn: batch → working history → plan → recall → prompt (reduced) → model (+ tools) → journal.

The seams (planner, retriever, reducer, tool runner) are ports; ``bot/services.py`` composes the real
ones. The transcript is written before the reply is delivered, so a failed send or a crash after the
model answered loses nothing the model said.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from memory import asking, errors, models, outage, prompt
from memory.history import fit, working

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from datetime import datetime

    from memory import ports
    from memory import reply as reply_module
    from memory.history import transcript

logger = logging.getLogger(__name__)

REDACTED = "[redacted]"
PREVIEW_CHARS = 4000


class TurnMetrics(Protocol):
    def record_turn(self, report: models.TurnReport) -> None: ...


class ReplyDecider(Protocol):
    """The reply policy (``memory.reply.ReplyPolicy``): speak on this batch, or stay silent."""

    async def decide(self, batch: models.Batch) -> reply_module.Decision: ...


@dataclass(frozen=True, slots=True)
class _EmptyRecall:
    items: list[models.RecallItem] = dataclasses.field(default_factory=list)
    timings_ms: dict[str, float] = dataclasses.field(default_factory=dict)
    degraded: list[models.Degraded] = dataclasses.field(default_factory=list)
    block: str = ""
    dropped: dict[str, int] = dataclasses.field(default_factory=dict)


class NoPlanner:
    """Plans no source (the foundation's default)."""

    def plan(self, batch: models.Batch, history: Sequence[models.HistoryItem]) -> models.Plan:
        return models.Plan()


class NoRetrieval:
    async def retrieve(
        self, plan: models.Plan, batch: models.Batch, history: Sequence[models.HistoryItem]
    ) -> ports.Recall:
        return _EmptyRecall(timings_ms={"memory_total": 0.0})


class KeepAll:
    """The ``none`` reducer: everything."""

    async def reduce(
        self, stream: str, items: Sequence[models.HistoryItem]
    ) -> list[models.HistoryItem]:
        return list(items)


@dataclass(frozen=True, slots=True, kw_only=True)
class Seams:
    planner: ports.Planner
    retriever: ports.Retriever
    reducer: ports.Reducer
    tools: asking.ToolRunner | None = None
    #: None: every batch gets a reply
    reply: ReplyDecider | None = None


class TurnPipeline:
    """Runs turns. One instance serves every stream; the caller runs a stream's turns in order."""

    def __init__(
        self,
        *,
        transcript: transcript.Transcript,
        history: ports.WorkingHistory,
        model: ports.ChatModel | None,
        seams: Seams,
        system_prompt: str,
        max_tool_rounds: int = 3,
        max_attempts: int = 5,
        metrics: TurnMetrics | None = None,
        history_cap: int = 200,
        journal_wait_seconds: float = 60.0,
        redact: Callable[[str], str] | None = None,
        reply_timeout_seconds: float | None = None,
        reply_tokens: int = 256,
    ) -> None:
        self.transcript = transcript
        #: reads fall back to the transcript while the store (Redis) is unavailable
        self.history = (
            history
            if isinstance(history, working.Fallback)
            else working.Fallback(history, transcript, history_cap)
        )
        #: how long a turn's end waits for Postgres before it is left to start-up recovery
        self.journal_wait_seconds = journal_wait_seconds
        self.model = model
        self.seams = seams
        self.system_prompt = system_prompt
        self.max_tool_rounds = max_tool_rounds
        self.max_attempts = max_attempts
        self.metrics = metrics
        #: the ingestion redactor, applied to the model's reply too (it may echo a secret it
        #: guessed or was fed by a tool) before it is journaled or sent
        self.redact = redact
        #: how long a turn waits for the model, from its first call (the time of tool rounds
        #: included; a round once started is never cut); None: the client's timeout
        self.reply_timeout_seconds = reply_timeout_seconds
        #: the most tokens a reply may take, kept free in the model's context when the prompt is
        #: reduced to fit it
        self.reply_tokens = reply_tokens

    async def run(self, batch: models.Batch) -> models.TurnReport:
        """Answer one batch. The batch's events must already be in the transcript."""
        started = time.perf_counter()
        chat = batch.chat
        turn_id = await self.transcript.start_turn(batch.stream, [e.id for e in chat])
        report = models.TurnReport(
            turn_id=turn_id, stream=batch.stream, message_ids=batch.message_ids
        )
        ids = {e.id for e in chat}
        current = [
            dataclasses.replace(
                models.HistoryItem.from_event(e, turn_id), text=prompt.event_text(e)
            )
            for e in chat
        ]
        new_items: list[models.HistoryItem] = list(current)
        # whatever fails from here on, the turn ends (completed, degraded or failed) and is journaled
        try:
            decision = await self.seams.reply.decide(batch) if self.seams.reply else None
            if decision is not None:
                report.reason = decision.reason
            if decision is not None and not decision.speak:
                # still journaled and consolidated; no plan, no recall, no model call
                report.status = models.TurnStatus.SILENT
                report.prompt.messages_in_history = len(current)
            else:
                await self._answer(batch, turn_id, ids, current, new_items, report)
        except errors.MemoryServiceError as exc:
            report.status, report.error = models.TurnStatus.FAILED, str(exc)
            # an outage is told once by its store's condition (``memory.outage``), not per turn
            level = logging.INFO if isinstance(exc, errors.StoreUnavailable) else logging.WARNING
            logger.log(level, "turn %s failed: %s", turn_id, exc, extra={"action": "turn_failed"})
        except Exception as exc:  # an unexpected error still ends the turn: no pending turn left
            report.status, report.error = models.TurnStatus.FAILED, f"{type(exc).__name__}: {exc}"
            logger.exception("turn %s failed", turn_id, extra={"action": "turn_failed"})
        if report.reply:
            new_items.append(
                models.HistoryItem(
                    role=models.Role.ASSISTANT,
                    text=report.reply,
                    ts=batch.closed_at,
                    turn_id=turn_id,
                )
            )
        report.timings_ms["turn_total"] = (time.perf_counter() - started) * 1000
        await self._journal(
            turn_id, batch.stream, report, ts=batch.closed_at, consolidate=bool(chat)
        )
        await self.history.append(batch.stream, new_items)  # never raises (``working.Fallback``)
        if self.metrics is not None:
            self.metrics.record_turn(report)
        return report

    async def _answer(
        self,
        batch: models.Batch,
        turn_id: str,
        ids: set[str],
        current: list[models.HistoryItem],
        new_items: list[models.HistoryItem],
        report: models.TurnReport,
    ) -> None:
        # a message stored before a restart but never answered is in the rebuilt history and in
        # this batch: keep it once, as part of the batch
        items, degraded = await self.history.read(batch.stream, unanswered=ids)
        if degraded:
            report.degraded.append(models.Degraded(source="history", reason="unavailable"))
        # Postgres going away mid-turn: the read waits for it like the turn's end does
        past = await outage.patiently(
            lambda: self._honour_redactions([i for i in items if i.message_id not in ids]),
            wait_seconds=self.journal_wait_seconds,
            what=f"turn {turn_id}",
        )
        system = models.HistoryItem(
            role=models.Role.SYSTEM, text=self.system_prompt, ts=batch.opened_at
        )
        reduced = await self.seams.reducer.reduce(batch.stream, [system, *past, *current])
        # what the model will see of the past: planner and retrieval compare against it
        shown = [i for i in reduced[1:] if i.turn_id != turn_id or i.summary]
        report.plan = self.seams.planner.plan(batch, shown)
        recall = await self.seams.retriever.retrieve(report.plan, batch, shown)
        report.recall = list(recall.items)
        report.dropped = dict(recall.dropped)
        report.degraded.extend(recall.degraded)
        report.timings_ms.update(recall.timings_ms)
        messages = self._fitted(turn_id, reduced, recall.block)
        report.prompt = models.PromptStats(
            messages_in_history=len(past) + len(current),
            messages_sent=len(messages),
            tokens_estimate=models.estimate_messages_tokens(messages),
            preview=prompt.render(messages)[-PREVIEW_CHARS:],
        )
        if self.model is not None:
            await self._reply(turn_id, batch, messages, new_items, report)
        late = any(d.source == "model" for d in report.degraded)
        report.status = (
            models.TurnStatus.DEGRADED if degraded or late else models.TurnStatus.COMPLETED
        )

    def _fitted(
        self, turn_id: str, reduced: Sequence[models.HistoryItem], block: str
    ) -> list[models.PromptMessage]:
        """The prompt, reduced to the model's context window when it is known (``fit``)."""
        window = self.model.context_tokens if self.model is not None else None
        if window is None:
            return prompt.to_prompt(reduced, block)
        tools = self.seams.tools.tool_schemas() if self.seams.tools else None
        limit = fit.budget(window, self.reply_tokens, tools)
        fitted = fit.fit(
            reduced,
            block,
            answering=lambda item: item.turn_id == turn_id and not item.summary,
            limit=limit,
            render=prompt.to_prompt,
        )
        if fitted.dropped_history or fitted.dropped_memory or not fitted.fits:
            logger.log(
                logging.INFO if fitted.fits else logging.WARNING,
                "turn %s: prompt of ~%d tokens over the model's %d-token context (%d for the "
                "prompt): left out %d history messages and %d memory lines%s",
                turn_id,
                fitted.tokens_before,
                window,
                limit,
                fitted.dropped_history,
                fitted.dropped_memory,
                "" if fitted.fits else f", still ~{fitted.tokens_after}: sent as it is",
                extra={"action": "prompt_fitted"},
            )
        return prompt.to_prompt(fitted.items, fitted.block)

    async def _reply(
        self,
        turn_id: str,
        batch: models.Batch,
        messages: list[models.PromptMessage],
        new_items: list[models.HistoryItem],
        report: models.TurnReport,
    ) -> None:
        """Ask the model (``asking``) within the reply timeout; no text or a late answer is no
        reply and a ``model`` entry in ``degraded``."""
        assert self.model is not None
        started = time.perf_counter()
        timeout = self.reply_timeout_seconds
        try:
            reply = await asking.ask(
                self.model,
                self.seams.tools,
                turn_id=turn_id,
                batch=batch,
                messages=messages,
                report=report,
                items=new_items,
                max_rounds=self.max_tool_rounds,
                max_tokens=self.reply_tokens,
                deadline=None if timeout is None else asyncio.get_running_loop().time() + timeout,
            )
        except TimeoutError:
            logger.warning(
                "turn %s: no answer from the model within %g s: no reply",
                turn_id,
                timeout,
                extra={"action": "model_timeout"},
            )
            report.degraded.append(models.Degraded(source="model", reason="timeout"))
            reply = ""
        else:
            if not reply:
                report.degraded.append(models.Degraded(source="model", reason="no_text"))
        if self.redact is not None and reply:
            reply = self.redact(reply)
        report.reply = reply or None
        report.timings_ms["model"] = (time.perf_counter() - started) * 1000

    async def _journal(
        self,
        turn_id: str,
        stream: str,
        report: models.TurnReport,
        *,
        ts: datetime,
        consolidate: bool,
    ) -> None:
        """Write the turn's end (and its consolidation job), waiting for Postgres while it is
        unavailable (up to ``journal_wait_seconds``; after that the turn stays pending and
        start-up recovery closes it)."""
        await outage.patiently(
            lambda: self.transcript.finish_turn(
                turn_id,
                stream=stream,
                status=report.status,
                reply=report.reply,
                error=report.error,
                ts=ts,
                report=report.to_json(),
                consolidate=consolidate,
                max_attempts=self.max_attempts,
            ),
            wait_seconds=self.journal_wait_seconds,
            what=f"end of turn {turn_id}",
        )

    async def record_missed(
        self, stream: str, events: Sequence[models.ChatEvent], reason: str
    ) -> models.TurnReport:
        """Journal stored chat that came too late to answer as a ``missed`` turn: consolidated
        (what viewers said is remembered), in the working history, never answered."""
        turn_id = await self.transcript.start_turn(stream, [e.id for e in events])
        report = models.TurnReport(
            turn_id=turn_id,
            stream=stream,
            message_ids=[e.id for e in events],
            status=models.TurnStatus.MISSED,
            error=reason,
        )
        await self._journal(
            turn_id,
            stream,
            report,
            ts=events[-1].ts,
            consolidate=any(not e.is_command for e in events),
        )
        await self.history.append(
            stream,
            [
                dataclasses.replace(
                    models.HistoryItem.from_event(e, turn_id), text=prompt.event_text(e)
                )
                for e in events
                if not e.is_command
            ],
        )
        if self.metrics is not None:
            self.metrics.record_turn(report)
        return report

    async def _honour_redactions(self, items: list[models.HistoryItem]) -> list[models.HistoryItem]:
        """A message forgotten everywhere leaves every prompt at once, whatever history cache
        (Redis, another process's memory) still holds it."""
        gone = await self.transcript.redacted([i.message_id for i in items if i.message_id])
        if not gone:
            return items
        return [dataclasses.replace(i, text=REDACTED) if i.message_id in gone else i for i in items]

    async def record_command(
        self, event: models.ChatEvent, reply: str | None, error: str | None = None
    ) -> models.TurnReport:
        """Journal a chat command and the bot's answer as a turn of its own (never sent to the model)."""
        turn_id = await self.transcript.start_turn(event.stream, [event.id])
        report = models.TurnReport(
            turn_id=turn_id,
            stream=event.stream,
            message_ids=[event.id],
            reply=reply,
            command=event.text,
            status=models.TurnStatus.FAILED if error else models.TurnStatus.COMPLETED,
            error=error,
        )
        await self._journal(turn_id, event.stream, report, ts=event.ts, consolidate=False)
        if self.metrics is not None:
            self.metrics.record_turn(report)
        return report
