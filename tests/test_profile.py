from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import hypothesis
import pytest

from memory.consolidate import profile as profile_module
from memory.spaces import records

if TYPE_CHECKING:
    from memory.adapters import postgres

T0 = datetime(2026, 3, 1, 20, 0, tzinfo=UTC)

DERIVED = [
    ("I live in Rome", [("location", "Rome")]),
    ("I moved to Turin last month", [("location", "Turin")]),
    ("I just moved to New York City", [("location", "New York City")]),
    ("vivo a Roma", [("location", "Roma")]),
    ("abito a Napoli da tre anni", [("location", "Napoli")]),
    ("mi sono trasferita a Torino", [("location", "Torino")]),
    ("I'm from Milan", [("hometown", "Milan")]),
    ("sono di Milano", [("hometown", "Milano")]),
    ("vengo da Palermo", [("hometown", "Palermo")]),
    ("I work as a graphic designer", [("job", "graphic designer")]),
    ("lavoro come grafico", [("job", "grafico")]),
    ("faccio il cuoco", [("job", "cuoco")]),
    ("I work at Ferrari", [("employer", "Ferrari")]),
    ("I'm 25", [("age", "25")]),
    ("ho 31 anni", [("age", "31")]),
    ("my name is Marco", [("name", "Marco")]),
    ("mi chiamo Giulia", [("name", "Giulia")]),
    ("my cat is called Miso", [("pet:cat", "Miso")]),
    ("il mio gatto si chiama Miso", [("pet:cat", "Miso")]),
    ("ho un cane che si chiama Rex", [("pet:dog", "Rex")]),
    ("I have a dog named Rex", [("pet:dog", "Rex")]),
    ("I study physics", [("study", "physics")]),
    ("studio ingegneria", [("study", "ingegneria")]),
    ("I live in Rome and I work as a nurse", [("location", "Rome"), ("job", "nurse")]),
    ("I love hiking", []),
    ("my studio is full of plants", []),
]


@pytest.mark.parametrize(("text", "expected"), DERIVED)
def test_slots_are_derived_from_simple_en_it_patterns(
    text: str, expected: list[tuple[str, str]]
) -> None:
    assert sorted(profile_module.derive(text)) == sorted(expected)


def memory(mid: str, text: str, minutes: int, user_id: str = "1001") -> records.MemoryRecord:
    return records.MemoryRecord(
        id=f"00000000-0000-0000-0000-{int(mid[1:]):012d}",
        space=f"viewer:{user_id}",
        kind=records.MemoryKind.PERSONAL,
        text=text,
        user_id=user_id,
        login="alice",
        stream="s1",
        turn_id=f"t{mid}",
        origin_message_ids=(mid,),
        first_ts=T0 + timedelta(minutes=minutes),
        last_ts=T0 + timedelta(minutes=minutes),
    )


async def test_unknown_viewer_has_no_profile(db: postgres.Database) -> None:
    assert await profile_module.ProfileStore(db).get("nobody") is None


async def test_a_newer_fact_supersedes_an_older_one_of_the_same_slot(db: postgres.Database) -> None:
    store = profile_module.ProfileStore(db)
    await store.apply_memories([memory("m1", "I live in Rome", 0)])
    await store.apply_memories([memory("m2", "I moved to Turin", 5)])
    await store.apply_memories([memory("m0", "I live in Milan", -5)])  # late, older: ignored

    profile = await store.get("1001")
    assert profile is not None
    assert profile.lines() == ["location: Turin"]
    fact = profile.facts[0]
    assert (fact.text, fact.origin_message_ids, fact.turn_id) == (
        "I moved to Turin",
        ("m2",),
        "tm2",
    )


