from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import pytest

from memory import errors, identity, models
from memory.consolidate import barrier, consolidation, documents
from memory.consolidate import profile as profile_module
from memory.ops import operations
from memory.recall import cache, retrieval
from memory.spaces import records
from tests import test_consolidation as helpers
from tests.fakes import spaces as fake_spaces

if TYPE_CHECKING:
    from memory.adapters import postgres
    from tests.conftest import SettingsFactory

msg = helpers.msg


class Memory:
    """A consolidated two-viewer stream, its operations and a real retrieval cache."""

    def __init__(self, db: postgres.Database, settings: Any) -> None:
        self.db = db
        self.spaces = fake_spaces.InMemorySpaces()
        self.profiles = profile_module.ProfileStore(db)
        self.cache = cache.InProcessCache()
        self.retriever = retrieval.build_retriever(
            settings, spaces=self.spaces, profiles=self.profiles, cache=self.cache
        )
        self.consolidator = consolidation.Consolidator(
            db, self.spaces, settings, profiles=self.profiles, invalidator=self.retriever
        )
        self.ops = operations.Operations(
            db, self.spaces, invalidator=self.retriever, profiles=self.profiles
        )
        self.turns: list[str] = []

    async def turn(self, *events: models.ChatEvent, reply: str = "ok") -> str:
        turn_id = await helpers.journal_turn(self.db, events, reply=reply)
        await self.consolidator.consolidate(turn_id)
        self.turns.append(turn_id)
        return turn_id

    async def personal(self, user_id: str) -> list[records.MemoryRecord]:
        return await self.spaces.list(identity.personal_key(user_id))

    async def warm_cache(self, login: str, user_id: str) -> None:
        """Run the profile and recall sources of a viewer so their results are cached."""
        plan = models.Plan(
            sources=(
                models.PlannedSource(kind="profile", viewer=login, user_id=user_id),
                models.PlannedSource(kind="recall", viewer=login, user_id=user_id, query="work"),
            )
        )
        batch = models.Batch(stream="s1", events=(msg("q1", login, "what do I do?"),))
        result = await self.retriever.retrieve(plan, batch, [])
        assert result.items, "the viewer's memory should be recalled"

    async def cached_for(self, user_id: str) -> int:
        return await self.cache.delete_prefix(f"{retrieval.CACHE_VERSION}:v:{user_id}:")

    async def audit(self) -> list[dict[str, Any]]:
        return await self.ops.audit_log(100)


@pytest.fixture
async def memory(db: postgres.Database, make_settings: SettingsFactory) -> Memory:
    mem = Memory(db, make_settings(bot_name="mnemo"))
    await mem.turn(
        msg("m1", "bob", "Alice lives in Rome, I'm from Milan"),
        msg("m2", "alice", "I work as a graphic designer", second=1),
        reply="@alice nice! @bob ciao Milano",
    )
    await mem.turn(
        msg("m3", "alice", "my cat is called Miso", second=10),
        msg("m4", "bob", "I play the guitar", second=11),
        reply="@alice Miso is a cute name",
    )
    return mem


async def test_forget_viewer_leaves_no_trace_in_space_profile_or_cache(memory: Memory) -> None:
    await memory.warm_cache("alice", "1001")
    report = await memory.ops.forget_viewer("1001", actor="admin:test")

    assert (report.memories, report.profile_facts) == (2, 2)
    assert await memory.personal("1001") == []
    assert await memory.profiles.get("1001") is None
    assert await memory.cached_for("1001") == 0
    # the public record stays without --everywhere
    episodes = await memory.spaces.list("stream:s1")
    assert any("alice: I work as a graphic designer" in e.text for e in episodes)
    # bob is untouched
    assert len(await memory.personal("1002")) == 2
    [row] = await memory.audit()
    assert (row["actor"], row["action"], row["target"]) == ("admin:test", "forget_viewer", "1001")
    assert row["details"]["everywhere"] is False


