"""Working history: the recent messages and replies of each stream, capped.

In-process here (single process, no Redis); ``adapters/redis.RedisHistory`` is the shared one. Both
are rebuilt from the transcript after a restart (``rebuild``). ``Fallback`` keeps turns going when
the shared one is unavailable: reads come from the transcript (the turn is ``degraded``), and the
first read after the store is back rebuilds it from the transcript.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import TYPE_CHECKING

from memory import errors

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Sequence

    from memory import models, ports
    from memory.history import transcript

logger = logging.getLogger(__name__)


class InProcessHistory:
    """``ports.WorkingHistory`` in a dict of deques."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._streams: dict[str, deque[models.HistoryItem]] = {}

    def _stream(self, stream: str) -> deque[models.HistoryItem]:
        return self._streams.setdefault(stream, deque(maxlen=self.cap))

    async def append(self, stream: str, items: Sequence[models.HistoryItem]) -> None:
        self._stream(stream).extend(items)

    async def recent(self, stream: str, limit: int | None = None) -> list[models.HistoryItem]:
        items = list(self._streams.get(stream, ()))
        return items if limit is None else items[-limit:] if limit else []

    async def replace(self, stream: str, items: Sequence[models.HistoryItem]) -> None:
        self._streams[stream] = deque(items, maxlen=self.cap)

    async def length(self, stream: str) -> int:
        return len(self._streams.get(stream, ()))


async def rebuild(
    history: ports.WorkingHistory, store: transcript.Transcript, stream: str, cap: int
) -> int:
    """Load a stream's working history from the transcript; returns how many items."""
    items = await store.history(stream, cap)
    await history.replace(stream, items)
    return len(items)


class Fallback:
    """``ports.WorkingHistory`` that outlives its store (Redis).

    A read the store cannot answer comes from the transcript (the truth it mirrors) and is
    flagged degraded; a write it cannot take is dropped (the transcript has it) and marks the
    stream stale; the first read of a stale stream once the store answers again rebuilds it from the
    transcript, so nothing said during the outage is missing from it. ``on_fallback(operation)``
    counts each fallback (``read``, ``write``; the metric ``livememory_history_fallback_total``).
    """

    def __init__(
        self,
        history: ports.WorkingHistory,
        store: transcript.Transcript,
        cap: int,
        *,
        on_fallback: Callable[[str], None] | None = None,
    ) -> None:
        self.inner = history
        self.store = store
        self.cap = cap
        self.on_fallback = on_fallback
        self._stale: set[str] = set()

    def _count(self, operation: str) -> None:
        if self.on_fallback is not None:
            self.on_fallback(operation)

    def _lost(self, stream: str, exc: errors.StoreUnavailable) -> None:
        if stream not in self._stale:  # the outage itself is told by the store's condition
            logger.info(
                "working history of %s unavailable (%s): the transcript stands in",
                stream,
                exc,
                extra={"action": "history_fallback"},
            )
        self._stale.add(stream)

    async def read(
        self, stream: str, *, unanswered: Collection[str] = ()
    ) -> tuple[list[models.HistoryItem], bool]:
        """The stream's working history and whether it came from the transcript (degraded).

        ``unanswered``: the message ids of the turn about to run; a rebuild leaves them out (the
        turn appends them with its reply)."""
        if stream in self._stale:
            try:
                items = await self.store.history(stream, self.cap)
                await self.inner.replace(
                    stream, [i for i in items if i.message_id not in unanswered]
                )
            except errors.StoreUnavailable:
                pass
            else:
                self._stale.discard(stream)
                logger.info("working history of %s is back, rebuilt from the transcript", stream)
        if stream not in self._stale:
            try:
                return await self.inner.recent(stream), False
            except errors.StoreUnavailable as exc:
                self._lost(stream, exc)
        self._count("read")
        return await self.store.history(stream, self.cap), True

    async def recent(self, stream: str, limit: int | None = None) -> list[models.HistoryItem]:
        items, _ = await self.read(stream)
        return items if limit is None else items[-limit:] if limit else []

    async def append(self, stream: str, items: Sequence[models.HistoryItem]) -> None:
        try:
            await self.inner.append(stream, items)
        except errors.StoreUnavailable as exc:
            self._lost(stream, exc)
            self._count("write")

    async def replace(self, stream: str, items: Sequence[models.HistoryItem]) -> None:
        try:
            await self.inner.replace(stream, items)
        except errors.StoreUnavailable as exc:
            self._lost(stream, exc)
            self._count("write")
        else:
            self._stale.discard(stream)

    async def length(self, stream: str) -> int:
        try:
            return await self.inner.length(stream)
        except errors.StoreUnavailable as exc:
            self._lost(stream, exc)
            return 0
