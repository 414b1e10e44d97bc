"""Domain records shared by every layer: chat events, batches, history items, plans, recall, reports.

Records are frozen dataclasses; the JSON shapes of DESIGN.md (transcript line, turn report) are built
and parsed here and nowhere else.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

#: badges that carry authority or status in chat
KNOWN_BADGES = frozenset({"broadcaster", "moderator", "vip", "subscriber"})
#: platform events a transcript line of kind "event" may name
KNOWN_EVENTS = frozenset({"sub", "raid", "cheer", "follow"})


class EventKind(enum.StrEnum):
    """What a transcript row is."""

    MESSAGE = "message"  #: a viewer's chat message
    EVENT = "event"  #: a platform event (sub, raid, cheer, follow)
    COMMAND = "command"  #: a chat command (``!forget …``), never sent to the model


class Role(enum.StrEnum):
    """The role of a history item in the prompt."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class TurnStatus(enum.StrEnum):
    PENDING = "pending"  #: opened, not ended yet (or ended by a crash: closed at the next start)
    COMPLETED = "completed"
    #: answered without a part (the working history fell back to the transcript)
    DEGRADED = "degraded"
    FAILED = "failed"  #: not answered; ``error`` says why
    #: stored too late to answer (waited in the ingest spool longer than its max age)
    MISSED = "missed"
    #: the reply policy chose not to speak (``TurnReport.reason`` says why)
    SILENT = "silent"


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatEvent:
    """One chat message or platform event, from Twitch, the console or a transcript line."""

    #: message id, unique across the transcript
    id: str
    #: stream session id
    stream: str
    #: stable platform user id of the author
    user_id: str
    #: Twitch login of the author as seen in this message
    login: str
    #: display name
    name: str | None = None
    badges: tuple[str, ...] = ()
    text: str
    ts: datetime
    kind: EventKind = EventKind.MESSAGE
    #: platform event name when ``kind`` is ``event``
    event: str | None = None
    #: the message this one replies to
    reply_to: str | None = None
    #: kinds of secrets or personal data replaced in ``text`` at ingestion (``[redacted:<kind>]``)
    redacted: tuple[str, ...] = ()

    @property
    def is_command(self) -> bool:
        return self.kind is EventKind.COMMAND

    @property
    def is_moderator(self) -> bool:
        return "moderator" in self.badges or "broadcaster" in self.badges

    @property
    def is_broadcaster(self) -> bool:
        return "broadcaster" in self.badges

    def to_json(self) -> dict[str, Any]:
        """The transcript line of DESIGN.md."""
        line: dict[str, Any] = {
            "ts": self.ts.astimezone(UTC).isoformat().replace("+00:00", "Z"),
            "stream": self.stream,
            "id": self.id,
            "user_id": self.user_id,
            "login": self.login,
            "name": self.name,
            "badges": list(self.badges),
            "text": self.text,
        }
        if self.kind is not EventKind.MESSAGE:
            line["kind"] = self.kind.value
        if self.event:
            line["event"] = self.event
        if self.reply_to:
            line["reply_to"] = self.reply_to
        return line


