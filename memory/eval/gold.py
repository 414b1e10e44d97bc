"""Gold annotations of the synthetic stream: the records, and their bookkeeping while generating.

``Gold.record`` sees each planned message once, in stream order, so "the latest correction wins"
is simply the latest statement of a (viewer, attribute) seen before a probe.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memory.eval import vocab

if TYPE_CHECKING:
    from memory import models


class ProbeKind(enum.StrEnum):
    SELF_RECALL = "self_recall"  #: a viewer asks what the bot remembers about them
    OTHER_VIEWER = "other_viewer"  #: a viewer asks about another viewer
    EPISODIC = "episodic"  #: a reference back to an earlier moment of the stream
    LORE = "lore"  #: a question about the bot's canon


@dataclass(frozen=True, slots=True, kw_only=True)
class Persona:
    user_id: str
    login: str
    name: str
    #: ``en`` or ``it``
    lang: str
    #: attribute → value, e.g. ``{"city": "Rome", "job": "nurse", ...}``
    facts: dict[str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class Statement:
    """A durable self-statement (or a correction of one)."""

    message_id: str
    user_id: str
    attribute: str
    value: str
    #: the message id of the correction that replaced this statement
    superseded_by: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """A statement about another viewer: never that viewer's personal memory."""

    message_id: str
    author_id: str
    subject_id: str
    attribute: str
    value: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Moment:
    """A notable moment early in the stream, referred back to later."""

    message_id: str
    user_id: str
    topic: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LoreEntry:
    id: str
    text: str
    #: a phrase that identifies this entry in a recalled text
    key: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Probe:
    message_id: str
    asker_id: str
    #: the viewer the question is about (None for lore and for moments asked about in general)
    target_id: str | None
    #: message ids (lore ids for lore probes) that answer the question
    evidence_ids: tuple[str, ...]
    kind: ProbeKind
    attribute: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SyntheticStream:
    stream: str
    seed: int
    events: tuple[models.ChatEvent, ...]
    personas: tuple[Persona, ...]
    statements: tuple[Statement, ...]
    claims: tuple[Claim, ...]
    moments: tuple[Moment, ...]
    lore: tuple[LoreEntry, ...]
    probes: tuple[Probe, ...]
    #: message ids of the chat noise lines (reactions, emotes, stream talk, questions, commands)
    noise_ids: tuple[str, ...] = ()

    @property
    def authors(self) -> dict[str, str]:
        """Message id → author user id."""
        return {event.id: event.user_id for event in self.events}

    @property
    def self_statements(self) -> dict[str, str]:
        """Message id of every durable self-statement → the user id it belongs to."""
        return {s.message_id: s.user_id for s in self.statements}

    @property
    def logins(self) -> dict[str, str]:
        """Login → user id."""
        return {p.login: p.user_id for p in self.personas}

    def to_jsonl(self) -> str:
        """The transcript (DESIGN.md's JSON Lines format)."""
        return "".join(json.dumps(e.to_json(), ensure_ascii=False) + "\n" for e in self.events)

    def gold_json(self) -> dict[str, Any]:
        def rows(items: tuple[Any, ...]) -> list[dict[str, Any]]:
            return [
                {k: (list(v) if isinstance(v, tuple) else v) for k, v in _fields(i).items()}
                for i in items
            ]

        return {
            "stream": self.stream,
            "seed": self.seed,
            "self_statements": rows(self.statements),
            "claims": rows(self.claims),
            "moments": rows(self.moments),
            "lore": rows(self.lore),
            "probes": rows(self.probes),
        }


def _fields(item: Any) -> dict[str, Any]:
    return {name: getattr(item, name) for name in item.__slots__}


@dataclass(slots=True)
class Gold:
    statements: list[Statement] = field(default_factory=list)
    #: (user id, attribute) → message id of the latest statement
    latest: dict[tuple[str, str], str] = field(default_factory=dict)
    superseded: dict[str, str] = field(default_factory=dict)
    claims: list[Claim] = field(default_factory=list)
    moments: list[Moment] = field(default_factory=list)
    probes: list[Probe] = field(default_factory=list)
    noise: list[str] = field(default_factory=list)

    def record(self, line: Any, message_id: str) -> None:
        tag, uid = line.tag, line.user.user_id
        if tag[0] == "noise":
            self.noise.append(message_id)
        elif tag[0] == "statement":
            previous = self.latest.get((uid, tag[1]))
            if previous:
                self.superseded[previous] = message_id
            self.latest[(uid, tag[1])] = message_id
            self.statements.append(
                Statement(message_id=message_id, user_id=uid, attribute=tag[1], value=tag[2])
            )
        elif tag[0] == "claim":
            self.claims.append(
                Claim(
                    message_id=message_id,
                    author_id=uid,
                    subject_id=tag[1],
                    attribute=tag[2],
                    value=tag[3],
                )
            )
        elif tag[0] == "moment":
            self.moments.append(Moment(message_id=message_id, user_id=uid, topic=tag[1]))
        elif tag[0] == "probe":
            self.probes.append(self._probe(line, message_id))

    def _probe(self, line: Any, message_id: str) -> Probe:
        _, what, subject, attr = line.tag
        asker = line.user.user_id
        if what in ("self", "other"):
            target = subject.user_id
            attrs = (attr,) if attr else vocab.ATTRIBUTES
            evidence = tuple(self.latest[(target, a)] for a in attrs if (target, a) in self.latest)
            kind = ProbeKind.SELF_RECALL if what == "self" else ProbeKind.OTHER_VIEWER
            return Probe(
                message_id=message_id,
                asker_id=asker,
                target_id=target,
                evidence_ids=evidence,
                kind=kind,
                attribute=attr,
            )
        if what == "episodic":
            moment = next(m for m in self.moments if m.topic == subject)
            return Probe(
                message_id=message_id,
                asker_id=asker,
                target_id=moment.user_id,
                evidence_ids=(moment.message_id,),
                kind=ProbeKind.EPISODIC,
            )
        return Probe(
            message_id=message_id,
            asker_id=asker,
            target_id=None,
            evidence_ids=(subject,),
            kind=ProbeKind.LORE,
        )

    def final_statements(self) -> list[Statement]:
        return [
            Statement(
                message_id=s.message_id,
                user_id=s.user_id,
                attribute=s.attribute,
                value=s.value,
                superseded_by=self.superseded.get(s.message_id),
            )
            for s in self.statements
        ]