async def test_slots_come_first_and_only_the_newest_notes_stay(db: postgres.Database) -> None:
    store = profile_module.ProfileStore(db)
    await store.apply_memories(
        [
            memory("m1", "I love hiking in the Alps", 1),
            memory("m2", "my cat is called Miso", 2),
            memory("m3", "I collect vinyl records", 3),
            memory("m4", "I play the guitar", 4),
            memory("m5", "I work as a nurse", 5),
            memory("m6", "I'm vegan", 6),
            memory("m7", "I'm 25", 7),
        ]
    )
    profile = await store.get("1001")
    assert profile is not None
    assert profile.lines() == [
        "age: 25",
        "job: nurse",
        "pet:cat: Miso",
        "I'm vegan",
        "I play the guitar",
        "I collect vinyl records",
    ]


async def test_profiles_are_per_viewer_and_deletable(db: postgres.Database) -> None:
    store = profile_module.ProfileStore(db)
    alice, bob = memory("m1", "I live in Rome", 0), memory("m2", "I live in Bari", 0, "1002")
    await store.apply_memories([alice, bob])

    assert await store.delete_memories([alice.id]) == ["1001"]
    assert await store.get("1001") is None
    bob_profile = await store.get("1002")
    assert bob_profile is not None and bob_profile.lines() == ["location: Bari"]
    assert await store.delete_turn("tm2") == ["1002"]
    await store.apply_memories([bob])
    assert await store.delete_viewer("1002") == 1
    assert await store.get("1002") is None


def test_a_statement_that_clears_a_slot_is_a_change_not_a_fact_nor_a_note() -> None:
    record = memory("m1", "I don't study architecture anymore, I live in Turin now", 3)
    changes = profile_module.changes_from_memory(record)
    assert sorted((f.slot, f.value, f.cleared) for f in changes) == [
        ("location", "Turin", False),
        ("study", "", True),
    ]
    assert {f.stated_at for f in changes} == {T0 + timedelta(minutes=3)}
    assert [f.slot for f in profile_module.facts_from_memory(record)] == ["location"]
    assert profile_module.slots_of(record.text) == {"study": None, "location": "Turin"}


async def test_a_cleared_slot_goes_and_stays_gone_until_a_newer_statement(
    db: postgres.Database,
) -> None:
    store = profile_module.ProfileStore(db)
    await store.apply_memories([memory("m1", "I study architecture", 0)])
    await store.apply_memories([memory("m2", "non studio più architettura", 10)])
    assert await store.get("1001") is None  # only the cleared row: nothing to show

    await store.apply_memories([memory("m3", "I study law", 5)])  # older than the clear: ignored
    assert await store.get("1001") is None
    await store.apply_memories([memory("m4", "I'm a design student", 20)])
    profile = await store.get("1001")
    assert profile is not None and profile.lines() == ["study: design"]
    assert profile.facts[0].stated_at == T0 + timedelta(minutes=20)


async def test_a_clear_older_than_the_value_changes_nothing(db: postgres.Database) -> None:
    store = profile_module.ProfileStore(db)
    await store.apply_memories([memory("m2", "I'm a software tester now", 20)])
    await store.apply_memories([memory("m1", "I'm not a barista anymore", 10)])
    await store.apply_memories([memory("m0", "I work as a barista", 0)])
    profile = await store.get("1001")
    assert profile is not None and profile.lines() == ["job: software tester"]
    assert profile.facts[0].stated_at == T0 + timedelta(minutes=20)


PIECES = ["I'm a ", "sono un ", "non ", "più", " anymore", "nurse", "25", ", ", "?", "’", " e "]


@hypothesis.given(
    hypothesis.strategies.lists(
        hypothesis.strategies.sampled_from(PIECES) | hypothesis.strategies.text(max_size=6),
        max_size=12,
    ).map("".join)
)
def test_slots_of_names_known_slots_and_agrees_with_derive(text: str) -> None:
    slots = profile_module.slots_of(text)
    assert all(s in profile_module.SLOTS or s.startswith("pet:") for s in slots)
    assert all(value is None or value.strip() for value in slots.values())
    assert profile_module.derive(text) == [(s, v) for s, v in slots.items() if v is not None]
