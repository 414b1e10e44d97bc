"""Erasure: a viewer's words leave every store ("forget means forgotten, everywhere").

``Eraser.erase_viewer`` is what ``!forget me`` + confirm, ``!forget @x all`` (moderators) and
``python -m memory.admin forget --viewer X --everywhere`` run, after ``Operations.forget_viewer``
dropped the viewer's personal space and profile:

- Postgres, in one transaction (``erase_viewer``, migration 0010): their message texts, the replies
  and reports of the turns that answered or recalled them, the prompt previews of later turns of
  their streams, the tool calls of those turns or naming them, the channel-state rows about them,
  their profile, the history summaries that may quote them; an ``erasures`` row (no text). The
  append-only transcript admits exactly this rewrite (texts to ``[erased]``, nothing else).
- Episodic memory: their lines leave the episodes (other viewers' lines stay); the bot's reply of
  those turns, and of turns that recalled them, is redacted.
- Embedded Qdrant: the SQLite storage of the spaces touched is vacuumed (deleted points' bytes).
- Working history (Redis list and this process's copy, or the in-process one): their items, the
  summaries and the bot's items of the turns above leave it.
- Retrieval caches: the viewer's, the episodic and the channel-state results are dropped.

A cache or history in another process without Redis (the in-process defaults) is not reachable
from here; that is why, while a bot runs on the data folder, ``python -m memory.admin forget`` runs
inside the bot (``memory.ops.control_server``) and erases from its own history and caches. A bot
started later rebuilds its history from the (erased) transcript.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory import identity, models, sql
from memory.adapters import postgres
from memory.consolidate import consolidation, documents

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping, Sequence

    from config.settings import Settings
    from memory import ports
    from memory.spaces import records

logger = logging.getLogger(__name__)

#: what replaces an erased text in the transcript, the reports and the working history
ERASED = "[erased]"
#: what replaces a redacted reply inside an episodic document
REDACTED = "[redacted]"
#: a history item quoting one of the viewer's texts at least this long goes too
QUOTE_CHARS = 8


@dataclass(frozen=True, slots=True, kw_only=True)
class Erasure:
    """What ``erase_viewer`` changed besides the personal space and the profile."""

    #: Postgres rows rewritten or deleted, per kind (the ``erasures`` row's counts)
    counts: dict[str, int]
    episodes_redacted: int = 0
    episodes_deleted: int = 0
    history_items: int = 0
    storage_files: int = 0
    #: other viewers' memories re-indexed without the viewer's question terms
    contexts_dropped: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            **self.counts,
            "episodes_redacted": self.episodes_redacted,
            "episodes_deleted": self.episodes_deleted,
            "history_items": self.history_items,
            "storage_files": self.storage_files,
            "contexts_dropped": self.contexts_dropped,
        }


def preview_window(settings: Settings) -> int | None:
    """How long a message can stay in a prompt: the working history's cap, or forever (None) with
    the summarizing reducer, whose summary may carry it on."""
    return None if settings.history.reducer == "summarizing" else settings.memory.history_cap


class Eraser:
    """Erases a viewer from Postgres, the memory spaces, the working history and the caches."""

    def __init__(
        self,
        db: postgres.Database,
        spaces: ports.MemorySpaces,
        *,
        history: ports.WorkingHistory | None = None,
        invalidator: consolidation.CacheInvalidator | None = None,
        preview_window: int | None = None,
    ) -> None:
        self.db = db
        self.spaces = spaces
        self.history = history
        self.invalidator = invalidator or consolidation.NoCache()
        #: later turns' prompt previews are erased until this many messages came after each of
        #: the viewer's (``preview_window(settings)``); None: every later turn of their streams
        self.preview_window = preview_window

    async def erase_viewer(self, user_id: str, *, actor: str, reason: str = "forget") -> Erasure:
        """Erase a viewer's words everywhere (call it under the viewer's lock)."""
        with postgres.wrap_errors("erase viewer"):
            texts = [
                row["text"]
                for row in await self.db.pool.fetch(sql.queries["erasure_viewer_texts"], user_id)
            ]
            result = json.loads(
                await self.db.pool.fetchval(
                    sql.queries["erasure_viewer"], user_id, actor, reason, self.preview_window
                )
            )
        answered = await self._answered(user_id)
        streams: list[str] = result.pop("streams")
        turn_ids = set(result.pop("turn_ids"))
        rewritten, deleted = await self._episodes(user_id, streams, turn_ids)
        contexts = await self._drop_contexts(answered)
        touched = [
            identity.personal_key(user_id),
            *map(identity.episodic_key, streams),
            *(identity.personal_key(other) for other in answered),
        ]
        files = await self.spaces.vacuum(touched)
        items = await self._history(streams, user_id, turn_ids, texts)
        await self.invalidator.invalidate_viewer(user_id, everywhere=True)
        drop = getattr(self.invalidator, "invalidate_kind", None)
        if drop is not None:
            await drop("state")
        return Erasure(
            counts={k: int(v) for k, v in result.items()},
            episodes_redacted=rewritten,
            episodes_deleted=deleted,
            history_items=items,
            storage_files=files,
            contexts_dropped=contexts,
        )

    async def _answered(self, user_id: str) -> dict[str, set[str]]:
        """Viewer → the ids of this viewer's messages that one of theirs came right after."""
        with postgres.wrap_errors("erase viewer"):
            rows = await self.db.pool.fetch(sql.queries["erasure_answered"], user_id)
        answered: dict[str, set[str]] = {}
        for row in rows:
            answered.setdefault(row["user_id"], set()).add(row["question_id"])
        return answered

    async def _drop_contexts(self, answered: Mapping[str, Collection[str]]) -> int:
        """Re-index, without the erased viewer's terms and words, the other viewers' memories that
        answered one of their questions (``lexical.context_terms``, ``context_question``: the
        dense vector is made again from the memory's own text); returns how many."""
        dropped = 0
        for other, questions in answered.items():
            dropped += await reindex_without(
                self.spaces,
                identity.personal_key(other),
                lambda record: record.context_message_id in questions,
                context_terms=(), context_message_id=None, context_question=None,
            )  # fmt: skip
        return dropped

    async def _episodes(
        self, user_id: str, streams: Sequence[str], turn_ids: Collection[str]
    ) -> tuple[int, int]:
        rewritten, deleted = 0, 0
        for stream in streams:
            space = identity.episodic_key(stream)
            for record in await self.spaces.list(space, limit=consolidation.LIST_LIMIT):
                if user_id in record.participants:
                    replacement = redact_episode(record, user_id)
                elif record.turn_id in turn_ids and record.extra.get("reply") not in (
                    None,
                    REDACTED,
                ):
                    # a reply that recalled the viewer's words
                    replacement = dataclasses.replace(
                        record, extra={**record.extra, "reply": REDACTED, "redacted": True}
                    )
                else:
                    continue
                if replacement is None:
                    deleted += await self.spaces.delete(record.space, [record.id])
                else:
                    await self.spaces.upsert([replacement])
                    rewritten += 1
        return rewritten, deleted

    async def _history(
        self,
        streams: Sequence[str],
        user_id: str,
        turn_ids: Collection[str],
        texts: Sequence[str],
    ) -> int:
        """Drop the viewer's items from the working history of ``streams``; returns how many
        items were dropped or erased."""
        if self.history is None:
            return 0
        quotes = [text for text in texts if len(text) >= QUOTE_CHARS]
        changed = 0
        for stream in streams:
            items = await self.history.recent(stream)
            kept = [
                s
                for s in (scrub_item(i, user_id, turn_ids, quotes) for i in items)
                if s is not None
            ]
            if kept != items:
                changed += sum(1 for i in items if i not in kept)
                await self.history.replace(stream, kept)
        return changed


