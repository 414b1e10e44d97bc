"""A chat session: chat events in → transcript → batches → turns (one at a time per stream) → out.

Every event is written to the transcript when it arrives, before its batch closes, so nothing is lost
when a turn fails. Commands (``!…``) go to the command handler, never to the model. ``Replay`` runs
turns inline (deterministic); ``LiveSession`` runs one task per stream and closes quiet batches on a
timer.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from memory import errors, ingest, models, ports
from memory.adapters import spool as spool_module
from memory.consolidate import jobs
from memory.history import batcher as batcher_module
from memory.history import transcript, working

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

    from memory import runtime as services_module

logger = logging.getLogger(__name__)

#: the error of a turn a crash left pending (closed when its stream is next served)
INTERRUPTED = "interrupted: the process stopped before this turn ended"
#: how long a live session's stop waits for the turns queued and in flight (``docker stop``
#: kills after 10 s); those still running then are cut short, their messages stored
STOP_SECONDS = 8.0


class Session:
    """Shared by replays and live sessions: ingestion, history rebuild, turn execution."""

    def __init__(
        self,
        services: services_module.Services,
        deliver: Callable[[models.TurnReport], Awaitable[None]],
        *,
        commands: ports.CommandHandler | None = None,
        sync_consolidation: bool = False,
    ) -> None:
        self.services = services
        self.deliver = deliver
        self.commands = commands
        self.sync_consolidation = sync_consolidation
        settings = services.settings
        self.batcher = batcher_module.Batcher(
            window_seconds=settings.batch.window_seconds, max_messages=settings.batch.max_messages
        )
        self._known_streams: set[str] = set()
        self.skipped = 0

    async def _prepare_stream(self, stream: str) -> None:
        if stream in self._known_streams:
            return
        store = self.services.transcript
        await store.ensure_stream(stream)
        closed = await store.close_pending(
            stream, reason=INTERRUPTED, max_attempts=self.services.settings.worker.max_attempts
        )
        if closed:
            logger.warning(
                "%d turn(s) of %s were left pending by an interrupted run: closed as failed, "
                "their messages queued for consolidation",
                len(closed),
                stream,
                extra={"action": "pending_closed"},
            )
        if await self.services.history.length(stream) == 0:
            count = await working.rebuild(
                self.services.history,
                self.services.transcript,
                stream,
                self.services.settings.memory.history_cap,
            )
            if count:
                logger.info(
                    "working history of %s rebuilt from the transcript: %d items", stream, count
                )
        self._known_streams.add(stream)

    def redact(self, event: models.ChatEvent) -> models.ChatEvent:
        """The event with secrets and personal data replaced, before anything is written."""
        redactor = self.services.redactor
        if redactor is None:
            return event
        result = redactor.redact(event.text)
        if not result.kinds:
            return event
        return dataclasses.replace(event, text=result.text, redacted=result.kinds)

    async def store(self, event: models.ChatEvent) -> bool:
        """Write the event to the transcript; False when a finished turn already answered it."""
        await self._prepare_stream(event.stream)
        if await self.services.transcript.answered([event.id]):
            self.skipped += 1
            return False
        await self.services.transcript.append_events([event])
        if self.services.viewers is not None:  # the planner recognises them when named later
            self.services.viewers.register(
                event.user_id, event.login, event.name, stream=event.stream, at=event.ts
            )
        if self.services.prefetch is not None:  # open their spaces while the batch is open
            self.services.prefetch.note(event)
        return True

    async def run_batch(self, batch: models.Batch) -> None:
        """Answer a batch in its own order: the chat before a command is answered and consolidated
        first, so ``!forget last`` right after a statement forgets that statement."""
        chat: list[models.ChatEvent] = []
        for event in batch.events:
            if not event.is_command:
                chat.append(event)
                continue
            if chat:
                turn_id = await self._turn(models.Batch(stream=batch.stream, events=tuple(chat)))
                chat = []
                await self.consolidated(turn_id)
            await self._command(event, batch)
        if chat:
            await self._turn(models.Batch(stream=batch.stream, events=tuple(chat)))
        if self.sync_consolidation:
            await self.consolidate_now()

    async def _turn(self, batch: models.Batch) -> str:
        report = await self.services.pipeline.run(batch)
        await self.deliver(report)
        return report.turn_id

    async def consolidated(self, turn_id: str, *, wait_seconds: float = 10.0) -> None:
        """Make sure a turn's consolidation ran (run it here, or wait for the worker that has it)."""
        await self.consolidate_now()
        db = self.services.db
        deadline = asyncio.get_running_loop().time() + wait_seconds
        while asyncio.get_running_loop().time() < deadline:
            job = await jobs.by_dedupe_key(db, transcript.CONSOLIDATE_TURN, turn_id)
            if job is None or job.status not in (jobs.JobStatus.TODO, jobs.JobStatus.DOING):
                return
            await asyncio.sleep(0.05)  # another worker holds it: bounded wait, then go on
        logger.warning("consolidation of turn %s still running: the command goes on", turn_id)

    async def _command(self, event: models.ChatEvent, batch: models.Batch) -> None:
        reply: str | None = None
        error: str | None = None
        if self.commands is None:
            error = "chat commands are not available here"
        else:
            try:
                reply = await self.commands.handle(event, batch)
            except Exception as exc:  # a failing command must not stop the chat
                logger.exception("command %r failed", event.text)
                error = str(exc) or type(exc).__name__
        report = await self.services.pipeline.record_command(event, reply, error)
        await self.deliver(report)

    async def consolidate_now(self) -> None:
        """Run the consolidation jobs that are due (``--sync-consolidation``, end of a replay)."""
        await self.services.worker.run_until_empty()


