"""Durable ingest: live chat reaches the transcript, or waits in a bounded spool until it can.

``Ingest`` sits between a live chat source (Twitch, the console) and the session. A message is
stored in the transcript as it arrives; when Postgres is unavailable it goes to the spool
(``adapters/spool.py``, SQLite in the data folder, fsync'd) and so does every message after it, so
the order holds. A drain task writes the spool to Postgres, oldest first, once it answers again:
a message that waited at most ``max_age_seconds`` is answered late (handed to the batcher as if it
had just arrived); an older one is stored and journaled as a ``missed`` turn (consolidated, never
answered). A full spool is a loud error naming how many messages it could not hold.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from memory import errors, models

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

logger = logging.getLogger(__name__)

#: entries written to Postgres per pass of the drain
DRAIN_CHUNK = 100


class Spool(Protocol):
    """A durable FIFO of text payloads (``adapters.spool.SqliteSpool``)."""

    def __len__(self) -> int: ...

    def put(self, payload: str, *, now: float | None = None) -> bool: ...

    def head(self, limit: int) -> Sequence[Any]: ...

    def remove(self, seqs: list[int]) -> None: ...

    def oldest_age(self, now: float | None = None) -> float: ...


class IngestMetrics(Protocol):
    def spool_state(self, size: int, oldest_age_seconds: float) -> None: ...

    def spool_refused(self) -> None: ...


def encode(event: models.ChatEvent) -> str:
    line = event.to_json()
    line["kind"] = event.kind.value
    return json.dumps(line)


def decode(payload: str) -> models.ChatEvent:
    data = json.loads(payload)
    return models.ChatEvent(
        id=data["id"],
        stream=data["stream"],
        user_id=data["user_id"],
        login=data["login"],
        name=data.get("name"),
        badges=tuple(data.get("badges", ())),
        text=data["text"],
        ts=datetime.fromisoformat(data["ts"]),
        kind=models.EventKind(data.get("kind", "message")),
        event=data.get("event"),
        reply_to=data.get("reply_to"),
    )


class Ingest:
    """Stores live chat, spooling it while Postgres is down.

    Parameters
    ----------
    spool:
        Where chat waits for Postgres.
    store:
        Writes an event to the transcript; False when a finished turn already answered it; raises
        ``errors.StoreUnavailable`` when Postgres is down.
    accept:
        Takes a stored event on to be answered (the batcher).
    miss:
        Journals stored events that waited too long as a ``missed`` turn.
    """

    def __init__(
        self,
        spool: Spool,
        *,
        store: Callable[[models.ChatEvent], Awaitable[bool]],
        accept: Callable[[models.ChatEvent], None],
        miss: Callable[[list[models.ChatEvent], float], Awaitable[None]],
        max_age_seconds: float,
        retry_seconds: float,
        metrics: IngestMetrics | None = None,
    ) -> None:
        self.spool = spool
        self.store = store
        self.accept = accept
        self.miss = miss
        self.max_age_seconds = max_age_seconds
        self.retry_seconds = retry_seconds
        self.metrics = metrics
        #: messages a full spool could not hold (each one logged as an error)
        self.refused = 0
        #: set while the spool is empty
        self.drained = asyncio.Event()
        self._drainer: asyncio.Task[None] | None = None
        self._publish()
        if len(spool):  # left by an earlier run: write it out once Postgres answers
            logger.warning("%d chat message(s) wait in the ingest spool", len(spool))
            self._start_drain()

    @property
    def waiting(self) -> int:
        """Messages in the spool."""
        return len(self.spool)

    async def feed(self, event: models.ChatEvent) -> None:
        """Store ``event`` and take it on, or spool it (Postgres down, or chat already waiting)."""
        if not self.waiting:
            try:
                stored = await self.store(event)
            except errors.StoreUnavailable as exc:
                logger.info(  # the outage itself is told once by Postgres's condition
                    "Postgres unavailable (%s): chat waits in the ingest spool",
                    exc,
                    extra={"action": "ingest_spool"},
                )
            else:
                if stored:
                    self.accept(event)
                return
        self._put(event)
        self._start_drain()

    def _put(self, event: models.ChatEvent) -> None:
        if self.spool.put(encode(event)):
            self._publish()
            return
        self.refused += 1
        if self.metrics is not None:
            self.metrics.spool_refused()
        logger.error(
            "INGEST SPOOL FULL (%d messages waiting for Postgres): message %s of %s by %s was NOT "
            "kept; %d message(s) refused so far",
            self.waiting,
            event.id,
            event.stream,
            event.login,
            self.refused,
            extra={"action": "ingest_spool_full"},
        )

    def _publish(self) -> None:
        if self.waiting:
            self.drained.clear()
        else:
            self.drained.set()
        if self.metrics is not None:
            self.metrics.spool_state(self.waiting, self.spool.oldest_age())

    def _start_drain(self) -> None:
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain(), name="ingest-drain")

    async def _drain(self) -> None:
        while self.waiting:
            try:
                await self._drain_chunk()
            except errors.StoreUnavailable as exc:
                logger.info("ingest spool: Postgres still unavailable (%s)", exc)
                self._publish()
                await asyncio.sleep(self.retry_seconds)
        self._publish()
        logger.info("ingest spool drained", extra={"action": "ingest_drained"})

    async def _drain_chunk(self) -> None:
        """Write the oldest entries to Postgres, in order; raises ``StoreUnavailable`` midway."""
        late: list[tuple[int, models.ChatEvent, float]] = []
        try:
            for entry in self.spool.head(DRAIN_CHUNK):
                event = decode(entry.payload)
                stored = await self.store(event)
                waited = time.time() - entry.received_at
                if stored and waited > self.max_age_seconds:
                    late.append((entry.seq, event, waited))
                    continue
                await self._flush_missed(late)  # the older ones first
                if stored:
                    self.accept(event)
                self.spool.remove([entry.seq])
        finally:
            with contextlib.suppress(errors.StoreUnavailable):
                await self._flush_missed(late)
            self._publish()

    async def _flush_missed(self, late: list[tuple[int, models.ChatEvent, float]]) -> None:
        if not late:
            return
        await self.miss([event for _, event, _ in late], max(w for _, _, w in late))
        self.spool.remove([seq for seq, _, _ in late])
        late.clear()

    async def aclose(self) -> None:
        """Stop draining (what is left stays in the spool for the next run)."""
        if self._drainer is not None:
            self._drainer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._drainer