async def test_a_forgotten_viewer_is_not_brought_back_by_reconsolidation(memory: Memory) -> None:
    await memory.ops.forget_viewer("1001", actor="admin:test")
    for turn_id in memory.turns:
        await memory.consolidator.consolidate(turn_id)
    assert await memory.personal("1001") == []
    assert await memory.profiles.get("1001") is None
    # a statement made after the forget is new memory
    await memory.turn(msg("m9", "alice", "I moved to Turin", second=999_999_999))
    assert [r.text for r in await memory.personal("1001")] == ["I moved to Turin"]


async def test_forget_everywhere_redacts_episodes_and_the_served_transcript(
    memory: Memory,
) -> None:
    await memory.db.pool.execute(
        "INSERT INTO history_summaries (stream, covers_key, covers_ts, covers_count, text, model)"
        " VALUES ('s1', 'm3', now(), 3, 'alice said she is a graphic designer', 'm'),"
        " ('other', 'x', now(), 1, 'unrelated stream', 'm')"
    )
    report = await memory.ops.forget_viewer("1001", actor="admin:test", everywhere=True)
    summaries = await memory.db.pool.fetch("SELECT stream FROM history_summaries")
    assert [r["stream"] for r in summaries] == ["other"]  # the ones that may quote alice are gone

    assert (report.episodes_redacted, report.episodes_deleted, report.messages_redacted) == (
        2,
        0,
        2,
    )
    for episode in await memory.spaces.list("stream:s1"):
        assert "alice" not in episode.text
        assert "1001" not in episode.participants
        assert episode.extra["reply"] == operations.REDACTED
        assert all(m["user_id"] != "1001" for m in episode.extra["messages"])
    texts = {
        r["id"]: r["text"]
        for r in await memory.db.pool.fetch("SELECT id, text FROM messages_visible")
    }
    assert texts == {
        "m1": "Alice lives in Rome, I'm from Milan",
        "m2": "[redacted]",
        "m3": "[redacted]",
        "m4": "I play the guitar",
    }
    # re-consolidating the old turns does not bring alice back into the episodes either
    for turn_id in memory.turns:
        await memory.consolidator.consolidate(turn_id)
    assert all("alice" not in e.text for e in await memory.spaces.list("stream:s1"))


async def test_forget_memory_removes_it_for_good(memory: Memory) -> None:
    [designer, cat] = await memory.personal("1001")
    await memory.warm_cache("alice", "1001")
    forgotten = await memory.ops.forget_memory(designer.id, actor="twitch:alice", owner="1001")

    assert forgotten.text == "I work as a graphic designer"
    assert [r.id for r in await memory.personal("1001")] == [cat.id]
    profile = await memory.profiles.get("1001")
    assert profile is not None and profile.lines() == ["pet:cat: Miso"]
    assert await memory.cached_for("1001") == 0
    await memory.consolidator.consolidate(memory.turns[0])
    assert [r.id for r in await memory.personal("1001")] == [cat.id]


async def test_a_viewer_cannot_forget_someone_elses_memory(memory: Memory) -> None:
    [guitar, *_] = [r for r in await memory.personal("1002") if "guitar" in r.text]
    with pytest.raises(errors.UnknownMemory):
        await memory.ops.forget_memory(guitar.id, actor="twitch:alice", owner="1001")
    assert guitar in await memory.personal("1002")
    assert await memory.audit() == []


async def everything(memory: Memory) -> list[records.MemoryRecord]:
    return [r for s in await memory.spaces.spaces() for r in await memory.spaces.list(s)]


async def test_forget_turn_removes_every_memory_of_the_turn(memory: Memory) -> None:
    first = memory.turns[0]
    removed = await memory.ops.forget_turn(first, actor="admin:test")

    assert removed == 3  # alice's statement, bob's statement, the episode
    left = await everything(memory)
    assert left and all(r.turn_id != first for r in left)
    profile = await memory.profiles.get("1001")
    assert profile is not None and profile.lines() == ["pet:cat: Miso"]
    await memory.consolidator.consolidate(first)
    assert all(r.turn_id != first for r in await everything(memory))


