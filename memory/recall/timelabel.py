"""When a memory was said, as the prompt shows it: relative to the turn's chat time.

The turn's chat time is the time of the batch's newest message, never the wall clock: a replay of
an old log reads "yesterday" for the day before the logged stream, not for the day before the
replay. Calendar days are UTC days.

==========================  =========================================================
said                        label
==========================  =========================================================
in the turn's stream        ``earlier this stream`` (within a day of the chat time)
the same day                ``earlier today``
the day before              ``yesterday``
2-13 days before            ``N days ago``
2-7 weeks before            ``N weeks ago``
longer ago                  the date, ``2026-09-14``
==========================  =========================================================

A superseded memory (shown only for a question about the past) says so: ``3 weeks ago, since
superseded``. Channel state and lore carry no time (canonical, current): no label.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

    from memory import models

#: "earlier this stream" only for a memory of the turn's stream said less than this long ago
SAME_STREAM_SPAN = timedelta(days=1)
#: counted in days below this many days, in weeks below ``DATE_AFTER_DAYS``
WEEKS_FROM_DAYS = 14
#: shown as a date from this many days on
DATE_AFTER_DAYS = 56
SUPERSEDED = "since superseded"


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatClock:
    """The turn's chat time and stream: what time labels (and time windows) are relative to."""

    now: datetime
    stream: str | None = None

    @classmethod
    def of_batch(cls, batch: models.Batch) -> ChatClock:
        """The batch's newest message time (the turn's chat time) and its stream."""
        return cls(now=newest(event.ts for event in batch.events), stream=batch.stream)


def newest(moments: Iterable[datetime]) -> datetime:
    """The latest of ``moments`` (chat time of a batch: its newest message)."""
    return max(moments)


def age(said_at: datetime, clock: ChatClock, *, stream: str | None = None) -> str:
    """How long before the chat time ``said_at`` was, in words (see the module docstring)."""
    now = clock.now.astimezone(UTC)
    said = said_at.astimezone(UTC)
    if stream is not None and stream == clock.stream and now - said < SAME_STREAM_SPAN:
        return "earlier this stream"
    days = (now.date() - said.date()).days
    if days <= 0:
        return "earlier today"
    if days == 1:
        return "yesterday"
    if days < WEEKS_FROM_DAYS:
        return f"{days} days ago"
    if days < DATE_AFTER_DAYS:
        return f"{days // 7} weeks ago"
    return said.date().isoformat()


def label(item: models.RecallItem, clock: ChatClock) -> str:
    """The time label of a memory line (empty when the item has no time)."""
    if item.said_at is None:
        return ""
    when = age(item.said_at, clock, stream=item.stream)
    return f"{when}, {SUPERSEDED}" if item.superseded else when
