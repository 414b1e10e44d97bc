"""The viewer profile: a few facts per viewer, in Postgres, derived during consolidation.

A profile holds at most one fact per *slot*; a newer statement (by chat time) replaces an older one of
the same slot, so "I moved to Turin" supersedes "I live in Rome". Slots, detected by simple English and
Italian patterns on a viewer's own kept statements:

========== =========================================================== ====================
slot       examples                                                    value
========== =========================================================== ====================
name       "my name is Marco", "call me Bea", "mi chiamo Giulia"       Marco
age        "I'm 25", "I am 31 years old", "ho 25 anni"                 25
location   "I live in Rome", "I moved to Turin", "abito a Napoli",     Turin
           "vivo a Roma", "mi sono trasferita a Torino"
hometown   "I'm from Milan", "I was born in Bari", "sono di Milano",   Milan
           "vengo da Palermo", "sono nato a Bari"
job        "I work as a graphic designer", "my job is nursing",        graphic designer
           "lavoro come grafico", "faccio il cuoco"
employer   "I work at Ferrari", "lavoro per Ferrari"                   Ferrari
study      "I study physics", "I'm studying law", "studio ingegneria"  physics
pet:<kind> "my cat is called Miso", "ho un cane che si chiama Rex"     Miso (slot pet:cat)
note:<id>  any other kept self-statement; only the newest three stay   the statement
========== =========================================================== ====================

``await ProfileStore(db).get(user_id)`` reads a profile in one query.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory import sql
from memory.adapters import postgres

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from memory.spaces import records


logger = logging.getLogger(__name__)

#: the named slots, in the order a profile lists them
SLOTS = ("name", "age", "location", "hometown", "job", "employer", "study")
#: free-form notes kept per viewer (newest first)
NOTE_LIMIT = 3
NOTE_PREFIX = "note:"

#: pet words (EN/IT) → the kind used in the ``pet:<kind>`` slot
PETS = {
    "cat": "cat",
    "kitten": "cat",
    "gatto": "cat",
    "gatta": "cat",
    "gattino": "cat",
    "dog": "dog",
    "puppy": "dog",
    "cane": "dog",
    "cagnolino": "dog",
    "cagnolina": "dog",
    "rabbit": "rabbit",
    "coniglio": "rabbit",
    "hamster": "hamster",
    "criceto": "hamster",
    "parrot": "bird",
    "bird": "bird",
    "pappagallo": "bird",
    "fish": "fish",
    "pesce": "fish",
    "turtle": "turtle",
    "tartaruga": "turtle",
}
_PET = "|".join(sorted(PETS, key=len, reverse=True))
#: where a value stops: punctuation, a conjunction, or a time phrase
_STOP = re.compile(
    r"[.,;!?()]|\s(?:and|but|since|for|now|ago|last|this|recently|because|e|ma|da|dal|dalla|dallo"
    r"|ormai|adesso|ora|perch[eé]|quest[oa]|l'anno|il mese|lo scorso|la scorsa|pochi)\s",
    re.I,
)

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (slot, re.compile(pattern, re.I))
    for slot, pattern in (
        ("name", r"\b(?:my name is|my name's|call me|i'?m called|mi chiamo|il mio nome è)\s+(.+)"),
        ("age", r"\b(?:i'?m|i am)\s+(\d{1,2})(?:\s+years?\s+old)?\s*(?:$|[.,!;])"),
        ("age", r"\bho\s+(\d{1,2})\s+anni\b"),
        (
            "location",
            r"\b(?:i\s+(?:now\s+)?live in|i'?m living in|i'?m based in|i\s+(?:just\s+)?moved to"
            r"|i\s+relocated to|vivo (?:a|in|ad)|abito (?:a|in|ad)"
            r"|mi sono (?:appena\s+)?trasferit[oa] (?:a|in|ad)|mi trasferisco (?:a|in|ad))\s+(.+)",
        ),
        (
            "hometown",
            r"\b(?:i'?m from|i am from|i come from|i was born in|sono di|vengo da|sono nat[oa] (?:a|in))"
            r"\s+(.+)",
        ),
        (
            "job",
            r"\b(?:i work as(?: an?)?|i'?m working as(?: an?)?|my job is(?: an?)?|i'?m employed as(?: an?)?"
            r"|lavoro come|di mestiere faccio(?: il| la| lo| l')?|faccio (?:il|la|lo|l'))\s*(.+)",
        ),
        (
            "employer",
            r"\b(?:i work (?:at|for)|lavoro (?:per|presso|alla|al))\s+(.+)",
        ),
        ("study", r"(?:\bi study|\bi'?m studying|(?:^|[.,;!]\s*|\bio\s+)studio)\s+(.+)"),
    )
)
_PET_PATTERNS = (
    re.compile(
        rf"\bmy\s+(?:\w+\s+)?({_PET})(?:'s name is| is called| is named| named| called)\s+(.+)",
        re.I,
    ),
    re.compile(rf"\bi have an?\s+(?:\w+\s+)?({_PET})\s+(?:called|named)\s+(.+)", re.I),
    re.compile(
        rf"\bil mio\s+({_PET})\s+si chiama\s+(.+)|\bla mia\s+({_PET})\s+si chiama\s+(.+)", re.I
    ),
    re.compile(rf"\bho un[ao']?\s+({_PET})\s+(?:che si chiama|di nome)\s+(.+)", re.I),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileFact:
    """One line of a viewer profile, with the provenance of the statement it came from."""

    #: ``location``, ``pet:cat``, ``note:<memory id>`` …
    slot: str
    #: the extracted value (``Turin``); the statement itself for notes
    value: str
    #: the viewer's own statement ("I moved to Turin")
    text: str
    memory_id: str | None = None
    turn_id: str | None = None
    stream: str | None = None
    origin_message_ids: tuple[str, ...] = ()
    #: chat time of the statement (the newer one wins a slot)
    stated_at: datetime

    @property
    def is_note(self) -> bool:
        return self.slot.startswith(NOTE_PREFIX)

    @property
    def line(self) -> str:
        """The fact as a profile line: ``location: Turin`` (notes: the statement)."""
        return self.text if self.is_note else f"{self.slot}: {self.value}"

    @classmethod
    def from_row(cls, row: postgres.Record) -> ProfileFact:
        return cls(
            slot=row["slot"],
            value=row["value"],
            text=row["statement"],
            memory_id=row["memory_id"],
            turn_id=row["turn_id"],
            stream=row["stream"],
            origin_message_ids=tuple(row["origin_message_ids"]),
            stated_at=row["stated_at"],
        )

    def to_json(self) -> dict[str, object]:
        return {
            "slot": self.slot,
            "value": self.value,
            "text": self.text,
            "memory_id": self.memory_id,
            "turn_id": self.turn_id,
            "stream": self.stream,
            "origin_message_ids": list(self.origin_message_ids),
            "stated_at": self.stated_at.isoformat(),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Profile:
    """A viewer's profile: named slots first (in ``SLOTS`` order, then pets), then newest notes."""

    user_id: str
    facts: tuple[ProfileFact, ...]

    def get(self, slot: str) -> ProfileFact | None:
        return next((fact for fact in self.facts if fact.slot == slot), None)

    def lines(self) -> list[str]:
        return [fact.line for fact in self.facts]

    def to_json(self) -> dict[str, object]:
        return {"user_id": self.user_id, "facts": [fact.to_json() for fact in self.facts]}