async def test_correct_replaces_the_memory_with_a_linked_correction_ranked_first(
    memory: Memory,
) -> None:
    [designer, _] = await memory.personal("1001")
    correction = await memory.ops.correct(
        designer.id, "I work as an illustrator", actor="admin:test"
    )

    assert correction.kind is records.MemoryKind.CORRECTION
    assert correction.corrects == designer.id
    assert (correction.turn_id, correction.origin_message_ids) == (designer.turn_id, ("m2",))
    assert await memory.spaces.find(designer.id) is None
    hits = await memory.spaces.search("viewer:1001", "what is her job, designer", limit=2)
    assert hits[0].record.id == correction.id
    profile = await memory.profiles.get("1001")
    assert profile is not None and "job: illustrator" in profile.lines()
    # correcting again replaces the same correction document
    again = await memory.ops.correct(correction.id, "I work as a painter", actor="admin:test")
    assert again.id == correction.id
    assert [
        r.text for r in await memory.personal("1001") if r.kind is records.MemoryKind.CORRECTION
    ] == ["I work as a painter"]
    await memory.consolidator.consolidate(memory.turns[0])
    assert await memory.spaces.find(designer.id) is None
    actions = [row["action"] for row in await memory.audit()]
    assert actions == ["correct", "correct"]


async def test_unknown_targets_change_nothing(memory: Memory) -> None:
    before = {s: await memory.spaces.count(s) for s in await memory.spaces.spaces()}
    with pytest.raises(errors.UnknownMemory):
        await memory.ops.forget_memory("00000000-0000-0000-0000-000000000000", actor="a")
    with pytest.raises(errors.UnknownMemory):
        await memory.ops.correct("nope", "x", actor="a")
    with pytest.raises(errors.UnknownTurn):
        await memory.ops.forget_turn("no-such-turn", actor="a")
    with pytest.raises(errors.UnknownViewer):
        await memory.ops.resolve_viewer("nobody")
    assert {s: await memory.spaces.count(s) for s in await memory.spaces.spaces()} == before
    assert await memory.audit() == []


async def test_pause_and_resume_gate_memory_writing(memory: Memory) -> None:
    assert await memory.ops.pause("s1", actor="twitch:streamer") is True
    assert await memory.ops.pause("s1", actor="twitch:streamer") is False
    assert await memory.ops.is_paused("s1")
    paused = await memory.turn(msg("m5", "alice", "I moved to Turin", second=20))
    assert [r.text for r in await memory.personal("1001")] == [
        "I work as a graphic designer",
        "my cat is called Miso",
    ]
    assert await memory.ops.resume("s1", actor="twitch:streamer") is True
    await memory.consolidator.consolidate(paused)
    assert "I moved to Turin" in [r.text for r in await memory.personal("1001")]
    assert [r["action"] for r in reversed(await memory.audit())] == ["pause", "pause", "resume"]


async def test_export_holds_memories_profile_episodes_and_state(memory: Memory) -> None:
    await memory.db.pool.execute(
        "INSERT INTO state_notes (channel, user_id, text, created_at) VALUES"
        " ('s1', '1001', 'alice runs the quiz', now()), ('s1', '1002', 'bob is away', now());"
        " INSERT INTO state_relationships (channel, user_a, user_b, kind, created_at, updated_at)"
        " VALUES ('s1', '1001', '1002', 'siblings', now(), now());"
        " INSERT INTO state_requests (channel, user_id, text, created_at, updated_at)"
        " VALUES ('s1', '1002', 'play doom', now(), now());"
        " INSERT INTO state_inside_jokes (channel, text, text_key, user_ids, first_at, updated_at)"
        " VALUES ('s1', 'the cursed cat', 'cursed cat', '{1001,1002}', now(), now())"
    )
    viewer = await memory.ops.resolve_viewer("@Alice")
    data = await memory.ops.export(viewer)

    state = data["state"]  # the channel-state rows about her, not bob's own
    assert [n["text"] for n in state["notes"]] == ["alice runs the quiz"]
    assert [r["kind"] for r in state["relationships"]] == ["siblings"]
    assert state["requests"] == []
    assert [j["text"] for j in state["inside_jokes"]] == ["the cursed cat"]

    assert data["viewer"] == {"user_id": "1001", "login": "alice", "display_name": None}
    assert [m["text"] for m in data["memories"]] == [
        "I work as a graphic designer",
        "my cat is called Miso",
    ]
    assert [m["origin_message_ids"] for m in data["memories"]] == [["m2"], ["m3"]]
    assert {f["slot"] for f in data["profile"]["facts"]} == {"job", "pet:cat"}
    assert len(data["episodes"]) == 2
    json.dumps(data)  # JSON-ready


