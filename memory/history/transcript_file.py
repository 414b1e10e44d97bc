"""Reading chat transcripts (JSON Lines, DESIGN.md's format) into chat events.

Each line is validated at this edge (pydantic); a malformed line raises ``TranscriptLineError`` with
its line number and what is wrong, after every line before it was yielded.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import TYPE_CHECKING, Literal

import pydantic

from memory import errors, models

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


_BADGE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


def badge_name(raw: str) -> str:
    """A Twitch badge id as the transcript keeps it (``Founder`` → ``founder``); "" when it is not
    one (Twitch names badges like ``subscriber``, ``founder``, ``artist-badge``, ``bits-leader``)."""
    name = raw.strip().casefold()
    return name if _BADGE.match(name) else ""


class TranscriptLine(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", str_strip_whitespace=False)

    ts: datetime
    stream: str = pydantic.Field(min_length=1)
    id: str = pydantic.Field(min_length=1)
    user_id: str = pydantic.Field(min_length=1)
    login: str = pydantic.Field(min_length=1)
    name: str | None = None
    #: Twitch badge ids; the bot gives meaning to broadcaster, moderator, vip and subscriber
    badges: list[str] = []
    text: str
    kind: Literal["message", "event"] = "message"
    event: Literal["sub", "raid", "cheer", "follow"] | None = None
    reply_to: str | None = None

    @pydantic.field_validator("user_id", mode="before")
    @classmethod
    def _user_id_as_text(cls, value: object) -> object:
        return str(value) if isinstance(value, int) else value

    @pydantic.field_validator("badges")
    @classmethod
    def _badge_names(cls, value: list[str]) -> list[str]:
        names = [badge_name(badge) for badge in value]
        if not all(names):
            raise ValueError("a badge is a Twitch badge id like 'subscriber' or 'artist-badge'")
        return names

    @pydantic.field_validator("ts")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("needs a time zone (e.g. a trailing Z)")
        return value

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


def _problem(exc: pydantic.ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "line"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


def read(path: Path, *, prefix: str = "!") -> Iterator[models.ChatEvent]:
    """Yield the events of a transcript file in order; raise at the first malformed line."""
    seen: set[str] = set()
    last: datetime | None = None
    with path.open(encoding="utf-8") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                data = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise errors.TranscriptLineError(
                    str(path), number, f"not JSON ({exc.msg})"
                ) from None
            if not isinstance(data, dict):
                raise errors.TranscriptLineError(str(path), number, "not a JSON object")
            try:
                line = TranscriptLine.model_validate(data)
            except pydantic.ValidationError as exc:
                raise errors.TranscriptLineError(str(path), number, _problem(exc)) from None
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
