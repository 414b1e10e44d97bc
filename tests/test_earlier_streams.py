"""The episodes of the channel's earlier streams (the ``earlier`` source): a question to
the bot in a fresh stream reaches them, the bot's replies are found and shown as the bot's own
words (never a viewer's), a question about what the bot said shows them first."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from memory import models
from memory.adapters import qdrant
from memory.consolidate import documents
from memory.recall import cache as cache_module
from memory.recall import context, directory, earlier, planner, retrieval
from memory.spaces import embedders
from tests import conftest
from tests import retrieval_support as support
from tests.fakes import spaces as fake_spaces

NOW = support.T0
WEEK = timedelta(days=7)


def turn(stream: str, n: int, text: str, reply: str, at: Any) -> Any:
    """The episode consolidation makes of one turn (``documents.episode_record``)."""
    said = models.ChatEvent(id=f"{stream}-m{n}", stream=stream, user_id=support.IDS["alice"],
                            login="alice", text=text, ts=at)  # fmt: skip
    return documents.episode_record(f"{stream}-t{n}", stream, [said], reply=reply, reply_ts=at)


@pytest.fixture(params=["fake", "per_space", "shared"])
async def spaces(request: pytest.FixtureRequest) -> Any:
    if request.param == "fake":
        yield fake_spaces.InMemorySpaces()
        return
    settings = conftest.IsolatedSettings(qdrant={"layout": request.param})
    opened = await qdrant.open_spaces(
        settings, embedders.OfflineHashEmbedder(), location=":memory:"
    )
    async with opened:
        yield opened


async def channel(spaces: Any) -> directory.ViewerDirectory:
    """Three weekly streams before this one (s1, where the question is asked)."""
    weeks = {"s-3": 3 * WEEK, "s-2": 2 * WEEK, "s-1": WEEK}
    await spaces.upsert([
        turn("s-3", 1, "I'm going to Rome next month, where should I eat?",
             "Try Trattoria Zanzibar near the Pantheon, their carbonara is famous", NOW - weeks["s-3"]),
        turn("s-3", 2, "the boss fight was so hard", "gg, that boss is brutal", NOW - weeks["s-3"]),
        turn("s-2", 1, "I started learning the cello", "Nice! Cello is a lovely instrument",
             NOW - weeks["s-2"]),
        turn("s-1", 1, "what a raid", "thanks for the raid everyone", NOW - weeks["s-1"]),
    ])  # fmt: skip
    viewers = directory.ViewerDirectory()
    for stream, ago in weeks.items():
        viewers.note_stream(stream, NOW - ago, NOW - ago + timedelta(hours=2))
    viewers.note_stream("s1", NOW, NOW)
    return viewers


async def ask(spaces: Any, viewers: Any, text: str) -> tuple[models.Plan, retrieval.RecallResult]:
    settings = support.plain_settings()
    retriever = retrieval.build_retriever(settings, spaces=spaces, profiles=support.NoProfiles(),
                                          cache=cache_module.InProcessCache(), streams=viewers)  # fmt: skip
    batch = support.one_batch(support.event("alice", text, 1))
    plan = planner.Planner(settings, streams=viewers).plan(batch, [])
    return plan, await retriever.retrieve(plan, batch, [])


async def test_a_question_in_a_fresh_stream_finds_the_bots_reply_of_a_past_stream(
    spaces: Any,
) -> None:
    viewers = await channel(spaces)

    plan, result = await ask(
        spaces, viewers, "@livememory which restaurant in Rome did you recommend to me?"
    )

    [source] = [s for s in plan.sources if s.kind == earlier.KIND]
    assert source.bot_words
    first = result.items[0]
    assert (first.source, first.viewer, first.stream) == ("earlier", None, "s-3")
    assert first.reply.startswith("Try Trattoria Zanzibar")
    assert first.said == "alice: I'm going to Rome next month, where should I eat?"
    lines = result.block.splitlines()
    # the past streams' section comes first; the reply is the bot's ("you"), never a viewer's
    assert lines[1] == "## Past streams"
    assert lines[2].startswith(
        "- [stream · 3 weeks ago] alice: I'm going to Rome next month, where should I eat?"
        " → you replied: Try Trattoria Zanzibar near the Pantheon"
    )
    assert not any(i.reply for i in result.items if i.source in context.SECTION_OF)


async def test_any_question_to_the_bot_also_searches_earlier_streams(spaces: Any) -> None:
    viewers = await channel(spaces)

    plan, result = await ask(spaces, viewers, "@livememory what instrument am I learning?")

    assert [s.bot_words for s in plan.sources if s.kind in ("episodic", "earlier")] == [False] * 2
    found = [i for i in result.items if i.source == "earlier"]
    assert found and found[0].said == "alice: I started learning the cello"
    assert "\n## Past streams\n- [stream · 2 weeks ago] alice: I started learning the cello" in (
        result.block
    )


def test_no_earlier_source_without_an_earlier_stream_or_for_the_last_stream() -> None:
    settings = support.plain_settings()
    question = support.one_batch(support.event("alice", "@livememory what did you recommend?", 1))
    alone = directory.ViewerDirectory()
    alone.note_stream("s1", NOW, NOW)
    assert earlier.KIND not in [
        s.kind for s in planner.Planner(settings).plan(question, []).sources
    ]
    plan = planner.Planner(settings, streams=alone).plan(question, [])
    assert earlier.KIND not in [s.kind for s in plan.sources]

    alone.note_stream("s0", NOW - WEEK, NOW - WEEK + timedelta(hours=1))
    last = support.one_batch(support.event("alice", "@livememory what happened last stream?", 1))
    plan = planner.Planner(settings, streams=alone).plan(last, [])
    episodes = [(s.kind, s.stream) for s in plan.sources if s.kind in ("episodic", earlier.KIND)]
    assert episodes == [("episodic", "s0")]


@pytest.mark.parametrize(
    "text",
    [
        "@livememory remind me of the restaurant you recommended",
        "@livememory you told me about a restaurant in Rome, which one was it",
        "@livememory mi hai consigliato un ristorante a Roma, qual era?",
        "@livememory ricordami il ristorante di cui abbiamo parlato",
        "@livememory which restaurant in Rome did you recommend?",
    ],
)
def test_a_question_about_the_bots_words_is_planned_on_the_episodes(text: str) -> None:
    viewers = directory.ViewerDirectory()
    viewers.note_stream("s0", NOW - WEEK, NOW - WEEK + timedelta(hours=1))
    plan = planner.Planner(support.plain_settings(), streams=viewers).plan(
        support.one_batch(support.event("alice", text, 1)), []
    )
    episodes = [s for s in plan.sources if s.kind in ("episodic", earlier.KIND)]
    assert [(s.kind, s.bot_words) for s in episodes] == [("episodic", True), ("earlier", True)]


async def test_the_earlier_source_searches_at_most_the_configured_latest_streams(
    spaces: Any,
) -> None:
    viewers = await channel(spaces)
    settings = support.plain_settings(earlier_streams=2)  # s-1 and s-2: not Rome's s-3
    fetch = earlier.EarlierEpisodes(spaces, viewers, limit=5, max_streams=2)
    batch = support.one_batch(support.event("alice", "@livememory Rome restaurant?", 1))
    source = models.PlannedSource(kind=earlier.KIND, query="Rome restaurant")

    items = await fetch(source, batch)

    assert settings.memory.earlier_streams == 2
    assert viewers.earlier("s1", before=NOW + timedelta(seconds=1), limit=2) == ["s-1", "s-2"]
    assert {i.stream for i in items} <= {"s-1", "s-2"}


@pytest.mark.parametrize(
    "text",
    [
        "@livememory can you recommend a show or movie for me to watch tonight?",
        "@livememory what do you suggest for dinner?",
    ],
)
def test_a_request_for_a_recommendation_is_not_a_question_about_the_bots_words(text: str) -> None:
    # LongMemEval's preference questions: the bot's earlier replies crowded out the viewer's own
    # statements that say what they like
    assert not earlier.asks_bot_words(text)


def test_an_episode_line_gives_the_bots_reply_its_share_and_is_kept_beside_the_statement() -> None:
    statement = models.RecallItem(source="recall", space="viewer-alice", viewer="alice",
                                  memory_id="m1", text="I'm going to Rome " + "very " * 80,
                                  origin_message_ids=("a1",), score=0.9)  # fmt: skip
    said = f"alice: {statement.text}"
    episode = models.RecallItem(source="episodic", space="stream-s1", viewer=None, memory_id="e1",
                                text=f"{said}\nTry Trattoria Zanzibar " + "really " * 80,
                                reply_at=len(said) + 1, origin_message_ids=("a1",), score=0.5)  # fmt: skip
    outcomes = [
        context.SourceOutcome(source=models.PlannedSource(kind="recall", viewer="alice"),
                              items=(statement,)),
        context.SourceOutcome(source=models.PlannedSource(kind="episodic"), items=(episode,)),
    ]  # fmt: skip

    block = context.assemble(outcomes, [], token_budget=800).block.splitlines()

    # the viewer section first (not a question about the bot's words), the episode kept: it
    # adds the reply to the statement the viewer's memory shows
    assert block[1:3] == ["## What viewers told us (most relevant first)", block[2]]
    [line] = [line for line in block if line.startswith("- [stream]")]
    said_part, reply_part = line.removeprefix("- [stream] ").split(context.REPLY_LABEL)
    assert len(said_part) <= context.MAX_ITEM_CHARS // 2 and said_part.startswith("alice: I'm")
    assert reply_part.startswith("Try Trattoria Zanzibar") and reply_part.endswith("…")
    assert len(line) <= context.MAX_ITEM_CHARS + len("- [stream] ")
    # asked what the bot said: the episode first, the statement it shows not repeated
    outcomes[1] = context.SourceOutcome(
        source=models.PlannedSource(kind="episodic", bot_words=True), items=(episode,)
    )
    asked = context.assemble(outcomes, [], token_budget=800)
    assert [i.memory_id for i in asked.items] == ["e1"]
    assert asked.block.splitlines()[1] == "## Earlier on stream"


def test_a_fresh_calendar_knows_no_earlier_stream() -> None:
    viewers = directory.ViewerDirectory()
    viewers.register("1001", "alice", stream="s0", at=NOW - WEEK)
    viewers.forget_streams()
    assert viewers.earlier("s1", before=NOW, limit=5) == []
    assert viewers.lookup("alice") == ("alice", "1001")  # the viewers stay


def test_past_episodes_get_what_the_viewers_lines_leave_of_the_budget() -> None:
    lines = tuple(
        models.RecallItem(source="recall", space="viewer-alice", viewer="alice",
                          memory_id=f"m{n}", text=f"my memory number {n} " + "x" * 260,
                          origin_message_ids=(f"a{n}",), score=0.1)
        for n in range(12)
    )  # fmt: skip
    past = models.RecallItem(source="earlier", space="stream-s0", viewer=None, memory_id="e",
                             text="alice: something else " + "y" * 260, score=1.4)  # fmt: skip
    outcomes = [
        context.SourceOutcome(source=models.PlannedSource(kind="recall", viewer="alice"),
                              items=lines),
        context.SourceOutcome(source=models.PlannedSource(kind=earlier.KIND), items=(past,)),
    ]  # fmt: skip

    full = context.assemble(outcomes, [], token_budget=800)
    roomy = context.assemble(outcomes, [], token_budget=3000)

    assert "e" not in [i.memory_id for i in full.items] and len(full.items) >= 10
    assert [i.memory_id for i in roomy.items][-1] == "e"


def test_the_earlier_source_asks_for_the_slots_its_question_asks_for() -> None:
    """A question for a profile slot answered by the viewer's statement of it leaves the past
    streams' episodes out as it does this stream's (``relevance.answered``)."""
    viewers = directory.ViewerDirectory()
    viewers.note_stream("s0", NOW - WEEK, NOW - WEEK + timedelta(hours=1))
    plan = planner.Planner(support.plain_settings(), streams=viewers).plan(
        support.one_batch(support.event("alice", "@livememory where does @bob live?", 1)), []
    )
    episodes = [s for s in plan.sources if s.kind in ("episodic", earlier.KIND)]
    assert [(s.kind, s.asks) for s in episodes] == [
        ("episodic", frozenset({"location"})),
        (earlier.KIND, frozenset({"location"})),
    ]
