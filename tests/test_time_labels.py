"""Time in the prompt: every memory and profile line says when it was said, relative to
the turn's chat time (the batch's newest message, never the wall clock)."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from memory import identity, models
from memory.recall import cache as cache_module
from memory.recall import context, planner, retrieval, timelabel
from memory.spaces import records
from tests import retrieval_support as support
from tests.fakes import spaces as fake_spaces

NOW = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)  # a Sunday evening, long before the wall clock
CLOCK = timelabel.ChatClock(now=NOW, stream="s9")
#: a viewer line with its time label: ``- [alice · 3 weeks ago] …``
LABELLED = re.compile(r"^- \[[^\]·]+ · [^\]]+\] ")


@pytest.mark.parametrize(
    ("said_at", "stream", "expected"),
    [
        (NOW - timedelta(minutes=20), "s9", "earlier this stream"),
        (NOW - timedelta(hours=3), "s8", "earlier today"),
        (NOW - timedelta(hours=3), None, "earlier today"),
        (NOW.replace(hour=1) - timedelta(hours=2), "s8", "yesterday"),
        (NOW - timedelta(days=1), "s9", "yesterday"),  # same stream id, but a day ago
        (NOW - timedelta(days=3), "s7", "3 days ago"),
        (NOW - timedelta(days=13), "s7", "13 days ago"),
        (NOW - timedelta(days=14), "s7", "2 weeks ago"),
        (NOW - timedelta(days=23), "s5", "3 weeks ago"),
        (NOW - timedelta(days=55), "s2", "7 weeks ago"),
        (NOW - timedelta(days=56), "s2", "2026-10-04"),
        (datetime(2025, 3, 1, 12, tzinfo=UTC), "s1", "2025-03-01"),
        (NOW + timedelta(minutes=1), "s8", "earlier today"),  # a clock a little ahead
    ],
)
def test_age_relative_to_chat_time(said_at: datetime, stream: str | None, expected: str) -> None:
    assert timelabel.age(said_at, CLOCK, stream=stream) == expected


def test_chat_time_is_the_newest_message_of_the_batch() -> None:
    first = support.event("alice", "hi", 1)
    late = support.event("bob", "hello", 90)
    clock = timelabel.ChatClock.of_batch(support.one_batch(late, first))
    assert clock == timelabel.ChatClock(now=late.ts, stream="s1")


def item(
    kind: str, text: str, viewer: str | None, said_at: datetime | None, **kw: object
) -> models.RecallItem:
    return models.RecallItem(
        source=kind,
        space=f"viewer-{viewer}" if viewer else kind,
        viewer=viewer,
        memory_id=f"{kind}-{text}",
        text=text,
        said_at=said_at,
        **kw,  # type: ignore[arg-type]
    )


def ok(kind: str, viewer: str | None, *items: models.RecallItem) -> context.SourceOutcome:
    return context.SourceOutcome(
        source=models.PlannedSource(kind=kind, viewer=viewer, user_id="u1", query="q"),
        items=items,
    )


def test_memory_and_profile_lines_carry_their_time_and_the_block_says_newer_holds() -> None:
    outcomes = [
        ok(
            "profile",
            "alice",
            item("profile", "I moved to Turin", "alice", NOW - timedelta(days=8), stream="s8"),
        ),
        ok(
            "recall",
            "alice",
            item("recall", "My cat is called Miso", "alice", NOW - timedelta(days=23)),
            item("recall", "I live in Rome", "alice", NOW - timedelta(days=30), superseded=True),
        ),
        ok("episodic", None, item("episodic", "alice: gg", None, NOW, stream="s9")),
        ok("lore", None, item("lore", "Captain Nebula built the castle", None, None)),
        ok("state", None, item("state", "alice and bob are siblings", "alice", None)),
    ]
    block = context.assemble(outcomes, [], token_budget=1000, clock=CLOCK).block
    lines = block.splitlines()
    assert "newer of two statements by one viewer holds" in lines[0]
    assert "- [alice · 8 days ago] I moved to Turin" in lines
    assert "- [alice · 3 weeks ago] My cat is called Miso" in lines
    assert "- [alice · 4 weeks ago, since superseded] I live in Rome" in lines
    assert "- [stream · earlier this stream] alice: gg" in lines
    # canon has no age: lore and channel state keep the bare label
    assert "- [lore] Captain Nebula built the castle" in lines
    assert "- [alice] alice and bob are siblings" in lines
    # without a clock (no batch time known) no line pretends to know when
    plain = context.assemble(outcomes, [], token_budget=1000).block
    assert "- [alice] I moved to Turin" in plain.splitlines()


def test_labels_count_against_the_token_cap() -> None:
    said = NOW - timedelta(days=23)
    outcomes = [
        ok(
            "recall",
            "alice",
            *(item("recall", f"statement {n} about my hobbies", "alice", said) for n in range(30)),
        )
    ]
    for budget in (40, 80, 200):
        assembled = context.assemble(outcomes, [], token_budget=budget, clock=CLOCK)
        assert models.estimate_tokens(assembled.block) <= budget
        assert all("· 3 weeks ago]" in line for line in assembled.block.splitlines()[2:])


def memory(login: str, text: str, said_at: datetime, stream: str) -> records.MemoryRecord:
    return records.MemoryRecord(
        id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"{login}/{text}")),
        space=identity.personal_key(support.IDS[login]),
        kind=records.MemoryKind.PERSONAL,
        text=text,
        user_id=support.IDS[login],
        login=login,
        stream=stream,
        origin_message_ids=(f"m-{text}",),
        first_ts=said_at,
        last_ts=said_at,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Fact:
    slot: str
    text: str
    memory_id: str | None
    origin_message_ids: tuple[str, ...]
    stated_at: datetime
    stream: str | None


@dataclass(frozen=True, slots=True)
class Profile:
    facts: tuple[Fact, ...]


class Profiles:
    """A profile reader (the ``sources.ProfileReader`` port) holding one profile per viewer."""

    def __init__(self, profiles: dict[str, Profile]) -> None:
        self.profiles = profiles

    async def get(self, user_id: str) -> Profile | None:
        return self.profiles.get(user_id)


async def test_every_memory_and_profile_line_of_a_turn_is_labelled() -> None:
    spaces = fake_spaces.InMemorySpaces()
    said = [
        memory("alice", "I work as a barista downtown", NOW - timedelta(days=40), "s3"),
        memory("alice", "my cat Miso hates the vacuum", NOW - timedelta(days=2), "s8"),
        memory("alice", "I ran my first marathon this morning", NOW - timedelta(minutes=30), "s1"),
        memory("bob", "I play the cello in an orchestra", NOW - timedelta(days=9), "s6"),
    ]
    await spaces.upsert(said)
    fact = Fact(
        slot="job",
        text="I work as a barista downtown",
        memory_id=said[0].id,
        origin_message_ids=said[0].origin_message_ids,
        stated_at=said[0].said_at,
        stream="s3",
    )
    profiles = Profiles({support.IDS["alice"]: Profile(facts=(fact,))})
    settings = support.plain_settings()
    retriever = retrieval.build_retriever(
        settings, spaces=spaces, profiles=profiles, cache=cache_module.InProcessCache()
    )
    asks = models.Batch(
        stream="s1",
        events=(
            models.ChatEvent(
                id="q1",
                stream="s1",
                user_id=support.IDS["alice"],
                login="alice",
                text="what do you remember about me? my job, my cat, the marathon?",
                ts=NOW,
            ),
            models.ChatEvent(
                id="q2",
                stream="s1",
                user_id=support.IDS["bob"],
                login="bob",
                text="and what instrument do I play in the orchestra?",
                ts=NOW - timedelta(seconds=5),
            ),
        ),
    )
    plan = planner.Planner(settings).plan(asks, [])
    assert {s.kind for s in plan.sources} >= {"profile", "recall"}
    result = await retriever.retrieve(plan, asks, [])
    assert {i.source for i in result.items} >= {"profile", "recall"}
    viewer_lines = [line for line in result.block.splitlines() if line.startswith("- [")]
    assert len(viewer_lines) == len(result.items) >= 4
    assert all(LABELLED.match(line) for line in viewer_lines), viewer_lines
    assert "- [alice · 5 weeks ago] I work as a barista downtown" in viewer_lines
    assert "- [alice · earlier this stream] I ran my first marathon this morning" in viewer_lines
    assert "- [bob · 9 days ago] I play the cello in an orchestra" in viewer_lines
    # the turn report carries each item's time (additive ``said_at``, ``stream`` fields)
    reported = [i.to_json() for i in result.items]
    assert all(r["said_at"] for r in reported)
    back = models.RecallItem.from_json(reported[0])
    assert (back.said_at, back.stream) == (result.items[0].said_at, result.items[0].stream)
