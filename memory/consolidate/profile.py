"""The viewer profile: a few facts per viewer, in Postgres, derived during consolidation.

A profile holds at most one fact per *slot*, each with the chat time it was stated (``stated_at``).
A newer statement (by chat time, not by the order consolidation sees them) replaces an older one of
the same slot, so "I moved to Turin" supersedes "I live in Rome" and "I'm a software tester now"
supersedes "I work as a barista". A statement can also *clear* a slot ("I don't study architecture
anymore", "non abito più a Roma", "I quit my job"): the slot is kept as an empty row with its time,
so an older statement seen later cannot bring the value back, and is never shown. Slots, detected
by English and Italian patterns on a viewer's own kept statements (``profile_slots``; checked line
by line against ``tests/data/profile_corpus.jsonl``):

========== =========================================================== ====================
slot       examples                                                    value
========== =========================================================== ====================
name       "my name is Marco", "call me Bea", "mi chiamo Giulia"       Marco
age        "I'm 25", "turned 25 yesterday", "ho 25 anni",              25
           "compio 30 anni", "ho fatto 40 anni"
location   "I live in Rome", "I moved to Turin", "abito a Napoli",     Turin
           "vivo a Roma", "mi sono trasferita a Torino"
hometown   "I'm from Milan", "I was born in Bari", "sono di Milano",   Milan
           "vengo da Palermo", "sono nato a Bari"
job        "I work as a graphic designer", "I'm a nurse",              graphic designer
           "I just started a job as a data analyst", "sono
           un'infermiera", "faccio il cuoco", "lavoro come grafico"
employer   "I work at Ferrari", "lavoro per Ferrari"                   Ferrari
study      "I study physics", "I'm a law student", "studio ingegneria" physics
pet:<kind> "my cat is called Miso", "ho un cane che si chiama Rex"     Miso (slot pet:cat)
note:<id>  any other kept self-statement; only the newest three stay   the statement
========== =========================================================== ====================

``slots_of(text)`` says which slots a statement sets or clears (for supersession);
``await ProfileStore(db).get(user_id)`` reads a profile in one query.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory import sql
from memory.adapters import postgres
from memory.consolidate import profile_slots

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
PETS = profile_slots.PETS
#: the slots a statement sets (value) or clears (None): see ``profile_slots``
slots_of = profile_slots.slots_of
is_reported_speech = profile_slots.is_reported_speech


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
    def cleared(self) -> bool:
        """A cleared slot ("I don't study anymore"): kept in the table so that an older statement
        processed later cannot bring the value back, never shown."""
        return self.value == ""

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


def derive(text: str) -> list[tuple[str, str]]:
    """The ``(slot, value)`` pairs a self-statement fills (empty when it fits no slot); the slots
    it clears are left out (``slots_of`` has both)."""
    return [(slot, value) for slot, value in slots_of(text).items() if value is not None]


def changes_from_memory(record: records.MemoryRecord) -> list[ProfileFact]:
    """The profile changes of one personal memory: a fact per slot it sets, a cleared fact
    (``value == ""``) per slot it clears, else a note; none from reported or quoted speech ("alice
    said: I am 12" says nothing about the speaker). Each carries the statement's chat time."""
    stated_at = record.last_ts or record.first_ts or record.created_at
    slots = slots_of(record.text)
    if not slots and is_reported_speech(record.text):
        return []
    pairs = [(slot, value or "") for slot, value in slots.items()] or [
        (f"{NOTE_PREFIX}{record.id}", record.text)
    ]
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


def facts_from_memory(record: records.MemoryRecord) -> list[ProfileFact]:
    """The profile facts of one personal memory (a note when it fills no named slot), without the
    slots it clears; none from reported or quoted speech."""
    return [fact for fact in changes_from_memory(record) if not fact.cleared]


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
        facts = [fact for fact in facts if not fact.cleared]
        if not facts:
            return None
        return Profile(user_id=user_id, facts=tuple(facts))

    async def update(self, user_id: str, facts: Sequence[ProfileFact]) -> int:
        """Apply facts and cleared slots (older than the slot's current fact, by ``stated_at``:
        ignored, whatever the processing order); returns how many were taken."""
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
            facts = [f for r in records if r.user_id == user_id for f in changes_from_memory(r)]
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
