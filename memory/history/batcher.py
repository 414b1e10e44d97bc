"""The batcher: groups a stream's chat into batches the bot answers together.

A batch closes after a window of chat time (default 2 s after its first message) or after N messages
(default 20), whichever comes first. Time is the events' own timestamps, so a replay of a transcript
is deterministic and fast (no sleeping); live chat adds a timer (``due``/``close_due``) that closes a
quiet batch when its window has passed on the wall clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from memory import models

if TYPE_CHECKING:
    from collections.abc import Iterable


@dataclass(slots=True)
class _Open:
    events: list[models.ChatEvent] = field(default_factory=list)

    @property
    def opened_at(self) -> datetime:
        return self.events[0].ts


class Batcher:
    """Per-stream batching. Feed events in time order; closed batches come back."""

    def __init__(self, *, window_seconds: float, max_messages: int) -> None:
        self.window = timedelta(seconds=window_seconds)
        self.max_messages = max_messages
        self._open: dict[str, _Open] = {}

    def feed(self, event: models.ChatEvent) -> list[models.Batch]:
        """Add an event; returns the batches it closed (its own stream's previous one, and/or its own)."""
        closed: list[models.Batch] = []
        current = self._open.get(event.stream)
        if current is not None and event.ts - current.opened_at >= self.window:
            closed.append(self._close(event.stream))
            current = None
        if current is None:
            current = self._open[event.stream] = _Open()
        current.events.append(event)
        if len(current.events) >= self.max_messages:
            closed.append(self._close(event.stream))
        return closed

    def due(self, now: datetime) -> list[str]:
        """Streams whose open batch's window has passed at ``now``."""
        return [s for s, b in self._open.items() if now - b.opened_at >= self.window]

    def close_due(self, now: datetime) -> list[models.Batch]:
        return [self._close(stream) for stream in self.due(now)]

    def next_deadline(self) -> datetime | None:
        """When the oldest open batch's window ends."""
        if not self._open:
            return None
        return min(b.opened_at for b in self._open.values()) + self.window

    def flush(self, streams: Iterable[str] | None = None) -> list[models.Batch]:
        """Close the open batches (of ``streams``, or all)."""
        names = list(streams if streams is not None else self._open)
        return [self._close(s) for s in names if s in self._open]

    def pending(self) -> int:
        return sum(len(b.events) for b in self._open.values())

    def _close(self, stream: str) -> models.Batch:
        batch = self._open.pop(stream)
        return models.Batch(stream=stream, events=tuple(batch.events))
