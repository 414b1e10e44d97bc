"""The records of the structured channel state (``memory.state.channel``): requests, relationships, notes
and inside jokes, with their rendering for the prompt (``render``) and for tools (``to_json``).
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import datetime

    from _typeshed import DataclassInstance

_T = TypeVar("_T", bound="DataclassInstance")


class Domain(enum.StrEnum):
    """The structured domains (the barrier records which ones a turn changed)."""

    REQUESTS = "requests"
    RELATIONSHIPS = "relationships"
    NOTES = "notes"
    JOKES = "jokes"


class RequestStatus(enum.StrEnum):
    OPEN = "open"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


def _build(cls: type[_T], row: Mapping[str, Any], **values: Any) -> _T:
    """A record from a row: its fields by column name, unless given in ``values``."""
    names = [f.name for f in dataclasses.fields(cls)]
    return cls(**{name: values[name] if name in values else row[name] for name in names})


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """A viewer's request (a song, a game, a challenge…)."""

    id: int
    channel: str
    #: the viewer who asked
    user_id: str
    text: str
    status: RequestStatus
    created_at: datetime
    updated_at: datetime
    #: the turn that last changed it (None outside a turn)
    turn_id: str | None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Request:
        return _build(cls, row, status=RequestStatus(row["status"]), turn_id=row["updated_turn"])

    def render(self, logins: Mapping[str, str]) -> str:
        who = logins.get(self.user_id, self.user_id)
        return f"request #{self.id} by {who}: {self.text} ({self.status.value})"

    def to_json(self, logins: Mapping[str, str]) -> dict[str, Any]:
        return {
            "id": self.id,
            "viewer": logins.get(self.user_id, self.user_id),
            "text": self.text,
            "status": self.status.value,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Relationship:
    """The current relationship between two viewers (``user_a < user_b``)."""

    id: int
    channel: str
    user_a: str
    user_b: str
    kind: str
    since: str | None
    updated_at: datetime
    turn_id: str | None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Relationship:
        return _build(cls, row, turn_id=row["updated_turn"])

    def render(self, logins: Mapping[str, str]) -> str:
        a, b = logins.get(self.user_a, self.user_a), logins.get(self.user_b, self.user_b)
        since = f" (since {self.since})" if self.since else ""
        return f"{a} and {b}: {self.kind}{since}"

    def to_json(self, logins: Mapping[str, str]) -> dict[str, Any]:
        return {
            "viewers": [logins.get(self.user_a, self.user_a), logins.get(self.user_b, self.user_b)],
            "kind": self.kind,
            "since": self.since,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Note:
    id: int
    channel: str
    #: the viewer the note is about (None: the channel)
    user_id: str | None
    text: str
    expires_at: datetime | None
    created_at: datetime
    turn_id: str | None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Note:
        return _build(cls, row, turn_id=row["created_turn"])

    def render(self, logins: Mapping[str, str]) -> str:
        about = f" about {logins.get(self.user_id, self.user_id)}" if self.user_id else ""
        until = f" (until {self.expires_at:%Y-%m-%d %H:%M} UTC)" if self.expires_at else ""
        return f"note{about}: {self.text}{until}"

    def to_json(self, logins: Mapping[str, str]) -> dict[str, Any]:
        return {
            "id": self.id,
            "about": logins.get(self.user_id, self.user_id) if self.user_id else None,
            "text": self.text,
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class InsideJoke:
    id: int
    channel: str
    text: str
    user_ids: tuple[str, ...]
    first_at: datetime
    turn_id: str | None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> InsideJoke:
        return _build(cls, row, user_ids=tuple(row["user_ids"]), turn_id=row["updated_turn"])

    def render(self, logins: Mapping[str, str]) -> str:
        who = ", ".join(logins.get(u, u) for u in self.user_ids)
        return f"inside joke of {who}: {self.text} (since {self.first_at:%Y-%m-%d})"

    def to_json(self, logins: Mapping[str, str]) -> dict[str, Any]:
        return {
            "text": self.text,
            "viewers": [logins.get(u, u) for u in self.user_ids],
            "first_at": self.first_at.isoformat(),
        }


StateRow = Request | Relationship | Note | InsideJoke


def subjects(row: StateRow) -> tuple[str, ...]:
    """The user ids a state row is about."""
    if isinstance(row, Request):
        return (row.user_id,)
    if isinstance(row, Relationship):
        return (row.user_a, row.user_b)
    if isinstance(row, Note):
        return (row.user_id,) if row.user_id else ()
    return row.user_ids
