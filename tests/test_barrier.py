"""The ingestion barrier: what a turn's tools changed keeps competing copies out of personal memory."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from memory import identity, models, pipeline
from memory.adapters import ollama as ollama_adapter
from memory.adapters import postgres, qdrant
from memory.consolidate import barrier, consolidation
from memory.history import reducers, transcript, working
from memory.spaces import embedders
from memory.state import channel as state
from memory.state import tools

if TYPE_CHECKING:
    from config.settings import Settings
    from tests.conftest import SettingsFactory
    from tests.fakes import ollama as fake_ollama_module

T0 = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)


def chat(n: int, login: str, text: str) -> models.ChatEvent:
    return models.ChatEvent(
        id=f"s1-m{n}",
        stream="s1",
        user_id=f"id-{login}",
        login=login,
        text=text,
        ts=T0 + timedelta(seconds=n),
    )


def test_decide_scopes_to_the_involved_viewers_or_the_whole_batch() -> None:
    batch = {"id-alice", "id-bob", "id-carol"}
    viewers = barrier.decide({"relationships"}, {"id-alice", "id-bob"}, batch, "viewers")
    assert viewers.to_json() == {
        "domains": ["relationships"],
        "user_ids": ["id-alice", "id-bob"],
        "whole_batch": False,
    }
    assert viewers.excludes("id-alice") and not viewers.excludes("id-carol")
    whole = barrier.decide({"notes", "jokes"}, set(), batch, "batch")
    assert whole.whole_batch and whole.domains == ("jokes", "notes")
    assert whole.user_ids == batch and whole.excludes("id-anyone")
    assert barrier.decide(set(), {"id-alice"}, batch, "batch") == barrier.NO_BARRIER
    assert barrier.NO_BARRIER.empty and not barrier.NO_BARRIER.excludes("id-alice")


async def turn_of(db: postgres.Database) -> str:
    log = transcript.Transcript(db)
    await log.append_events([chat(1, "alice", "hi")])
    return await log.start_turn("s1", ["s1-m1"])


async def test_barriers_are_recorded_merged_per_turn_and_read_back(
    db: postgres.Database, make_settings: SettingsFactory
) -> None:
    turn, other = await turn_of(db), await turn_of(db)
    runner = tools.ToolRunner(db, make_settings())
    assert await barrier.barrier_for_turn(db, turn) == barrier.NO_BARRIER
    assert await runner.record_barrier(turn, set(), {"id-alice"}, {"id-alice"}) is None
    assert await barrier.barrier_for_turn(db, turn) == barrier.NO_BARRIER

    first = await runner.record_barrier(turn, {"requests"}, {"id-alice"}, {"id-alice", "id-bob"})
    assert first == {"domains": ["requests"], "user_ids": ["id-alice"], "whole_batch": False}
    merged = await runner.record_barrier(turn, {"notes"}, {"id-bob"}, {"id-alice", "id-bob"})
    assert merged == {
        "domains": ["notes", "requests"],
        "user_ids": ["id-alice", "id-bob"],
        "whole_batch": False,
    }
    decision = await barrier.barrier_for_turn(db, turn)
    assert decision.to_json() == merged
    assert await barrier.barrier_for_turn(db, other) == barrier.NO_BARRIER

    batch_runner = tools.ToolRunner(db, make_settings(memory={"barrier_scope": "batch"}))
    whole = await batch_runner.record_barrier(other, {"jokes"}, {"id-bob"}, {"id-carol"})
    assert whole == {"domains": ["jokes"], "user_ids": ["id-bob", "id-carol"], "whole_batch": True}
    assert (await barrier.barrier_for_turn(db, other)).excludes("id-someone-else")


async def run_turn(
    db: postgres.Database,
    settings: Settings,
    fake_ollama: fake_ollama_module.FakeOllama,
    events: list[models.ChatEvent],
) -> models.TurnReport:
    log = transcript.Transcript(db)
    await log.ensure_stream("s1", channel="chan")
    turns = pipeline.TurnPipeline(
        transcript=log,
        history=working.InProcessHistory(cap=100),
        model=ollama_adapter.OllamaChat(fake_ollama.url, "llama3.2:3b"),
        seams=pipeline.Seams(
            planner=pipeline.NoPlanner(),
            retriever=pipeline.NoRetrieval(),
            reducer=reducers.KeepAll(),
            tools=tools.ToolRunner(db, settings),
        ),
        system_prompt="You are Mnemo.",
    )
    await log.append_events(events)
    return await turns.run(models.Batch(stream="s1", events=tuple(events)))


@pytest.mark.parametrize("scope", ["viewers", "batch"])
async def test_done_when_a_recorded_relationship_leaves_no_semantic_copy_in_personal_memory(
    db: postgres.Database,
    make_settings: SettingsFactory,
    fake_ollama: fake_ollama_module.FakeOllama,
    scope: str,
) -> None:
    settings = make_settings(memory={"barrier_scope": scope})
    batch = [
        chat(1, "alice", "bob and I are siblings, remember that"),
        chat(2, "bob", "alice is my sister, we are siblings"),
        chat(3, "carol", "I work as a graphic designer"),
    ]
    fake_ollama.call_tool(
        "set_relationship", {"viewer_a": "alice", "viewer_b": "bob", "kind": "siblings"}
    )
    fake_ollama.reply("Recorded: alice and bob are siblings.")
    report = await run_turn(db, settings, fake_ollama, batch)

    # the canonical record exists, made by this turn
    rows = await state.ChannelState(db.pool).relationships("chan")
    assert [(r.user_a, r.user_b, r.kind, r.turn_id) for r in rows] == [
        ("id-alice", "id-bob", "siblings", report.turn_id)
    ]
    # the turn report (and the journalled report) show the barrier
    expected = {
        "domains": ["relationships"],
        "user_ids": ["id-alice", "id-bob", *(["id-carol"] if scope == "batch" else [])],
        "whole_batch": scope == "batch",
    }
    assert report.barrier == expected
    row = await transcript.Transcript(db).turn(report.turn_id)
    assert row is not None and row.report is not None and row.report["barrier"] == expected

    embedder = embedders.OfflineHashEmbedder()
    async with await qdrant.open_spaces(settings, embedder, location=":memory:") as store:
        consolidator = consolidation.Consolidator(
            db, store, settings, barrier_source=consolidation.StateBarrier(db)
        )
        await consolidator.consolidate(report.turn_id)
        for user_id in ("id-alice", "id-bob"):
            held = await store.list(identity.personal_key(user_id))
            assert [m for m in held if m.turn_id == report.turn_id] == []
        carol = await store.list(identity.personal_key("id-carol"))
        assert [m.text for m in carol] == (
            [] if scope == "batch" else ["I work as a graphic designer"]
        )
        # the public record of the turn stays
        episodes = await store.list(identity.episodic_key("s1"))
        assert [e.turn_id for e in episodes] == [report.turn_id]

    # control: without the barrier the same turn does put the statements in personal memory
    async with await qdrant.open_spaces(settings, embedder, location=":memory:") as store:
        await consolidation.Consolidator(db, store, settings).consolidate(report.turn_id)
        alice = await store.list(identity.personal_key("id-alice"))
        assert [m.text for m in alice] == ["bob and I are siblings, remember that"]