def _value(rest: str) -> str:
    value = _STOP.split(" " + rest.strip() + " ", maxsplit=1)[0].strip()
    words = value.split()
    return " ".join(words[:4]).strip(" '\"")


def derive(text: str) -> list[tuple[str, str]]:
    """The ``(slot, value)`` pairs a self-statement fills (empty when it fits no slot)."""
    found: dict[str, str] = {}
    for pattern in _PET_PATTERNS:
        for match in pattern.finditer(text):
            groups = [g for g in match.groups() if g]
            kind, name = PETS[groups[0].casefold()], _value(groups[1])
            if name:
                found.setdefault(f"pet:{kind}", name)
    for slot, pattern in _PATTERNS:
        if slot in found:
            continue
        hit = pattern.search(text)
        if hit and (value := _value(hit.group(1))):
            found[slot] = value
    return list(found.items())


#: someone else's words, reported or quoted: "alice said: I am 12", "carla dice che vive a Roma",
#: '"I live in Venice" - alice', «sono di Napoli» (a whole quoted line)
_REPORTED = (
    re.compile(
        r"\b(?:said|says|saying|told (?:me|us|everyone)|tells (?:me|us)|claims?|claimed|wrote|"
        r"ha detto|dice(?:va)? che|diceva|ha scritto|mi ha detto|sostiene)\b\s*[:,\"“«]?",
        re.IGNORECASE,
    ),
    re.compile(r"^\s*[\"“«'].+[\"”»']\s*[-–—~]+\s*@?\w+\s*$"),
    re.compile(r"^\s*[\"“«].+[\"”»]\s*$"),
)


