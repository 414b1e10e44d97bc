"""One search over several spaces (``search_spaces``) and episodes found by the bot's reply: the
same contract over the fake and every Qdrant layout (``tests.test_spaces.store``)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from memory import identity
from memory.spaces import records
from tests.test_spaces import T0, Kind, new_id, store

if TYPE_CHECKING:
    from memory import ports

__all__ = ["store"]  # the contract's fixture: the fake and every Qdrant layout


def episode(
    stream: str, text: str, *, reply: str | None = None, **fields: Any
) -> records.MemoryRecord:
    values: dict[str, Any] = {
        "id": new_id(),
        "space": identity.episodic_key(stream),
        "kind": Kind.EPISODIC,
        "text": text,
        "stream": stream,
        "turn_id": f"turn-{new_id()}",
        "origin_message_ids": (f"m-{new_id()}",),
        "participants": ("1001",),
        "first_ts": T0,
        "last_ts": T0,
        "created_at": T0,
        "extra": {"reply": reply, "messages": []},
    }
    values.update(fields)
    return records.MemoryRecord(**values)


async def test_an_episode_is_found_by_the_bots_reply(store: ports.MemorySpaces) -> None:
    said = episode(
        "s1", "alice: where should I eat in Rome tonight?", reply="Try Trattoria Zanzibar"
    )
    other = episode("s1", "bob: what a boss fight", reply="gg bob")
    await store.upsert([said, other])

    hits = await store.search(identity.episodic_key("s1"), "Zanzibar", limit=5)

    assert [h.record.id for h in hits][:1] == [said.id]
    assert hits[0].record.text == "alice: where should I eat in Rome tonight?"  # shown apart
    assert hits[0].record.reply == "Try Trattoria Zanzibar"


async def test_an_erased_reply_is_no_longer_searchable(store: ports.MemorySpaces) -> None:
    said = episode("s1", "carol: hi mnemo", reply="hi carol, Zanzibar rocks")
    await store.upsert([said, episode("s1", "dave: the zanzibar map is great")])
    # what erasure leaves of a reply to an erased viewer (``ops.erasure``), upserted again
    erased = dataclasses.replace(said, extra={**said.extra, "reply": records.REDACTED_REPLY})
    await store.upsert([erased])

    hits = await store.search(identity.episodic_key("s1"), "zanzibar rocks", limit=5)

    assert erased.reply is None
    assert erased.search_text == "carol: hi mnemo"
    assert hits[0].record.id != said.id
    assert hits[-1].record.reply is None


async def test_search_spaces_ranks_several_streams_as_one(store: ports.MemorySpaces) -> None:
    week = timedelta(days=7)
    old = episode("s1", "alice: any sci-fi book for me?", reply="Read Hyperion by Dan Simmons",
                  last_ts=T0)  # fmt: skip
    noise = [episode("s2", f"bob: level {n} was hard", reply="well played", last_ts=T0 + week)
             for n in range(6)]  # fmt: skip
    elsewhere = episode("s9", "erin: Hyperion Hyperion Hyperion", reply="Hyperion")
    await store.upsert([old, *noise, elsewhere])
    keys = [identity.episodic_key(s) for s in ("s2", "s1", "s3")]  # s3: never written

    hits = await store.search_spaces(keys, "which book did you recommend, Hyperion?", limit=3)

    assert hits[0].record.id == old.id
    assert {h.record.space for h in hits} <= set(keys)  # s9 is not searched
    assert elsewhere.id not in {h.record.id for h in hits}


async def test_search_spaces_window_and_limits(store: ports.MemorySpaces) -> None:
    first = episode("s1", "alice: I got a new guitar", last_ts=T0)
    later = episode("s2", "alice: my guitar broke", last_ts=T0 + timedelta(days=14))
    await store.upsert([first, later])
    keys = [identity.episodic_key("s1"), identity.episodic_key("s2")]
    window = records.TimeWindow(since=T0 + timedelta(days=7))

    inside = await store.search_spaces(keys, "guitar", limit=5, window=window)

    assert [h.record.id for h in inside] == [later.id]
    assert await store.search_spaces(keys, "guitar", limit=0) == []
    assert await store.search_spaces([], "guitar", limit=5) == []
    with pytest.raises(ValueError, match="one kind"):
        await store.search_spaces([keys[0], identity.personal_key("1001")], "guitar")
