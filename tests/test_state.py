"""Structured channel state on real Postgres: per-channel rows, updates, expiry, the state source."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from memory.history import transcript
from memory.state import channel as state
from tests import chatlog

if TYPE_CHECKING:
    from memory.adapters import postgres


async def seed(db: postgres.Database, *, channel: str | None = "chan") -> str:
    """Stream s1 (of ``channel``) with alice, bob and carol; returns a turn id over m1."""
    log = transcript.Transcript(db)
    await log.ensure_stream("s1", channel=channel)
    await log.append_events(
        [
            chatlog.chat(1, "alice", "hi"),
            chatlog.chat(2, "Bob", "yo"),
            chatlog.chat(3, "carol", "hello"),
        ]
    )
    return await log.start_turn("s1", ["s1-m1"])


async def test_channel_is_the_streams_channel_or_the_stream_id(db: postgres.Database) -> None:
    log = transcript.Transcript(db)
    await log.ensure_stream("s1", channel="chan")
    await log.ensure_stream("s2")
    assert await state.channel_of(db, "s1") == "chan"
    assert await state.channel_of(db, "s2") == "s2"
    assert await state.channel_of(db, "never-seen") == "never-seen"


async def test_viewers_resolve_by_normalized_login(db: postgres.Database) -> None:
    await seed(db)
    repo = state.ChannelState(db.pool)
    assert await repo.user_id_of("@BOB") == ("id-Bob", "bob")
    assert await repo.user_id_of("nobody") is None
    assert await repo.logins(["id-alice", "id-Bob", "id-x"]) == {
        "id-alice": "alice",
        "id-Bob": "bob",
    }


async def test_requests_open_complete_cancel_and_list(db: postgres.Database) -> None:
    turn = await seed(db)
    repo = state.ChannelState(db.pool)
    song = await repo.add_request("chan", "id-alice", "play Celeste", at=chatlog.T0, turn_id=turn)
    other = await repo.add_request("chan", "id-Bob", "speedrun", at=chatlog.T0, turn_id=None)
    assert song.status is state.RequestStatus.OPEN and song.turn_id == turn

    later = chatlog.T0 + timedelta(minutes=5)
    done = await repo.close_request(
        "chan", song.id, state.RequestStatus.COMPLETED, at=later, turn_id="t2"
    )
    assert done is not None and done.status is state.RequestStatus.COMPLETED
    assert done.updated_at == later and done.turn_id == "t2" and done.created_at == chatlog.T0
    # closing twice, or in another channel, changes nothing
    again = await repo.close_request(
        "chan", song.id, state.RequestStatus.CANCELLED, at=later, turn_id=None
    )
    assert again is None
    assert (
        await repo.close_request(
            "other", other.id, state.RequestStatus.CANCELLED, at=later, turn_id=None
        )
        is None
    )

    assert [r.id for r in await repo.requests("chan")] == [other.id]
    assert [r.id for r in await repo.requests("chan", status=None)] == [other.id, song.id]
    assert [r.id for r in await repo.requests("chan", user_id="id-alice", status=None)] == [song.id]
    assert await repo.requests("other") == []


async def test_a_pair_has_one_current_relationship_updatable_and_removable(
    db: postgres.Database,
) -> None:
    turn = await seed(db)
    repo = state.ChannelState(db.pool)
    first = await repo.set_relationship(
        "chan", "id-Bob", "id-alice", "friends", since="2019", at=chatlog.T0, turn_id=turn
    )
    assert (first.user_a, first.user_b) == ("id-Bob", "id-alice")  # stored in order
    changed = await repo.set_relationship(
        "chan", "id-alice", "id-Bob", "siblings", since=None, at=chatlog.T0, turn_id="t2"
    )
    assert changed.id == first.id and changed.kind == "siblings" and changed.since == "2019"
    assert [r.kind for r in await repo.relationships("chan", user_id="id-alice")] == ["siblings"]
    assert await repo.relationships("chan", user_id="id-carol") == []

    removed = await repo.remove_relationship(
        "chan", "id-alice", "id-Bob", at=chatlog.T0, turn_id="t3"
    )
    assert removed is not None and removed.id == first.id
    assert await repo.relationships("chan") == []
    assert (
        await repo.remove_relationship("chan", "id-alice", "id-Bob", at=chatlog.T0, turn_id=None)
        is None
    )
    # the record of what was true stays
    rows = await db.pool.fetch("SELECT removed_turn FROM state_relationships")
    assert [r["removed_turn"] for r in rows] == ["t3"]
    again = await repo.set_relationship(
        "chan", "id-alice", "id-Bob", "rivals", since=None, at=chatlog.T0, turn_id="t4"
    )
    assert again.id != first.id and again.since is None


async def test_expired_notes_are_never_served(db: postgres.Database) -> None:
    await seed(db)
    repo = state.ChannelState(db.pool)
    soon = await repo.add_note(
        "chan",
        "alice is away until 21:00",
        user_id="id-alice",
        expires_at=chatlog.T0 + timedelta(hours=1),
        at=chatlog.T0,
        turn_id=None,
    )
    forever = await repo.add_note(
        "chan", "no spoilers", user_id=None, expires_at=None, at=chatlog.T0, turn_id=None
    )
    assert [n.id for n in await repo.notes("chan", now=chatlog.T0)] == [forever.id, soon.id]
    after = chatlog.T0 + timedelta(hours=2)
    assert [n.id for n in await repo.notes("chan", now=after)] == [forever.id]
    assert await repo.notes("chan", now=after, user_id="id-alice") == []
    items = await state.fetch_state(db, "s1", "away", user_ids=["id-alice"], now=after)
    assert all("away" not in item.text for item in items)
    items = await state.fetch_state(db, "s1", "away", user_ids=["id-alice"], now=chatlog.T0)
    assert any("away" in item.text for item in items)


async def test_an_inside_joke_recorded_again_adds_viewers_and_keeps_its_first_time(
    db: postgres.Database,
) -> None:
    await seed(db)
    repo = state.ChannelState(db.pool)
    first = await repo.add_joke("chan", "The Duck!", ["id-alice"], at=chatlog.T0, turn_id="t1")
    later = chatlog.T0 + timedelta(days=3)
    second = await repo.add_joke("chan", "the duck", ["id-Bob", "id-alice"], at=later, turn_id="t2")
    assert second.id == first.id and second.user_ids == ("id-Bob", "id-alice")
    assert second.first_at == chatlog.T0 and second.text == "The Duck!"
    assert [j.id for j in await repo.jokes("chan", user_id="id-Bob")] == [first.id]
    assert await repo.jokes("chan", user_id="id-carol") == []


async def test_fetch_state_returns_canonical_items_with_provenance(db: postgres.Database) -> None:
    turn = await seed(db)
    repo = state.ChannelState(db.pool)
    rel = await repo.set_relationship(
        "chan", "id-alice", "id-Bob", "siblings", since=None, at=chatlog.T0, turn_id=turn
    )
    await repo.add_request("chan", "id-carol", "play Celeste", at=chatlog.T0, turn_id=None)
    await repo.add_note(
        "chan", "tournament on Friday", user_id=None, expires_at=None, at=chatlog.T0, turn_id=None
    )

    items = await state.fetch_state(
        db, "s1", "are you siblings?", user_ids=["id-alice"], now=chatlog.T0
    )
    assert [i.memory_id for i in items] == [f"state:relationships:{rel.id}"]
    item = items[0]
    assert (item.source, item.space, item.viewer, item.score) == ("state", "state", "bob", 1.0)
    assert item.text == "bob and alice: siblings"
    assert item.origin_message_ids == ("s1-m1",)

    # no viewer: every current row of the channel; with a viewer, other rows only on query words
    everything = await state.fetch_state(db, "s1", "", now=chatlog.T0)
    assert len(everything) == 3 and {i.score for i in everything} == {0.5}
    by_word = await state.fetch_state(db, "s1", "when is the tournament", user_ids=["id-alice"])
    assert [i.text for i in by_word][1:] == ["note: tournament on Friday"]
    # another channel sees nothing
    await transcript.Transcript(db).ensure_stream("s9", channel="elsewhere")
    assert await state.fetch_state(db, "s9", "", now=chatlog.T0) == []