class Replay(Session):
    """Feeds a transcript through the pipeline in order; the batcher uses the events' own time."""

    async def feed(self, event: models.ChatEvent) -> None:
        event = self.redact(event)
        if not await self.store(event):
            return
        for batch in self.batcher.feed(event):
            await self.run_batch(batch)

    async def finish(self, streams: Iterable[str] | None = None) -> None:
        """Close the open batches (of ``streams``, or all) and answer them."""
        for batch in self.batcher.flush(streams):
            await self.run_batch(batch)


class LiveSession(Session):
    """Live chat: a queue and a task per stream (turns of a stream in order, streams concurrently),
    and a timer that closes a batch once its window has passed on the wall clock.

    Chat goes through ``memory.ingest``: while Postgres is down it waits in the ingest spool
    (``<data_dir>/ingest-spool.sqlite``) and is answered late, or marked ``missed`` when it waited
    longer than ``settings.ingest.max_age_seconds``. A batch whose turn cannot reach Postgres waits
    for it the same way."""

    SPOOL_FILE = "ingest-spool.sqlite"

    def __init__(
        self,
        services: services_module.Services,
        deliver: Callable[[models.TurnReport], Awaitable[None]],
        *,
        commands: ports.CommandHandler | None = None,
        sync_consolidation: bool = False,
    ) -> None:
        super().__init__(
            services, deliver, commands=commands, sync_consolidation=sync_consolidation
        )
        self._queues: dict[str, asyncio.Queue[models.Batch | None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._wake = asyncio.Event()
        self._timer: asyncio.Task[None] | None = None
        self._spool: spool_module.SqliteSpool | None = None
        self.ingest: ingest.Ingest | None = None

    async def feed(self, event: models.ChatEvent) -> None:
        if self.ingest is None:
            raise RuntimeError("use the live session as an async context manager")
        # secrets leave the text before anything is written, the ingest spool included
        await self.ingest.feed(self.redact(event))

    def _accept(self, event: models.ChatEvent) -> None:
        for batch in self.batcher.feed(event):
            self._enqueue(batch)
        self._wake.set()

    async def _miss(self, events: list[models.ChatEvent], waited: float) -> None:
        """Journal chat that waited too long as ``missed`` turns (one per stream)."""
        limit = self.services.settings.ingest.max_age_seconds
        reason = f"missed: waited {waited:.0f} s for Postgres (max age {limit:g} s)"
        by_stream: dict[str, list[models.ChatEvent]] = {}
        for event in events:
            by_stream.setdefault(event.stream, []).append(event)
        for stream, group in by_stream.items():
            report = await self.services.pipeline.record_missed(stream, group, reason)
            logger.warning(
                "%d message(s) of %s %s", len(group), stream, reason, extra={"action": "missed"}
            )
            await self.deliver(report)

    def _enqueue(self, batch: models.Batch) -> None:
        queue = self._queues.get(batch.stream)
        if queue is None:
            queue = self._queues[batch.stream] = asyncio.Queue()
            task = asyncio.create_task(self._stream_loop(queue), name=f"turns:{batch.stream}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        queue.put_nowait(batch)

    async def _stream_loop(self, queue: asyncio.Queue[models.Batch | None]) -> None:
        while (batch := await queue.get()) is not None:
            try:
                await self._run_waiting_for_postgres(batch)
            except Exception:
                logger.exception("turn of %s failed", batch.stream)
            finally:
                queue.task_done()
        queue.task_done()

    async def _run_waiting_for_postgres(self, batch: models.Batch) -> None:
        """Run a batch; while Postgres is down, wait, then run what is still unanswered — or mark
        it missed once it waited longer than the max age."""
        settings = self.services.settings.ingest
        started = time.monotonic()
        pending: models.Batch | None = batch
        while pending is not None:
            try:
                if time.monotonic() - started > settings.max_age_seconds:
                    await self._miss(list(pending.events), time.monotonic() - started)
                else:
                    await self.run_batch(pending)
                return
            except errors.StoreUnavailable as exc:
                logger.warning(
                    "turn of %s waits for Postgres (%s)",
                    batch.stream,
                    exc,
                    extra={"action": "turn_wait"},
                )
            await asyncio.sleep(settings.retry_seconds)
            pending = await self._unanswered(pending)

    async def _unanswered(self, batch: models.Batch) -> models.Batch | None:
        """What of ``batch`` no finished turn answered yet (all of it while Postgres is down)."""
        try:
            answered = await self.services.transcript.answered(batch.message_ids)
        except errors.StoreUnavailable:
            return batch
        events = tuple(e for e in batch.events if e.id not in answered)
        return models.Batch(stream=batch.stream, events=events) if events else None

    async def _tick(self) -> None:
        while True:
            deadline = self.batcher.next_deadline()
            self._wake.clear()
            if deadline is None:
                await self._wake.wait()
                continue
            delay = (deadline - datetime.now(UTC)).total_seconds()
            if delay > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), delay)
                continue
            for batch in self.batcher.close_due(datetime.now(UTC)):
                self._enqueue(batch)

    async def __aenter__(self) -> LiveSession:
        settings = self.services.settings
        self._spool = spool_module.SqliteSpool(
            settings.data_dir / self.SPOOL_FILE, capacity=settings.ingest.spool_capacity
        )
        self.ingest = ingest.Ingest(
            self._spool,
            store=self.store,
            accept=self._accept,
            miss=self._miss,
            max_age_seconds=settings.ingest.max_age_seconds,
            retry_seconds=settings.ingest.retry_seconds,
            metrics=self.services.reliability,
        )
        self._timer = asyncio.create_task(self._tick(), name="batch-timer")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if not await self.drain(within=STOP_SECONDS):
            logger.warning(
                "the turns still running after %.0f s were cut short: their messages are stored "
                "(an unfinished turn is closed as failed when its stream is next served)",
                STOP_SECONDS,
                extra={"action": "turns_cut"},
            )
            for task in self._tasks:
                task.cancel()
        if self.ingest is not None:
            await self.ingest.aclose()  # what still waits for Postgres stays for the next run
        if self._spool is not None:
            self._spool.close()
        if self._timer is not None:
            self._timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer
        for queue in self._queues.values():
            queue.put_nowait(None)
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def drain(self, *, within: float | None = None) -> bool:
        """Close the open batches and wait until every queued turn has run (at most ``within``
        seconds: whether they all did)."""
        for batch in self.batcher.flush():
            self._enqueue(batch)

        async def joined() -> None:
            for queue in list(self._queues.values()):
                await queue.join()

        try:
            async with asyncio.timeout(within):
                await joined()
        except TimeoutError:
            return False
        return True