async def test_search_own_finds_only_the_viewers_memories(memory: Memory) -> None:
    hits = await memory.ops.search_own("1001", "my cat Miso", limit=5)
    assert hits[0].record.text == "my cat is called Miso"
    assert {hit.record.user_id for hit in hits} == {"1001"}


# -- forget versus a consolidation running at the same time (review finding 3) -------------------
async def blocked_on_a_viewer_lock(db: postgres.Database) -> None:
    """Returns once a session of this database waits for an advisory lock."""
    query = """SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
               AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))"""
    # Postgres offers no notification for a lock wait: poll its state (bounded by the test timeout)
    while not await db.pool.fetchval(query):  # noqa: ASYNC110
        await asyncio.sleep(0.01)


async def test_a_forget_between_the_tombstone_read_and_the_writes_is_not_undone(
    db: postgres.Database, make_settings: SettingsFactory
) -> None:
    memory = Memory(db, make_settings(bot_name="mnemo"))

    class ForgetDuringConsolidation:
        """The barrier is read between consolidation's first tombstone read and its writes."""

        async def excluded(self, turn_id: str) -> barrier.BarrierDecision:
            await memory.ops.forget_viewer("1001", actor="admin:test")
            return barrier.NO_BARRIER

    memory.consolidator.barrier = ForgetDuringConsolidation()
    await memory.turn(msg("m1", "alice", "I work as a graphic designer"))

    assert await memory.personal("1001") == []
    assert await memory.profiles.get("1001") is None


async def test_a_forget_waits_for_a_consolidation_writing_the_viewers_memories(
    memory: Memory,
) -> None:
    [designer, _] = await memory.personal("1001")
    write = memory.spaces.upsert
    forget: asyncio.Task[records.MemoryRecord] | None = None

    async def upsert_while_forgetting(records: Any) -> None:
        nonlocal forget
        if forget is None:  # the forget starts while the consolidation writes
            forget = asyncio.create_task(memory.ops.forget_memory(designer.id, actor="admin:test"))
            blocked = asyncio.create_task(blocked_on_a_viewer_lock(memory.db))
            await asyncio.wait({forget, blocked}, return_when=asyncio.FIRST_COMPLETED)
            blocked.cancel()
        await write(records)

    memory.spaces.upsert = upsert_while_forgetting  # type: ignore[method-assign]
    await memory.consolidator.consolidate(memory.turns[0])  # a retried job rewrites the turn
    assert forget is not None
    await forget

    assert designer.id not in [r.id for r in await memory.personal("1001")]
    profile = await memory.profiles.get("1001")
    assert profile is not None and profile.lines() == ["pet:cat: Miso"]


async def test_forget_and_correct_write_the_tombstone_before_deleting(memory: Memory) -> None:
    [designer, cat] = await memory.personal("1001")

    async def store_down(space: str, ids: Any) -> int:
        raise errors.StoreUnavailable("Qdrant went away")

    memory.spaces.delete = store_down  # type: ignore[method-assign]
    with pytest.raises(errors.StoreUnavailable):
        await memory.ops.forget_memory(designer.id, actor="admin:test")
    with pytest.raises(errors.StoreUnavailable):
        await memory.ops.correct(cat.id, "my cat is called Mochi", actor="admin:test")

    rows = await memory.db.pool.fetch("SELECT target FROM memory_tombstones WHERE kind = 'memory'")
    assert {row["target"] for row in rows} == {designer.id, cat.id}