def is_reported_speech(text: str) -> bool:
    """Whether ``text`` reports or quotes someone's words (never the speaker's own statement)."""
    return any(pattern.search(text) for pattern in _REPORTED)


def facts_from_memory(record: records.MemoryRecord) -> list[ProfileFact]:
    """The profile facts of one personal memory (a note when it fills no named slot); none from
    reported or quoted speech: "alice said: I am 12" says nothing about the speaker."""
    if is_reported_speech(record.text):
        return []
    stated_at = record.last_ts or record.first_ts or record.created_at
    pairs = derive(record.text) or [(f"{NOTE_PREFIX}{record.id}", record.text)]
    return [
        ProfileFact(
            slot=slot,
            value=value,
            text=record.text,
            memory_id=record.id,
            turn_id=record.turn_id,
            stream=record.stream,
            origin_message_ids=tuple(record.origin_message_ids),
            stated_at=stated_at,
        )
        for slot, value in pairs
    ]


def _order(fact: ProfileFact) -> tuple[int, str, float]:
    if fact.slot in SLOTS:
        return (0, f"{SLOTS.index(fact.slot):02d}", 0.0)
    if fact.is_note:
        return (2, "", -fact.stated_at.timestamp())
    return (1, fact.slot, 0.0)


class ProfileStore:
    """Reads and updates viewer profiles (table ``viewer_profiles``)."""

    def __init__(self, db: postgres.Database) -> None:
        self.db = db

    async def get(self, user_id: str) -> Profile | None:
        """A viewer's profile, or None when nothing is known."""
        with postgres.wrap_errors("read profile"):
            rows = await self.db.pool.fetch(sql.queries["memory_profile_get"], user_id)
        if not rows:
            return None
        facts = sorted((ProfileFact.from_row(row) for row in rows), key=_order)
        return Profile(user_id=user_id, facts=tuple(facts))

    async def update(self, user_id: str, facts: Sequence[ProfileFact]) -> int:
        """Apply facts (older than the slot's current fact: ignored); returns how many were taken."""
        if not facts:
            return 0
        taken = 0
        with postgres.wrap_errors("update profile"):
            async with self.db.pool.acquire() as conn, conn.transaction():
                for fact in facts:
                    row = await conn.fetchrow(
                        sql.queries["memory_profile_upsert"],
                        user_id,
                        fact.slot,
                        fact.value,
                        fact.text,
                        fact.memory_id,
                        fact.turn_id,
                        fact.stream,
                        list(fact.origin_message_ids),
                        fact.stated_at,
                    )
                    taken += row is not None
                await conn.execute(sql.queries["memory_profile_trim_notes"], user_id, NOTE_LIMIT)
        return taken

    async def apply_memories(self, records: Sequence[records.MemoryRecord]) -> int:
        """Derive and apply the facts of personal memories (grouped per viewer)."""
        taken = 0
        for user_id in sorted({r.user_id for r in records if r.user_id}):
            facts = [f for r in records if r.user_id == user_id for f in facts_from_memory(r)]
            taken += await self.update(user_id, facts)
        return taken

    async def delete_viewer(self, user_id: str) -> int:
        with postgres.wrap_errors("delete profile"):
            return len(
                await self.db.pool.fetch(sql.queries["memory_profile_delete_viewer"], user_id)
            )

    async def delete_memories(self, memory_ids: Sequence[str]) -> list[str]:
        """Drop the facts derived from these memories; returns the user ids touched."""
        with postgres.wrap_errors("delete profile facts"):
            rows = await self.db.pool.fetch(
                sql.queries["memory_profile_delete_memories"], list(memory_ids)
            )
        return sorted({row["user_id"] for row in rows})

    async def delete_turn(self, turn_id: str) -> list[str]:
        """Drop the facts that came from one turn; returns the user ids touched."""
        with postgres.wrap_errors("delete profile facts"):
            rows = await self.db.pool.fetch(sql.queries["memory_profile_delete_turn"], turn_id)
        return sorted({row["user_id"] for row in rows})
