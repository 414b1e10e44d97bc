"""One turn: batch → working history → plan → recall → prompt (reduced) → model (+ tools) → journal.

The seams (planner, retriever, reducer, tool runner) are ports; ``bot/services.py`` composes the real
ones. The transcript is written before the reply is delivered, so a failed send or a crash after the
model answered loses nothing the model said.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from memory import errors, models, outage
from memory.history import working

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from datetime import datetime

    from memory import ports
    from memory import reply as reply_module
    from memory.history import transcript

logger = logging.getLogger(__name__)

MEMORY_HEADER = "Memory:"
REDACTED = "[redacted]"
PREVIEW_CHARS = 4000


class TurnMetrics(Protocol):
    def record_turn(self, report: models.TurnReport) -> None: ...


class ToolRound(Protocol):
    """What one round of tool calls did (``memory.state.tools.ToolRunner.run``)."""

    results: list[models.HistoryItem]
    changed_domains: set[str]
    involved_user_ids: set[str]
    records: list[dict[str, Any]]


class ReplyDecider(Protocol):
    """The reply policy (``memory.reply.ReplyPolicy``): speak on this batch, or stay silent."""

    async def decide(self, batch: models.Batch) -> reply_module.Decision: ...


class ToolRunner(Protocol):
    def tool_schemas(self) -> list[dict[str, Any]]: ...

    async def run(
        self,
        turn_id: str,
        stream: str,
        calls: Sequence[models.ToolCall],
        speakers: Mapping[str, str],
        *,
        privileged: bool = False,
    ) -> ToolRound: ...

    async def record_barrier(
        self, turn_id: str, domains: set[str], user_ids: set[str], batch_user_ids: set[str]
    ) -> dict[str, Any] | None: ...


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


def format_user(item: models.HistoryItem) -> str:
    return f"{item.login}: {item.text}" if item.login else item.text


def event_text(event: models.ChatEvent) -> str:
    if event.kind is models.EventKind.EVENT:
        return f"[{event.event or 'event'}] {event.text}".strip()
    return event.text


def to_prompt(items: Sequence[models.HistoryItem], memory_block: str) -> list[models.PromptMessage]:
    """History items → chat messages; the memory block follows the first system message."""
    messages: list[models.PromptMessage] = []
    for index, item in enumerate(items):
        if item.role is models.Role.USER:
            messages.append(models.PromptMessage(role=item.role, content=format_user(item)))
        else:
            messages.append(
                models.PromptMessage(
                    role=item.role,
                    content=item.text,
                    tool_calls=item.tool_calls,
                    tool_name=item.tool_name,
                )
            )
        if index == 0 and item.role is models.Role.SYSTEM and memory_block:
            messages.append(
                models.PromptMessage(
                    role=models.Role.SYSTEM, content=f"{MEMORY_HEADER}\n{memory_block}"
                )
            )
    return messages


def render(messages: Sequence[models.PromptMessage]) -> str:
    """The prompt as text (the preview, and the stand-in reply of ``--no-llm``)."""
    return "\n".join(f"[{m.role.value}] {m.content}" for m in messages)


@dataclass(frozen=True, slots=True, kw_only=True)
class Seams:
    planner: ports.Planner
    retriever: ports.Retriever
    reducer: ports.Reducer
    tools: ToolRunner | None = None
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
            dataclasses.replace(models.HistoryItem.from_event(e, turn_id), text=event_text(e))
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
        messages = to_prompt(reduced, recall.block)
        report.prompt = models.PromptStats(
            messages_in_history=len(past) + len(current),
            messages_sent=len(messages),
            tokens_estimate=models.estimate_messages_tokens(messages),
            preview=render(messages)[-PREVIEW_CHARS:],
        )
        if self.model is not None:
            started = time.perf_counter()
            report.reply, tool_items = await self._ask(turn_id, batch, messages, report)
            if self.redact is not None and report.reply:
                report.reply = self.redact(report.reply)
            new_items.extend(tool_items)
            report.timings_ms["model"] = (time.perf_counter() - started) * 1000
        report.status = models.TurnStatus.DEGRADED if degraded else models.TurnStatus.COMPLETED

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
                dataclasses.replace(models.HistoryItem.from_event(e, turn_id), text=event_text(e))
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

    async def _ask(
        self,
        turn_id: str,
        batch: models.Batch,
        messages: list[models.PromptMessage],
        report: models.TurnReport,
    ) -> tuple[str, list[models.HistoryItem]]:
        """Call the model, running tool rounds; returns the reply and the tool items."""
        assert self.model is not None
        tools = self.seams.tools
        schemas = tools.tool_schemas() if tools else None
        speakers = {e.login.lower(): e.user_id for e in batch.events}
        privileged = any(e.is_moderator for e in batch.chat)
        items: list[models.HistoryItem] = []
        reply = await self.model.chat(messages, tools=schemas)
        rounds = 0
        while reply.tool_calls and tools is not None and rounds < self.max_tool_rounds:
            rounds += 1
            call_item = models.HistoryItem(
                role=models.Role.ASSISTANT,
                text=reply.content,
                ts=batch.closed_at,
                turn_id=turn_id,
                tool_calls=reply.tool_calls,
            )
            outcome = await tools.run(
                turn_id, batch.stream, reply.tool_calls, speakers, privileged=privileged
            )
            items += [call_item, *outcome.results]
            report.tools.extend(outcome.records)
            messages = [*messages, *to_prompt([call_item, *outcome.results], "")]
            if outcome.changed_domains:
                # recorded at once: the state changed even if the next model call fails
                report.barrier = await tools.record_barrier(
                    turn_id,
                    outcome.changed_domains,
                    outcome.involved_user_ids,
                    {e.user_id for e in batch.chat},
                )
            reply = await self.model.chat(messages, tools=schemas)
        return reply.content.strip(), items
