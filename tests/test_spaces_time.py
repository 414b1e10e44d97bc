"""Memory spaces and time: the superseded mark and the time window, one contract over
the in-memory fake and both Qdrant layouts (``tests.test_spaces.store``)."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from memory.spaces import recency, records
from tests.test_spaces import ALICE, BOB, T0, record, store

if TYPE_CHECKING:
    import pytest

    from memory import ports

__all__ = ["store"]  # the parametrised fixture, shared with tests/test_spaces.py


async def test_superseded_memory_is_kept_but_not_recalled(store: ports.MemorySpaces) -> None:
    old = record(ALICE, "I live in Rome", last_ts=T0)
    new = record(ALICE, "I moved to Turin, I live in Turin now", last_ts=T0 + timedelta(days=7))
    await store.upsert([old, new])
    at = T0 + timedelta(days=7, seconds=5)
    assert await store.supersede(ALICE, [old.id, new.id], by=new.id, at=at) == 1  # never itself

    hits = await store.search(ALICE, "where do I live", limit=5)
    assert [h.record.id for h in hits] == [new.id]
    past = await store.search(ALICE, "where do I live", limit=5, include_superseded=True)
    assert {h.record.id for h in past} == {old.id, new.id}
    [kept] = await store.get(ALICE, [old.id])
    assert (kept.superseded_by, kept.superseded_at) == (new.id, at)
    assert old.id in {r.id for r in await store.list(ALICE)}


async def test_a_retried_upsert_keeps_the_mark(store: ports.MemorySpaces) -> None:
    old = record(ALICE, "I study architecture", last_ts=T0)
    await store.upsert([old])
    await store.supersede(ALICE, [old.id], by=record(ALICE, "x").id, at=T0)
    await store.upsert([old])  # the consolidation job of the old turn ran again
    [kept] = await store.get(ALICE, [old.id])
    assert kept.superseded_by is not None
    assert await store.search(ALICE, "architecture", limit=5) == []


async def test_supersede_acts_on_its_space_only(store: ports.MemorySpaces) -> None:
    bobs = record(BOB, "I live in Rome", last_ts=T0)
    await store.upsert([bobs])
    assert await store.supersede(ALICE, [bobs.id], by=record(ALICE, "x").id, at=T0) == 0
    assert [h.record.id for h in await store.search(BOB, "Rome")] == [bobs.id]


async def test_time_window_restricts_the_search(store: ports.MemorySpaces) -> None:
    week1 = record(ALICE, "I baked a cake for the party", last_ts=T0)
    week2 = record(ALICE, "I baked bread with my grandma", last_ts=T0 + timedelta(days=7))
    week3 = record(ALICE, "I baked cookies at night", last_ts=T0 + timedelta(days=14))
    await store.upsert([week1, week2, week3])
    window = records.TimeWindow(since=T0 + timedelta(days=6), until=T0 + timedelta(days=8))
    hits = await store.search(ALICE, "what did I bake", limit=5, window=window)
    assert [h.record.id for h in hits] == [week2.id]
    open_end = records.TimeWindow(since=T0 + timedelta(days=6))
    later = await store.search(ALICE, "what did I bake", limit=5, window=open_end)
    assert {h.record.id for h in later} == {week2.id, week3.id}
    everything = await store.search(ALICE, "what did I bake", limit=5)
    assert len(everything) == 3


async def test_unsupersede_makes_a_memory_current_again(store: ports.MemorySpaces) -> None:
    old = record(ALICE, "I live in Rome", last_ts=T0)
    new = record(ALICE, "I moved to Turin", last_ts=T0 + timedelta(days=7))
    await store.upsert([old, new])
    await store.supersede(ALICE, [old.id], by=new.id, at=T0 + timedelta(days=7))
    assert await store.unsupersede(ALICE, [old.id, new.id]) == 1  # only the marked one
    [kept] = await store.get(ALICE, [old.id])
    assert (kept.superseded_by, kept.superseded_at) == (None, None)
    assert old.id in {h.record.id for h in await store.search(ALICE, "Rome", limit=5)}
    assert await store.unsupersede(ALICE, [old.id]) == 0
    assert await store.unsupersede(BOB, [old.id]) == 0


async def test_of_two_comparable_answers_the_newer_ranks_first(
    store: ports.MemorySpaces, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = record(ALICE, "I live in Rome", last_ts=T0)
    new = record(ALICE, "I live in Turin these days", last_ts=T0 + timedelta(days=7))
    await store.upsert([old, new])
    hits = await store.search(ALICE, "where do I live", limit=2)
    assert [h.record.id for h in hits] == [new.id, old.id]
    monkeypatch.setattr(recency, "RECENCY_BAND", 2.0)  # without recency: the old first
    hits = await store.search(ALICE, "where do I live", limit=2)
    assert [h.record.id for h in hits] == [old.id, new.id]


async def test_an_old_memory_that_is_the_only_answer_is_never_buried(
    store: ports.MemorySpaces,
) -> None:
    cat = record(ALICE, "my cat is called Miso", last_ts=T0)
    later = [
        record(ALICE, text, last_ts=T0 + timedelta(days=30 + i))
        for i, text in enumerate(
            [
                "I play bass in a band",
                "I went hiking in the Alps",
                "I cooked lasagna for my friends",
                "I finished reading Dune",
                "I bought a new keyboard",
                "I started learning Japanese",
            ]
        )
    ]
    await store.upsert([cat, *later])
    hits = await store.search(ALICE, "what is my cat called?", limit=3)
    assert hits[0].record.id == cat.id
