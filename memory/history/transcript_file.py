"""Reading chat transcripts (JSON Lines, DESIGN.md's format) into chat events.

Each line is validated at this edge (pydantic, with the shared limits of ``memory.inbound``); a
malformed line — not UTF-8, not JSON, a field out of its limits — raises ``TranscriptLineError`` with
its line number and what is wrong, after every line before it was yielded.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Literal

import pydantic

from memory import errors, inbound, models

if TYPE_CHECKING:
    from collections.abc import Iterator
    from datetime import datetime
    from pathlib import Path


_BADGE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


def badge_name(raw: str) -> str:
    """A Twitch badge id as the transcript keeps it (``Founder`` → ``founder``); "" when it is not
    one (Twitch names badges like ``subscriber``, ``founder``, ``artist-badge``, ``bits-leader``)."""
    name = raw.strip().casefold()
    return name if _BADGE.match(name) else ""


class TranscriptLine(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", str_strip_whitespace=False)

    ts: inbound.Timestamp
    stream: inbound.StreamId
    id: inbound.MessageId
    user_id: inbound.UserId
    login: inbound.Login
    name: inbound.DisplayName | None = None
    #: Twitch badge ids; the bot gives meaning to broadcaster, moderator, vip and subscriber
    badges: list[str] = pydantic.Field(default=[], max_length=inbound.BADGES_MAX)
    text: inbound.ChatText
    kind: Literal["message", "event"] = "message"
    event: Literal["sub", "raid", "cheer", "follow"] | None = None
    reply_to: inbound.MessageId | None = None

    @pydantic.field_validator("badges")
    @classmethod
    def _badge_names(cls, value: list[str]) -> list[str]:
        names = [badge_name(badge) for badge in value]
        if not all(names):
            raise ValueError("a badge is a Twitch badge id like 'subscriber' or 'artist-badge'")
        return names

    @pydantic.model_validator(mode="after")
    def _event_needs_name(self) -> TranscriptLine:
        if self.kind == "event" and self.event is None:
            raise ValueError("a line of kind 'event' needs 'event' (sub, raid, cheer, follow)")
        return self

    def to_event(self, prefix: str) -> models.ChatEvent:
        if self.kind == "event":
            kind = models.EventKind.EVENT
        elif self.text.startswith(prefix):
            kind = models.EventKind.COMMAND
        else:
            kind = models.EventKind.MESSAGE
        return models.ChatEvent(
            id=self.id,
            stream=self.stream,
            user_id=self.user_id,
            login=self.login,
            name=self.name,
            badges=tuple(self.badges),
            text=self.text,
            ts=self.ts,
            kind=kind,
            event=self.event,
            reply_to=self.reply_to,
        )


def _decode(path: Path, number: int, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise errors.TranscriptLineError(
            str(path), number, f"not valid UTF-8 (byte {raw[exc.start]:#04x} at offset {exc.start})"
        ) from None


def read(path: Path, *, prefix: str = "!") -> Iterator[models.ChatEvent]:
    """Yield the events of a transcript file in order; raise at the first malformed line.

    The file is decoded line by line, so the lines before an invalid one are all yielded.
    """
    seen: set[str] = set()
    last: datetime | None = None
    with path.open("rb") as handle:
        for number, raw_bytes in enumerate(handle, start=1):
            raw = _decode(path, number, raw_bytes)
            if not raw.strip():
                continue
            try:
                data = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise errors.TranscriptLineError(
                    str(path), number, f"not JSON ({exc.msg})"
                ) from None
            except RecursionError:  # ``[[[[…`` thousands deep
                raise errors.TranscriptLineError(
                    str(path), number, "JSON nested too deep"
                ) from None
            if not isinstance(data, dict):
                raise errors.TranscriptLineError(str(path), number, "not a JSON object")
            try:
                line = TranscriptLine.model_validate(data)
            except pydantic.ValidationError as exc:
                raise errors.TranscriptLineError(str(path), number, inbound.problem(exc)) from None
            if line.id in seen:
                raise errors.TranscriptLineError(
                    str(path), number, f"duplicate message id {line.id!r}"
                )
            if last is not None and line.ts < last:
                raise errors.TranscriptLineError(
                    str(path), number, "out of time order (lines must be sorted by ts)"
                )
            seen.add(line.id)
            last = line.ts
            yield line.to_event(prefix)
