"""Time-scoped and past questions through retrieval: the viewer's recall lifts what was
said in the window among its candidates and keeps the best answer from outside it near the top (the episodes:
restricted, falling back to the whole stream when nothing is in it); a past question brings
superseded memories back, labelled; caches key on both."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import timedelta
from typing import Any

import pytest

from memory import identity, models
from memory.adapters import qdrant
from memory.recall import cache as cache_module
from memory.recall import directory, planner, retrieval, sources
from memory.spaces import embedders, records
from tests import retrieval_support as support
from tests.fakes import spaces as fake_spaces

NOW = support.T0  # the chat time of the questions (support.event: T0 + n seconds)
ALICE = identity.personal_key(support.IDS["alice"])


def said(text: str, days_ago: float) -> records.MemoryRecord:
    moment = NOW - timedelta(days=days_ago)
    return records.MemoryRecord(
        id=str(uuid.uuid5(uuid.NAMESPACE_URL, text)),
        space=ALICE,
        kind=records.MemoryKind.PERSONAL,
        text=text,
        user_id=support.IDS["alice"],
        login="alice",
        stream=f"s-{int(days_ago)}",
        origin_message_ids=(f"m-{int(days_ago)}",),
        first_ts=moment,
        last_ts=moment,
    )


#: one memory a week: the newest is the best match for "what did I bake", week two the answer
WEEKS = [
    said("I baked a lemon tart for my sister", 28),
    said("I baked rye bread with my grandma", 15),
    said("I baked cookies, I bake cookies every week, baking cookies is what I bake", 8),
    said("my cat knocked over the plant", 2),
]


@pytest.fixture(params=["fake", "qdrant"])
async def spaces(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    if request.param == "fake":
        yield fake_spaces.InMemorySpaces()
        return
    opened = await qdrant.open_spaces(
        support.plain_settings(), embedders.OfflineHashEmbedder(), location=":memory:"
    )
    async with opened:
        yield opened


async def ask(spaces: Any, text: str) -> retrieval.RecallResult:
    settings = support.plain_settings()
    retriever = retrieval.build_retriever(
        settings,
        spaces=spaces,
        profiles=support.NoProfiles(),
        cache=cache_module.InProcessCache(),
    )
    batch = support.one_batch(support.event("alice", text, 1))
    return await retriever.retrieve(planner.Planner(settings).plan(batch, []), batch, [])


def recalled(result: retrieval.RecallResult) -> list[str]:
    return [item.text for item in result.items if item.source == "recall"]


async def test_a_windowed_question_finds_the_weeks_memory_an_unwindowed_search_ranks_lower(
    spaces: Any,
) -> None:
    await spaces.upsert(WEEKS)
    plain = await spaces.search(ALICE, "what did I bake two weeks ago?", limit=5)
    assert plain[0].record.text != WEEKS[1].text  # the premise: unwindowed, week two is not first
    result = await ask(spaces, "what did I bake two weeks ago?")
    assert recalled(result)[0] == WEEKS[1].text
    # outside the window, the best unwindowed match ranks below it
    assert recalled(result).index(WEEKS[2].text) > 0
    line = next(line for line in result.block.splitlines() if "rye bread" in line)
    assert line.startswith("- [alice · 2 weeks ago] ")
    # in Italian too
    result = await ask(spaces, "cosa ho fatto due settimane fa? baked")
    assert recalled(result)[0] == WEEKS[1].text


async def test_an_empty_window_falls_back_to_the_whole_space(spaces: Any) -> None:
    await spaces.upsert(WEEKS)
    # nothing was said yesterday: the approximate words must not hide the answer
    result = await ask(spaces, "what did I bake yesterday?")
    assert WEEKS[2].text in recalled(result) and WEEKS[1].text in recalled(result)


async def test_a_window_full_of_other_talk_never_hides_the_answer(spaces: Any) -> None:
    # "last week" relative to when the story happened, not to now (LoCoMo asks so): the week
    # before the question holds other talk, the answer was said a month ago
    chatter = [
        said(text, 3 + i)
        for i, text in enumerate(
            [
                "my cat knocked over the plant",
                "I watched a movie about sharks",
                "I fixed the bike chain",
                "I repainted the kitchen blue",
                "I went swimming at the lake",
                "we played cards all night",
            ]
        )
    ]
    answer = said("I baked a lemon tart for the school fair", 30)
    await spaces.upsert([*chatter, answer])
    result = await ask(spaces, "what did I bake last week?")
    assert answer.text in recalled(result)[:3]


async def test_a_past_question_recalls_the_superseded_memory_labelled(spaces: Any) -> None:
    old, new = (
        said("I live in Rome, near the Colosseum", 21),
        said("I moved to Turin, I live in Turin now", 3),
    )
    await spaces.upsert([old, new])
    await spaces.supersede(ALICE, [old.id], by=new.id, at=NOW - timedelta(days=3))
    current = await ask(spaces, "where do I live?")
    assert recalled(current) == [new.text]
    past = await ask(spaces, "where did I live before?")
    assert set(recalled(past)) == {old.text, new.text}
    lines = past.block.splitlines()
    assert "- [alice · 3 weeks ago, since superseded] I live in Rome, near the Colosseum" in lines
    assert "- [alice · 3 days ago] I moved to Turin, I live in Turin now" in lines
    assert [i.superseded for i in past.items if i.text == old.text] == [True]


def test_cache_keys_differ_by_window_and_past_flag() -> None:
    spec = sources.SourceSpec(
        kind="recall", fetch=support.Fetcher("recall"), ttl_seconds=60, scope="viewer"
    )
    base = support.source("recall", "alice", query="what did I bake")
    week = records.TimeWindow(since=NOW - timedelta(days=14), until=NOW - timedelta(days=7))
    keys = {
        retrieval.cache_key(base, spec, "s1"),
        retrieval.cache_key(
            support.source("recall", "alice", query="what did I bake", window=week), spec, "s1"
        ),
        retrieval.cache_key(
            support.source("recall", "alice", query="what did I bake", past=True), spec, "s1"
        ),
    }
    assert len(keys) == 3
    assert all(key.startswith(f"{retrieval.CACHE_VERSION}:v:1001:") for key in keys)


async def test_the_turn_report_shows_the_window_of_each_source(spaces: Any) -> None:
    settings = support.plain_settings()
    batch = support.one_batch(support.event("alice", "what did I bake last week?", 1))
    plan = planner.Planner(settings).plan(batch, [])
    report = models.TurnReport(turn_id="t1", stream="s1", message_ids=["alice-m1"], plan=plan)
    [entry] = [s for s in report.to_json()["plan"]["sources"] if s["kind"] == "recall"]
    assert entry["window"] == {"since": "2026-11-16T00:00:00Z", "until": "2026-11-23T00:00:00Z"}
    assert entry["past"] is False


def episode(text: str, minutes_ago: int) -> records.MemoryRecord:
    moment = NOW - timedelta(minutes=minutes_ago)
    return records.MemoryRecord(
        id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"episode/{text}")),
        space=identity.episodic_key("s1"),
        kind=records.MemoryKind.EPISODIC,
        text=text,
        stream="s1",
        origin_message_ids=(f"e-{minutes_ago}",),
        first_ts=moment,
        last_ts=moment,
    )


async def test_the_start_of_the_stream_scopes_its_episodes(spaces: Any) -> None:
    early = episode("alice: we beat the ice dragon boss; bot: gg", 170)
    late = episode("bob: dragon boss again, the dragon boss, another dragon boss fight", 5)
    await spaces.upsert([early, late])
    settings = support.plain_settings()
    retriever = retrieval.build_retriever(
        settings, spaces=spaces, profiles=support.NoProfiles(), cache=cache_module.InProcessCache()
    )
    # the stream began three hours ago (the oldest line of the working history)
    history = [models.HistoryItem.from_event(support.event("carol", "hello!", -3 * 3600), "t0")]
    batch = support.one_batch(
        support.event("alice", "which dragon boss did we beat at the start?", 1)
    )
    plan = planner.Planner(settings).plan(batch, history)
    [planned] = [s for s in plan.sources if s.kind == "episodic"]
    assert planned.window is not None
    result = await retriever.retrieve(plan, batch, history)
    assert [i.text for i in result.items if i.source == "episodic"] == [early.text]
    assert "- [stream · earlier this stream] alice: we beat the ice dragon boss; bot: gg" in (
        result.block.splitlines()
    )


async def test_last_stream_searches_the_previous_streams_episodes(spaces: Any) -> None:
    before = [
        dataclasses.replace(
            episode("alice: we finished the lava temple; bot: gg", 3 * 24 * 60),
            space=identity.episodic_key("s0"),
            stream="s0",
        )
    ]
    await spaces.upsert([*before, episode("bob: the lava temple music is great", 3)])
    viewers = directory.ViewerDirectory()
    viewers.note_stream("s0", NOW - timedelta(days=3, hours=2), NOW - timedelta(days=3))
    settings = support.plain_settings()
    retriever = retrieval.build_retriever(
        settings, spaces=spaces, profiles=support.NoProfiles(), cache=cache_module.InProcessCache()
    )
    batch = support.one_batch(support.event("alice", "what temple did we finish last stream?", 1))
    plan = planner.Planner(settings, streams=viewers).plan(batch, [])
    [planned] = [s for s in plan.sources if s.kind == "episodic"]
    assert (planned.stream, planned.window) == ("s0", None)
    result = await retriever.retrieve(plan, batch, [])
    assert [i.text for i in result.items if i.source == "episodic"] == [before[0].text]
    assert "- [stream · 3 days ago] alice: we finished the lava temple; bot: gg" in (
        result.block.splitlines()
    )
    # the same query about this stream is another cache entry than the previous stream's
    query = models.PlannedSource(kind="episodic", query="lava temple")
    for stream, expected in (("s0", "we finished"), (None, "music"), ("s0", "we finished")):
        planned = dataclasses.replace(query, stream=stream)
        found = await retriever.retrieve(models.Plan(sources=(planned,)), batch, [])
        assert [expected in i.text for i in found.items] == [True]


async def test_the_block_shows_the_newer_of_two_long_statements_on_one_subject_first(
    spaces: Any,
) -> None:
    older = said(
        "Cool, thanks for the suggestions! By the way, I've been using my Fitbit Charge 3 for 6 "
        "months now, and it keeps me on track with my daily steps, any tips for lazy Sundays?",
        80,
    )
    newer = said(
        "I've been working on a bedtime routine and I think screens before bed affect my sleep. "
        "By the way, my Fitbit Charge 3 says I sleep badly, and I've had it for 9 months.",
        2,
    )
    await spaces.upsert([older, newer, *WEEKS])
    result = await ask(spaces, "How long have I been using my Fitbit Charge 3?")
    shown = recalled(result)
    assert shown.index(newer.text) < shown.index(older.text)
    lines = [line for line in result.block.splitlines() if "Fitbit" in line]
    assert lines[0].startswith("- [alice · 2 days ago] ")
