"""The records of a memory space: what a stored memory is, and a search hit.

Kept apart from ``memory.models`` (chat, plans, reports) because only the memory spaces, the write
path and the operations on memory deal in stored documents.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memory import models

if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import datetime


#: what erasure leaves of a reply that answered (or may quote) an erased viewer
#: (``ops.erasure.REDACTED``): never shown, never indexed
REDACTED_REPLY = "[redacted]"


class MemoryKind(enum.StrEnum):
    """What a stored memory is."""

    PERSONAL = "personal"  #: a viewer's own durable statement (raw, with provenance)
    FACT = "fact"  #: a fact condensed by the model from a viewer's own statements
    CORRECTION = "correction"  #: replaces a personal memory; ranked above it
    EPISODIC = "episodic"  #: one public turn of a stream
    LORE = "lore"  #: canon loaded by the streamer


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryRecord:
    """One document of a memory space, with its provenance."""

    #: point id (a UUID string derived from turn id + author + kind, so retries make no duplicates)
    id: str
    #: ``viewer-<login>``, ``stream-<id>`` or ``lore``
    space: str
    kind: MemoryKind
    text: str
    #: the viewer the memory belongs to (personal spaces) — the author of every origin message
    user_id: str | None = None
    login: str | None = None
    stream: str | None = None
    turn_id: str | None = None
    origin_message_ids: tuple[str, ...] = ()
    #: user ids of the participants (episodic documents)
    participants: tuple[str, ...] = ()
    #: time of the first and last origin message
    first_ts: datetime | None = None
    last_ts: datetime | None = None
    created_at: datetime = field(default_factory=models.utcnow)
    #: for a correction: the id of the memory it replaces
    corrects: str | None = None
    #: the term ids of the question this memory answers (another viewer's message just before it),
    #: indexed with it at a lower weight (``lexical.document``)
    context_terms: tuple[int, ...] = ()
    #: the transcript id of that question (so forgetting its author can drop the terms)
    context_message_id: str | None = None
    #: that question's words (its last question, ``documents.asked_question``), embedded before the
    #: memory's text (``dense_text``) so that a reply's vector says what it answers; never shown
    #: as the viewer's words, and dropped with the terms when its author is forgotten
    context_question: str | None = None
    #: for such a reply, its author's own message just before the question (the thread it
    #: continues: "I had a picnic with friends from church" — "what games did you play?" —
    #: "charades!"), embedded after the memory's text (``dense_text``); never shown, and dropped
    #: when that message's memory or turn is forgotten (``context_thread_id``)
    context_thread: str | None = None
    #: the transcript id of that message
    context_thread_id: str | None = None
    #: free-form extra payload (e.g. lore entity names, the bot's reply of an episode)
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: the id of the newer memory of the same viewer that supersedes this one (``supersede``):
    #: kept, listed and erasable like any memory, but not recalled as current
    superseded_by: str | None = None
    #: when it was marked superseded
    superseded_at: datetime | None = None

    @property
    def reply(self) -> str | None:
        """The bot's reply of an episode (``extra["reply"]``), unless none or erased."""
        reply = self.extra.get("reply") if self.kind is MemoryKind.EPISODIC else None
        if not isinstance(reply, str) or not reply.strip() or reply == REDACTED_REPLY:
            return None
        return reply

    @property
    def search_text(self) -> str:
        """What the memory is found by (its dense and sparse vectors): its text, and an
        episode's reply too, so the bot's own words are searchable. An episode stored before
        the reply was indexed is found by its viewer lines until it is re-embedded."""
        reply = self.reply
        return f"{self.text}\n{reply}" if reply else self.text

    @property
    def dense_text(self) -> str:
        """What the dense vector is made of: ``search_text``, after the question it answers when
        it answers one ("where did you move from? Sweden!") and before its author's own message
        that came before that question (``context_thread``); the sparse vector has the question's
        terms at a lower weight instead (``lexical.document``)."""
        text = self.search_text
        if self.context_question:
            text = f"{self.context_question} {text}"
            if self.context_thread:
                text = f"{text} {self.context_thread}"
        return text

    @property
    def said_at(self) -> datetime:
        """When the memory was said: its last origin message, else when it was stored."""
        return self.last_ts or self.first_ts or self.created_at


#: a span of chat time a search is restricted to (defined with the plans that carry it)
TimeWindow = models.TimeWindow


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryHit:
    record: MemoryRecord
    score: float
    #: the cosine of the query's and the memory's dense vectors, where the search read them: the
    #: absolute relevance that ranks and fused scores do not carry (``recall.relevance``)
    similarity: float | None = None