# -- caches of stream-wide spaces (review finding 5) ---------------------------------------------
async def episodic_items(memory: Memory) -> list[models.RecallItem]:
    plan = models.Plan(sources=(models.PlannedSource(kind="episodic", query="graphic designer"),))
    batch = models.Batch(stream="s1", events=(msg("q1", "bob", "what did alice say?"),))
    return (await memory.retriever.retrieve(plan, batch, [])).items


async def test_forgetting_an_episode_drops_it_from_the_episodic_cache(memory: Memory) -> None:
    [episode, *_] = [i for i in await episodic_items(memory) if "designer" in i.text]
    await memory.ops.forget_memory(episode.memory_id, actor="admin:test")

    assert await memory.spaces.find(episode.memory_id) is None
    assert episode.memory_id not in [i.memory_id for i in await episodic_items(memory)]


async def test_loading_lore_drops_the_cached_lore(memory: Memory, tmp_path: Any) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    for folder, animal in ((old, "a red fox"), (new, "a blue owl")):
        folder.mkdir()
        (folder / "lore.yaml").write_text(f"- title: Mascot\n  text: the mascot is {animal}\n")
    plan = models.Plan(sources=(models.PlannedSource(kind="lore", query="what is the mascot?"),))
    batch = models.Batch(stream="s1", events=(msg("q1", "bob", "what is the mascot?"),))

    await memory.ops.load_lore(old, actor="admin:test")
    first = await memory.retriever.retrieve(plan, batch, [])
    await memory.ops.load_lore(new, actor="admin:test")
    again = await memory.retriever.retrieve(plan, batch, [])

    assert [i.text for i in first.items] == ["Mascot: the mascot is a red fox"]
    assert [i.text for i in again.items] == ["Mascot: the mascot is a blue owl"]


async def test_an_invalidator_without_invalidate_kind_still_works(memory: Memory) -> None:
    class ViewerOnly:
        def __init__(self) -> None:
            self.calls: list[tuple[str, bool]] = []

        async def invalidate_viewer(self, user_id: str, *, everywhere: bool = False) -> None:
            self.calls.append((user_id, everywhere))

    invalidator = ViewerOnly()
    ops = operations.Operations(
        memory.db, memory.spaces, invalidator=invalidator, profiles=memory.profiles
    )
    [episode, *_] = await memory.spaces.list("stream:s1")
    await ops.forget_memory(episode.id, actor="admin:test")
    [designer, _] = await memory.personal("1001")
    await ops.forget_memory(designer.id, actor="admin:test")

    assert await memory.spaces.find(episode.id) is None
    assert invalidator.calls == [("1001", False)]


# -- condensed facts (review finding 11) ---------------------------------------------------------
def condensed(source: records.MemoryRecord, text: str) -> records.MemoryRecord:
    return records.MemoryRecord(
        id=documents.point_id(source.turn_id or "", "1001", "fact", text.casefold()),
        space=source.space,
        kind=records.MemoryKind.FACT,
        text=text,
        user_id=source.user_id,
        login=source.login,
        stream=source.stream,
        turn_id=source.turn_id,
        origin_message_ids=source.origin_message_ids,
        participants=source.participants,
        first_ts=source.first_ts,
        last_ts=source.last_ts,
        extra={"source_memory_ids": [source.id]},
    )


async def test_forgetting_or_correcting_a_statement_drops_the_facts_condensed_from_it(
    memory: Memory,
) -> None:
    [designer, cat] = await memory.personal("1001")
    job, pet = condensed(designer, "Alice is a graphic designer"), condensed(cat, "Alice has a cat")
    await memory.spaces.upsert([job, pet])

    await memory.ops.forget_memory(designer.id, actor="twitch:alice", owner="1001")
    assert {r.text for r in await memory.personal("1001")} == {
        "my cat is called Miso",
        "Alice has a cat",
    }
    await memory.ops.correct(cat.id, "my cat is called Mochi", actor="admin:test")
    assert [r.text for r in await memory.personal("1001")] == ["my cat is called Mochi"]
    rows = await memory.db.pool.fetch("SELECT target FROM memory_tombstones WHERE kind = 'memory'")
    assert {row["target"] for row in rows} == {designer.id, cat.id, job.id, pet.id}
