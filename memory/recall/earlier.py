"""Episodes of the channel's earlier streams: the ``earlier`` source.

A question put to the bot, a reference to earlier or a "remember when" that the working history does
not cover plans the ``episodic`` source (this stream's episodes). When the channel has had earlier
streams (the planner's stream calendar knows one), the same question also plans ``earlier``: the
episodes of the channel's most recent earlier streams, bot replies included ("what did you
recommend me last month?"), ranked as one space (``ports.MemorySpaces.search_spaces``: in the
shared layout one query filtered by a set of tenants; in the per-space layout the streams'
collections, merged, at most ``settings.memory.earlier_streams`` of them). A question about the
last stream already searches that stream's episodes (``timewords.scoped``): no ``earlier`` source.

Episodes are public: the items name no viewer, their lines are attributed inside the text by login,
and the bot's reply is labelled as the bot's (``context.REPLY_LABEL``). Nothing of them ever enters a
viewer's personal space.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Protocol

from memory import identity, models
from memory.recall import context, sources
from memory.recall import planner_words as lexicon
from memory.spaces import records

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from memory import ports
    from memory.recall import timewords

KIND = "earlier"

#: a question about what the bot itself said (EN + IT): its replies are what is asked for. A
#: request in the present ("can you recommend a show?", "what do you suggest?") asks for new words,
#: not earlier ones: only the past forms count ("did you recommend", "you recommended")
BOT_WORDS = lexicon.phrases(
    "you said|you told me|you mentioned|you recommended|you suggested|did you recommend|"
    "did you suggest|"
    "you gave me|you listed|you explained|you wrote|you described|you provided|you shared|"
    "remind me|our previous conversation|our previous chat|our last conversation|"
    "our conversation|our chat|we talked about|we discussed|we were talking|you were saying|"
    "mi hai detto|mi avevi detto|hai detto|mi hai consigliato|mi avevi consigliato|"
    "mi hai suggerito|hai menzionato|hai citato|ricordami|la nostra conversazione|"
    "ne abbiamo parlato|abbiamo parlato|di cui abbiamo parlato|dicevi"
)


def asks_bot_words(text: str) -> bool:
    """Whether ``text`` asks about what the bot said ("you recommended…", "remind me…",
    "mi hai consigliato…")."""
    padded = f" {context.normalize(text)} "
    return any(f" {phrase} " in padded for phrase in BOT_WORDS)


class Streams(Protocol):
    """The channel's streams by chat time (``directory.ViewerDirectory``)."""

    def earlier(self, stream: str, *, before: datetime, limit: int) -> list[str]:
        """Up to ``limit`` other streams that started before ``before``, the latest first."""
        ...


def planned(
    stream_sources: Sequence[models.PlannedSource], when: timewords.When, texts: Sequence[str]
) -> list[models.PlannedSource]:
    """``stream_sources`` and, after this stream's ``episodic`` source, the ``earlier`` one with
    the same query and window: when an earlier stream is known and the question is not about
    the last stream (whose episodes ``episodic`` then searches), asking for the slots it asks
    for (``PlannedSource.asks``). When one of ``texts`` asks
    what the bot said, both episode sources are marked ``bot_words`` (``context``: the episodes
    that hold the bot's reply rank first)."""
    bot_words = any(asks_bot_words(text) for text in texts)
    out: list[models.PlannedSource] = []
    for source in stream_sources:
        if source.kind != "episodic":
            out.append(source)
            continue
        out.append(dataclasses.replace(source, bot_words=bot_words))
        if source.stream is None and when.previous_stream:
            out.append(
                models.PlannedSource(
                    kind=KIND,
                    query=source.query,
                    window=source.window,
                    bot_words=bot_words,
                    asks=source.asks,
                )
            )
    return out


class EarlierEpisodes:
    """The ``earlier`` fetcher: one search over the episodes of the ``max_streams`` latest
    streams before the batch's (a time window, when the question names one, first)."""

    def __init__(
        self, spaces: ports.MemorySpaces, streams: Streams, *, limit: int, max_streams: int
    ) -> None:
        self.spaces = spaces
        self.streams = streams
        self.limit = limit
        self.max_streams = max_streams

    async def __call__(
        self, source: models.PlannedSource, batch: models.Batch
    ) -> list[models.RecallItem]:
        before = min((event.ts for event in batch.events), default=None)
        if before is None or self.max_streams <= 0:
            return []
        found = self.streams.earlier(batch.stream, before=before, limit=self.max_streams)
        keys = [identity.episodic_key(stream) for stream in found]
        if not keys:
            return []
        kinds = {records.MemoryKind.EPISODIC}
        hits = await self.spaces.search_spaces(
            keys, source.query, limit=self.limit, kinds=kinds, window=source.window
        )
        if not hits and source.window is not None:  # nothing in the window: search them all
            hits = await self.spaces.search_spaces(
                keys, source.query, limit=self.limit, kinds=kinds
            )
        floor = hits[0].score * sources.RELATIVE_FLOOR if hits else 0.0
        return [
            sources.item(KIND, identity.stream_space(hit.record.stream or ""), None, hit)
            for hit in hits
            if hit.score >= floor
        ]
