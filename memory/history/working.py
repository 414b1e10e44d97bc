"""Working history: the recent messages and replies of each stream, capped.

In-process here (single process, no Redis); ``adapters/redis.RedisHistory`` is the shared one. Both
are rebuilt from the transcript after a restart (``rebuild``).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from memory import models, ports
    from memory.history import transcript


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
