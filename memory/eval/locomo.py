"""LoCoMo (``locomo/locomo10.json``, CC BY-NC 4.0, research use) replayed as a two-viewer stream.

Each conversation becomes a stream: ``speaker_a`` and ``speaker_b`` are viewers with stable user ids,
``dia_id`` ``D3:7`` becomes message id ``<sample_id>-D3:7``, each session starts at its
``session_<N>_date_time`` ("1:56 pm on 8 May, 2023", UTC) and its turns are spaced 30 s apart.
Questions of categories 1–4 keep their evidence as message ids (malformed ids repaired as the data
README says; ids that do not resolve are dropped) and mark the speaker they name when exactly one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from memory import identity, models

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Sequence
    from pathlib import Path

RELATIVE_PATH = "locomo/locomo10.json"
TURN_SPACING = timedelta(seconds=30)
#: questions are asked one a minute after the conversation, each in its own batch
QUESTION_SPACING = timedelta(seconds=60)
QUIZ_USER_ID = "990000"
QUIZ_LOGIN = "quizmaster"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}

_SESSION = re.compile(r"^session_(\d+)$")
_EVIDENCE = re.compile(r"D:?(\d+):0*(\d+)")
_SPLIT = re.compile(r"[;,\s]+")


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    id: str
    question: str
    answer: str
    category: int
    #: message ids of the evidence turns
    evidence_ids: tuple[str, ...]
    #: the speaker the question names, when it names exactly one
    subject_user_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Conversation:
    sample_id: str
    stream: str
    #: user id → speaker name
    speakers: dict[str, str]
    events: tuple[models.ChatEvent, ...]
    questions: tuple[Question, ...]

    @property
    def authors(self) -> dict[str, str]:
        return {event.id: event.user_id for event in self.events}

    @property
    def logins(self) -> dict[str, str]:
        return {identity.normalize_login(name): uid for uid, name in self.speakers.items()}

    def question_events(self, bot_name: str = "Mnemo") -> list[tuple[Question, models.ChatEvent]]:
        """Each question as a chat message of a third viewer addressing the bot, after the talk."""
        start = (
            self.events[-1].ts if self.events else datetime(2024, 1, 1, tzinfo=UTC)
        ) + timedelta(days=1)
        out = []
        for number, question in enumerate(self.questions):
            event = models.ChatEvent(
                id=f"{self.sample_id}-{question.id}",
                stream=self.stream,
                user_id=QUIZ_USER_ID,
                login=QUIZ_LOGIN,
                name="Quizmaster",
                text=f"@{bot_name} {question.question}",
                ts=start + number * QUESTION_SPACING,
            )
            out.append((question, event))
        return out


def parse_session_time(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` → an aware UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def parse_evidence(raw: Iterable[Any], known: Collection[str]) -> tuple[str, ...]:
    """Normalized ``D<n>:<k>`` evidence ids that exist in the conversation, in order, unique."""
    found: list[str] = []
    for entry in raw:
        for part in _SPLIT.split(str(entry)):
            match = _EVIDENCE.fullmatch(part.strip())
            if not match:
                continue
            dia_id = f"D{int(match.group(1))}:{int(match.group(2))}"
            if dia_id in known and dia_id not in found:
                found.append(dia_id)
    return tuple(found)


def _turn_text(turn: dict[str, Any]) -> str:
    text = str(turn.get("text", "")).strip()
    caption = turn.get("blip_caption")
    return f"{text} [shares a photo: {caption}]" if caption else text


def _sessions(conversation: dict[str, Any]) -> list[int]:
    return sorted(
        int(m.group(1)) for key in conversation if (m := _SESSION.match(key)) and conversation[key]
    )


def named(question: str, speakers: dict[str, str]) -> list[str]:
    """The user ids of the speakers the question names (first name, word boundary)."""
    return [
        uid
        for uid, name in speakers.items()
        if re.search(rf"\b{re.escape(name.split()[0])}\b", question, re.IGNORECASE)
    ]


def _named(question: str, speakers: dict[str, str]) -> str | None:
    """The user id of the only speaker the question names."""
    found = named(question, speakers)
    return found[0] if len(found) == 1 else None


def convert(
    sample: dict[str, Any],
    index: int,
    *,
    categories: Collection[int] = (1, 2, 3, 4),
    max_sessions: int | None = None,
) -> Conversation:
    """One LoCoMo sample → a stream of two viewers and its questions."""
    sample_id = str(sample["sample_id"])
    conv = sample["conversation"]
    user_ids = {
        conv["speaker_a"]: f"{900000 + index * 10 + 1}",
        conv["speaker_b"]: f"{900000 + index * 10 + 2}",
    }
    stream = f"locomo-{sample_id}"
    events: list[models.ChatEvent] = []
    dia_to_id: dict[str, str] = {}
    last: datetime | None = None
    for number in _sessions(conv)[:max_sessions]:
        ts = parse_session_time(conv[f"session_{number}_date_time"])
        if last is not None and ts <= last:
            ts = last + timedelta(minutes=1)
        for turn in conv[f"session_{number}"]:
            speaker = turn["speaker"]
            message_id = f"{sample_id}-{turn['dia_id']}"
            dia_to_id[str(turn["dia_id"])] = message_id
            events.append(
                models.ChatEvent(
                    id=message_id,
                    stream=stream,
                    user_id=user_ids[speaker],
                    login=identity.normalize_login(speaker),
                    name=speaker,
                    text=_turn_text(turn),
                    ts=ts,
                )
            )
            last = ts
            ts += TURN_SPACING
    speakers = {uid: name for name, uid in user_ids.items()}
    every = {str(t["dia_id"]) for n in _sessions(conv) for t in conv[f"session_{n}"]}
    questions = []
    for number, qa in enumerate(sample.get("qa", [])):
        if qa.get("category") not in categories:
            continue
        evidence = parse_evidence(qa.get("evidence", []), every)
        if not evidence or any(d not in dia_to_id for d in evidence):
            continue  # nothing resolves, or part of it lies in sessions not loaded
        questions.append(
            Question(
                id=f"q{number}",
                question=str(qa["question"]),
                answer=str(qa.get("answer", qa.get("adversarial_answer", ""))),
                category=int(qa["category"]),
                evidence_ids=tuple(dia_to_id[d] for d in evidence),
                subject_user_id=_named(str(qa["question"]), speakers),
            )
        )
    return Conversation(
        sample_id=sample_id, stream=stream, speakers=speakers, events=tuple(events),
        questions=tuple(questions),
    )  # fmt: skip


def load(
    data_dir: Path,
    *,
    conversations: int | None = None,
    categories: Collection[int] = (1, 2, 3, 4),
    max_sessions: int | None = None,
    max_questions: int | None = None,
) -> list[Conversation]:
    """Load ``<data_dir>/locomo/locomo10.json``; ``max_sessions`` keeps the first sessions only (and
    the questions whose evidence they contain)."""
    samples = json.loads((data_dir / RELATIVE_PATH).read_text(encoding="utf-8"))
    out = []
    for index, sample in enumerate(samples[:conversations]):
        conv = convert(sample, index, categories=categories, max_sessions=max_sessions)
        if max_questions is not None:
            conv = _first_questions(conv, max_questions)
        out.append(conv)
    return out


def _first_questions(conv: Conversation, limit: int) -> Conversation:
    return Conversation(
        sample_id=conv.sample_id,
        stream=conv.stream,
        speakers=conv.speakers,
        events=conv.events,
        questions=conv.questions[:limit],
    )


def attribution_questions(questions: Sequence[Question]) -> list[Question]:
    """The questions that name exactly one speaker."""
    return [q for q in questions if q.subject_user_id is not None]