def scrub_item(
    item: models.HistoryItem, user_id: str, turn_ids: Collection[str], quotes: Sequence[str]
) -> models.HistoryItem | None:
    """A working-history item as it may stay after ``user_id`` is erased (None: it goes)."""
    if item.user_id == user_id or item.summary or any(q in item.text for q in quotes):
        return None
    if item.turn_id in turn_ids and item.role is not models.Role.USER:
        if item.role is models.Role.TOOL:
            return None
        return dataclasses.replace(item, text=ERASED, tool_calls=())
    return item


async def reindex_without(
    spaces: ports.MemorySpaces,
    space: str,
    matches: Callable[[records.MemoryRecord], bool],
    **cleared: Any,
) -> int:
    """Store again, with the fields ``cleared`` (the context of a memory: the question it answers,
    the thread it continues), the memories of ``space`` that ``matches``: their vectors are made
    again without it. Returns how many."""
    replaced = [
        dataclasses.replace(record, **cleared)
        for record in await spaces.list(space, limit=consolidation.LIST_LIMIT)
        if matches(record)
    ]
    if replaced:
        await spaces.upsert(replaced)
    return len(replaced)


def redact_episode(record: records.MemoryRecord, user_id: str) -> records.MemoryRecord | None:
    """The episodic document without ``user_id``'s messages (None when nothing else remains).

    The bot's reply is redacted too: it answered (and may quote or name) the viewer."""
    messages = [m for m in record.extra.get("messages", []) if m.get("user_id") != user_id]
    if not messages:
        return None
    reply = record.extra.get("reply")
    return dataclasses.replace(
        record,
        text=documents.episode_text(messages),
        origin_message_ids=tuple(m["id"] for m in messages),
        participants=tuple(p for p in record.participants if p != user_id),
        extra={
            **record.extra,
            "messages": messages,
            "reply": REDACTED if reply else reply,
            "redacted": True,
        },
    )