@dataclass(frozen=True, slots=True, kw_only=True)
class Batch:
    """Messages of one stream that the bot answers together."""

    stream: str
    events: tuple[ChatEvent, ...]

    @property
    def message_ids(self) -> list[str]:
        return [event.id for event in self.events]

    @property
    def opened_at(self) -> datetime:
        return self.events[0].ts

    @property
    def closed_at(self) -> datetime:
        return self.events[-1].ts

    @property
    def chat(self) -> tuple[ChatEvent, ...]:
        """The events that go to the model (commands excluded)."""
        return tuple(event for event in self.events if not event.is_command)

    @property
    def commands(self) -> tuple[ChatEvent, ...]:
        return tuple(event for event in self.events if event.is_command)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """A tool call the model asked for."""

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": dict(self.arguments)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ToolCall:
        return cls(id=str(data["id"]), name=str(data["name"]), arguments=dict(data["arguments"]))


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryItem:
    """One entry of a stream's working history (and of the prompt before reduction)."""

    role: Role
    text: str
    ts: datetime
    #: the turn this item belongs to; a turn starts at a viewer batch
    turn_id: str | None = None
    #: transcript message id (viewer messages)
    message_id: str | None = None
    user_id: str | None = None
    login: str | None = None
    #: tool calls of an assistant item
    tool_calls: tuple[ToolCall, ...] = ()
    #: on a tool result: the id of the call it answers
    tool_call_id: str | None = None
    tool_name: str | None = None
    #: a summary item made by the summarizing reducer
    summary: bool = False

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["role"] = self.role.value
        data["ts"] = self.ts.isoformat()
        data["tool_calls"] = [call.to_json() for call in self.tool_calls]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HistoryItem:
        values = dict(data)
        values["role"] = Role(values["role"])
        values["ts"] = datetime.fromisoformat(values["ts"])
        values["tool_calls"] = tuple(ToolCall.from_json(c) for c in values.get("tool_calls", ()))
        return cls(**values)

    @classmethod
    def from_event(cls, event: ChatEvent, turn_id: str | None) -> HistoryItem:
        return cls(
            role=Role.USER,
            text=event.text,
            ts=event.ts,
            turn_id=turn_id,
            message_id=event.id,
            user_id=event.user_id,
            login=event.login,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptMessage:
    """A message as the chat model receives it."""

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_name: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelReply:
    """What the chat model answered."""

    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannedViewer:
    login: str
    user_id: str
    score: float
    #: the observable signals that gave the score, strongest first
    signals: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class TimeWindow:
    """A span of chat time a search is restricted to (``MemoryRecord.said_at``); an open end is
    None. ``since`` is inclusive, ``until`` exclusive."""

    since: datetime | None = None
    until: datetime | None = None

    def contains(self, moment: datetime) -> bool:
        return (self.since is None or moment >= self.since) and (
            self.until is None or moment < self.until
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannedSource:
    """One source the planner decided to consult."""

    #: ``profile``, ``recall``, ``episodic``, ``lore`` or ``state``
    kind: str
    #: login of the viewer the source is about (None for stream-wide sources)
    viewer: str | None = None
    user_id: str | None = None
    query: str = ""
    #: the viewer explicitly asked what the bot remembers (failure must be admitted in the prompt)
    explicit: bool = False
    #: the span of chat time the question is about ("last week", "ieri"): searched first, and
    #: without it when nothing is found in it (``memory.recall.timewords``)
    window: TimeWindow | None = None
    #: a question about the past ("where did I live before?"): superseded memories are recalled
    #: too, labelled as such
    past: bool = False
    #: the stream whose episodes an ``episodic`` source searches (None: the batch's; a question
    #: about the last stream: the previous one)
    stream: str | None = None
    #: an episode source for a question about what the bot said ("you recommended…", "remind
    #: me…"): its episodes that hold the bot's reply rank first (``memory.recall.context``)
    bot_words: bool = False
    #: an open question about the viewer, naming nothing in particular ("what do you remember
    #: about me?"): every item of theirs is worth showing (``memory.recall.relevance``)
    broad: bool = False
    #: the profile slots the question asks for (``memory.recall.asked``: "where does @bob live?"
    #: → ``location``): a viewer's item that states one answers it, and the viewer's other items
    #: and a stream-wide source asked only that are left out (``memory.recall.relevance``)
    asks: frozenset[str] = frozenset()

    @property
    def key(self) -> str:
        """The source's name in timings and degraded lists, e.g. ``recall:alice``."""
        return f"{self.kind}:{self.viewer}" if self.viewer else self.kind


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    viewers: tuple[PlannedViewer, ...] = ()
    sources: tuple[PlannedSource, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "viewers": [
                {
                    "login": v.login,
                    "user_id": v.user_id,
                    "score": v.score,
                    "signals": list(v.signals),
                }
                for v in self.viewers
            ],
            "sources": [
                {
                    "kind": s.kind,
                    "viewer": s.viewer,
                    "query": s.query,
                    "window": _window_json(s.window),
                    "past": s.past,
                    "stream": s.stream,
                    "bot_words": s.bot_words,
                    "broad": s.broad,
                }
                for s in self.sources
            ],
        }


def _iso(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z") if moment else None


def _window_json(window: TimeWindow | None) -> dict[str, str | None] | None:
    if window is None:
        return None
    return {"since": _iso(window.since), "until": _iso(window.until)}


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallItem:
    """One memory that retrieval brought back, with its provenance."""

    source: str
    space: str
    viewer: str | None
    memory_id: str
    text: str
    origin_message_ids: tuple[str, ...] = ()
    score: float = 0.0
    #: chat time of the memory (a profile fact: when its value was stated); the prompt shows it
    #: relative to the turn's chat time. None for channel state and lore (canon: no age)
    said_at: datetime | None = None
    #: the stream it was said in ("earlier this stream" when it is the turn's)
    stream: str | None = None
    #: a newer statement of the same viewer supersedes it (shown only for a question about the past)
    superseded: bool = False
    #: an episode with the bot's reply: ``text`` from this character on is the bot's own words
    #: (shown labelled as the bot's, never a viewer's); None: no reply in it. An offset, not a
    #: second text, so erasing the item's text in a stored report erases the reply too
    reply_at: int | None = None
    #: the dense similarity of the memory to the query (``MemoryHit.similarity``); None where
    #: the source does not search (profile, state) or the search did not read vectors
    similarity: float | None = None

    @property
    def said(self) -> str:
        """The text without the bot's reply (an episode: its viewer lines)."""
        return self.text if self.reply_at is None else self.text[: self.reply_at].rstrip()

    @property
    def reply(self) -> str:
        """The bot's reply of an episode item ("" when none)."""
        return "" if self.reply_at is None else self.text[self.reply_at :].strip()

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "space": self.space,
            "viewer": self.viewer,
            "memory_id": self.memory_id,
            "text": self.text,
            "origin_message_ids": list(self.origin_message_ids),
            "score": round(self.score, 4),
            "said_at": _iso(self.said_at),
            "stream": self.stream,
            "superseded": self.superseded,
            "reply_at": self.reply_at,
            "similarity": None if self.similarity is None else round(self.similarity, 4),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RecallItem:
        said_at = data.get("said_at")
        return cls(
            source=data["source"],
            space=data["space"],
            viewer=data["viewer"],
            memory_id=data["memory_id"],
            text=data["text"],
            origin_message_ids=tuple(data["origin_message_ids"]),
            score=float(data["score"]),
            said_at=datetime.fromisoformat(said_at) if said_at else None,
            stream=data.get("stream"),
            superseded=bool(data.get("superseded", False)),
            reply_at=data.get("reply_at"),
            similarity=data.get("similarity"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Degraded:
    source: str
    #: ``timeout``, ``error`` or ``budget``; of the ``model`` source: ``timeout`` or ``no_text``
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"source": self.source, "reason": self.reason}


@dataclass(slots=True, kw_only=True)
class PromptStats:
    messages_in_history: int = 0
    messages_sent: int = 0
    tokens_estimate: int = 0
    preview: str = ""


@dataclass(slots=True, kw_only=True)
class TurnReport:
    """What one turn did: the ``--json`` line of a replay, and the source of the metrics."""

    turn_id: str
    stream: str
    message_ids: list[str]
    plan: Plan = field(default_factory=Plan)
    recall: list[RecallItem] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    degraded: list[Degraded] = field(default_factory=list)
    prompt: PromptStats = field(default_factory=PromptStats)
    reply: str | None = None
    command: str | None = None
    status: TurnStatus = TurnStatus.PENDING
    error: str | None = None
    #: why the bot spoke or stayed silent (``memory.reply``: ``addressed``, ``not_addressed``, …)
    reason: str | None = None
    #: ingestion barrier: structured domains changed by tools and the viewers (user ids) involved
    barrier: dict[str, Any] | None = None
    #: tool calls and their results during the turn
    tools: list[dict[str, Any]] = field(default_factory=list)
    #: recalled items the relevance floor left out of the prompt, per source key
    dropped: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "turn_id": self.turn_id,
            "stream": self.stream,
            "message_ids": list(self.message_ids),
            "plan": self.plan.to_json(),
            "recall": [item.to_json() for item in self.recall],
            "timings_ms": {k: round(v, 2) for k, v in self.timings_ms.items()},
            "degraded": [d.to_json() for d in self.degraded],
            "prompt": {
                "messages_in_history": self.prompt.messages_in_history,
                "messages_sent": self.prompt.messages_sent,
                "tokens_estimate": self.prompt.tokens_estimate,
                "preview": self.prompt.preview,
            },
            "reply": self.reply,
            "command": self.command,
            "status": self.status.value,
            "error": self.error,
            "reason": self.reason,
            "barrier": self.barrier,
            "tools": self.tools,
            "dropped": dict(self.dropped),
        }


def estimate_tokens(text: str) -> int:
    """A tokenizer-free token estimate: about four characters a token, at least one a word.

    Good to within ~20% for English and Italian chat with Llama-family tokenizers; used for budgets,
    never for billing.
    """
    if not text:
        return 0
    return max(len(text) // 4, len(text.split()))


def estimate_messages_tokens(messages: Sequence[PromptMessage]) -> int:
    """Token estimate of a prompt: content plus a small per-message overhead."""
    return sum(estimate_tokens(m.content) + 4 for m in messages)
