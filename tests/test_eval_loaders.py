"""The LoCoMo and IRC loaders, on the real shared data (skipped when it is absent)."""

from __future__ import annotations

import collections
import dataclasses
import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory.eval import REPO_ROOT, irc, locomo, suite
from scripts import locomo_subjects


def _data_dir() -> Path:
    for candidate in (REPO_ROOT.parent / "shared" / "data", Path("/work/shared/data")):
        if (candidate / locomo.RELATIVE_PATH).is_file() and irc.files(candidate, "dev"):
            return candidate
    pytest.skip("shared data not found in ../shared/data or /work/shared/data (LoCoMo and IRC)")


@pytest.fixture(scope="module")
def data_dir() -> Path:
    return _data_dir()


@pytest.fixture(scope="module")
def conversations(data_dir: Path) -> list[locomo.Conversation]:
    return locomo.load(data_dir)


def test_session_time_parsing() -> None:
    assert locomo.parse_session_time("1:56 pm on 8 May, 2023") == datetime(
        2023, 5, 8, 13, 56, tzinfo=UTC
    )
    assert locomo.parse_session_time("12:04 am on 1 January, 2024") == datetime(
        2024, 1, 1, 0, 4, tzinfo=UTC
    )


def test_malformed_evidence_ids_are_repaired_or_dropped() -> None:
    known = {"D8:6", "D9:17", "D30:5", "D1:3"}
    assert locomo.parse_evidence(["D8:6; D9:17"], known) == ("D8:6", "D9:17")
    assert locomo.parse_evidence(["D30:05"], known) == ("D30:5",)
    assert locomo.parse_evidence(["D:1:3", "D1:3", "D99:1", "junk"], known) == ("D1:3",)


def test_locomo_streams(conversations: list[locomo.Conversation]) -> None:
    assert len(conversations) == 10
    assert sum(len(c.events) for c in conversations) == 5882
    for conv in conversations:
        assert len(conv.speakers) == 2
        assert {e.user_id for e in conv.events} == set(conv.speakers)
        assert all(a.ts < b.ts for a, b in zip(conv.events, conv.events[1:], strict=False))
        ids = [e.id for e in conv.events]
        assert len(ids) == len(set(ids))
    first = conversations[0].events
    assert first[0].ts == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert first[1].ts - first[0].ts == timedelta(seconds=30)


def test_locomo_questions(conversations: list[locomo.Conversation]) -> None:
    questions = [q for c in conversations for q in c.questions]
    # 1,540 questions of categories 1–4; 4 of them cite no evidence at all
    assert len(questions) == 1536
    assert {q.category for q in questions} == {1, 2, 3, 4}
    for conv in conversations:
        authors = conv.authors
        for q in conv.questions:
            assert q.evidence_ids and all(mid in authors for mid in q.evidence_ids)
            if q.subject_user_id is not None:
                name = conv.speakers[q.subject_user_id].split()[0]
                assert name.lower() in q.question.lower()
    named = [q for c in conversations for q in locomo.attribution_questions(c.questions)]
    assert 1000 < len(named) < len(questions)


def test_a_question_names_one_speaker_both_or_neither() -> None:
    speakers = {"1": "Jon", "2": "Gina"}
    assert locomo.named("What do Jon and Gina both have in common?", speakers) == ["1", "2"]
    assert locomo.named("According to gina, what makes Jon a mentor?", speakers) == ["1", "2"]
    assert locomo.named("What did Jonathan say?", speakers) == []  # a first name, whole word
    assert locomo.named("Where did Gina's store open?", speakers) == ["2"]


def test_the_development_halfs_questions_by_whom_they_name(
    data_dir: Path, conversations: list[locomo.Conversation]
) -> None:
    sizes = dataclasses.replace(suite.FULL, **suite.LOCOMO_HALVES["dev"])
    case = suite.build_case("locomo", data_dir, sizes)
    grouped = collections.Counter(locomo_subjects.groups(case).values())
    one, both, neither = locomo_subjects.GROUPS
    assert grouped == {one: 678, both: 67, neither: 15}
    dev = conversations[: suite.DEV_CONVERSATIONS]
    assert grouped[one] == sum(len(locomo.attribution_questions(c.questions)) for c in dev)


def test_locomo_questions_become_chat_after_the_talk(
    conversations: list[locomo.Conversation],
) -> None:
    conv = conversations[0]
    asked = conv.question_events("Mnemo")
    assert len(asked) == len(conv.questions)
    assert asked[0][1].ts > conv.events[-1].ts
    assert asked[0][1].text.startswith("@Mnemo ")
    assert {e.user_id for _, e in asked} == {locomo.QUIZ_USER_ID}


def test_locomo_truncated_sessions_keep_only_answerable_questions(data_dir: Path) -> None:
    (conv,) = locomo.load(data_dir, conversations=1, max_sessions=2)
    known = {e.id for e in conv.events}
    assert conv.questions
    assert all(set(q.evidence_ids) <= known for q in conv.questions)


def test_irc_streams(data_dir: Path) -> None:
    nicks = irc.Nicks()
    streams = irc.load(data_dir, split="dev", nicks=nicks)
    assert len(streams) == len(irc.files(data_dir, "dev"))
    events = [e for s in streams for e in s]
    assert not any(e.text.startswith("===") for e in events)
    for stream in streams:
        assert all(a.ts <= b.ts for a, b in itertools.pairwise(stream))
        assert len({e.id for e in stream}) == len(stream)
    by_nick: dict[str, set[str]] = {}
    for e in events:
        by_nick.setdefault(e.name or "", set()).add(e.user_id)
    assert all(len(ids) == 1 for ids in by_nick.values())
    assert len(set(nicks.logins.values())) == len(nicks.logins)
    assert any(e.reply_to for e in events)
    assert any(e.text.startswith("* ") for e in events)  # /me actions


def test_irc_messages_spread_within_the_minute(data_dir: Path) -> None:
    events = irc.parse_file(irc.files(data_dir, "dev")[0])
    minute: dict[datetime, list[datetime]] = {}
    for e in events:
        minute.setdefault(e.ts.replace(second=0, microsecond=0), []).append(e.ts)
    busy = max(minute.values(), key=len)
    assert len(busy) > 1 and len(set(busy)) == len(busy)
    assert events[0].ts == datetime(2004, 11, 15, 12, 18, tzinfo=UTC)
    # that log has a 12-hour clock: 12:58 is followed by 01:18, i.e. 13:18
    assert events[-1].ts - events[0].ts < timedelta(hours=6)


def test_busiest_hours(data_dir: Path) -> None:
    streams = irc.load(data_dir, split="dev") + irc.load(data_dir, split="test")
    hours = irc.busiest_hours(streams, 3)
    assert len(hours) == 3
    assert hours[0].count >= hours[1].count >= hours[2].count
    by_stream = {s[0].stream: s for s in streams}
    top = hours[0]
    assert len(irc.window(by_stream[top.stream], top.start)) == top.count


def test_locomo_halves_split_the_conversations(data_dir: Path) -> None:
    every = suite.locomo_case(data_dir, dataclasses.replace(suite.FULL, locomo_sessions=1))
    halves = {
        name: suite.locomo_case(
            data_dir, dataclasses.replace(suite.FULL, locomo_sessions=1, **fields)
        )
        for name, fields in suite.LOCOMO_HALVES.items()
    }
    streams = {name: {e.stream for e in case.events} for name, case in halves.items()}
    assert len(streams["dev"]) == 5 and not streams["dev"] & streams["held-out"]
    assert streams["dev"] | streams["held-out"] == {e.stream for e in every.events}
