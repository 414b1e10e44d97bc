"""LongMemEval (``longmemeval/longmemeval_s_dev.json.gz``, MIT) replayed as one channel per question.

Each question's haystack is a channel of its own: one stream per session (``lme<n>-s<i>``) at its
date, in time order; the user is one viewer (a user id of their own per question, so no two
haystacks meet in a personal space); every user turn is a chat message of that viewer, and the
assistant's turns are the bot's own replies to them (``replies``: what the replay's scripted model
answers; episodic memory, the bot's words — never a viewer's personal memory). A message over 500
characters is split on word boundaries as Twitch would force (``split``); its parts are messages
``<turn id>-p<k>``, and an evidence turn counts as recalled when any item covers one of its parts.
The question is put to the bot by the viewer at ``question_date``, in a fresh stream (``lme<n>-q``).

Abstention questions (ids ending ``_abs``: the answer is not in the history) are left out, as the
retrieval metrics of the paper do. The data README (``../shared/data/README.md``) has the layout.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import textwrap
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from memory import models

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping, Sequence
    from pathlib import Path

RELATIVE_PATH = "longmemeval/longmemeval_s_dev.json.gz"
TYPES = (
    "temporal-reasoning",
    "multi-session",
    "knowledge-update",
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
)
#: the halves of the development part (``half_of``): tuned on, and reported on
HALVES = ("tune", "report")
#: Twitch's limit on one chat message
MAX_CHARS = 500
#: a user turn and the bot's reply take this long before the next user turn
TURN_SPACING = timedelta(seconds=30)
#: the parts of one split message arrive this close together (one batch)
PART_SPACING = timedelta(milliseconds=50)
USER_ID_BASE = 970000
DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"


@dataclass(frozen=True, slots=True, kw_only=True)
class EvidenceTurn:
    """A turn marked ``has_answer``: its id, who said it, its session and its session's date."""

    id: str
    role: str
    session_id: str
    date: datetime
    #: the message ids of its parts (a bot reply's parts are never chat messages of a viewer)
    parts: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Channel:
    """One question and its haystack as a channel of streams."""

    question_id: str
    question_type: str
    question: str
    answer: str
    user_id: str
    login: str
    #: the viewer's messages, every stream in time order
    events: tuple[models.ChatEvent, ...]
    #: the question as the viewer's chat message addressing the bot
    asked: models.ChatEvent
    #: (message id of a turn's last part, the bot's reply to that turn), in replay order
    replies: tuple[tuple[str, str], ...]
    evidence: tuple[EvidenceTurn, ...]
    answer_session_ids: frozenset[str]
    #: message id (of a part) → turn id
    turn_of: Mapping[str, str]
    #: turn id → session id
    session_of: Mapping[str, str]
    #: turn id → whether the user said it
    user_turns: Mapping[str, bool]
    #: turn id → full text (the peers rank whole turns)
    texts: Mapping[str, str]
    #: message id of a turn's last part → the assistant turns of the reply it received (an
    #: episode that shows the bot's reply covers them)
    reply_turns: Mapping[str, tuple[str, ...]]

    @property
    def streams(self) -> list[str]:
        return list(dict.fromkeys(e.stream for e in self.events))


def split(text: str, limit: int = MAX_CHARS) -> list[str]:
    """``text`` as the chat messages Twitch would force: whitespace runs (line breaks too) become one
    space, then parts of at most ``limit`` characters cut on word boundaries (a longer word is cut)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return [flat] if flat else []
    return textwrap.wrap(flat, limit, break_on_hyphens=False)


def parse_date(text: str) -> datetime:
    """``"2023/05/21 (Sun) 19:50"`` → an aware UTC datetime."""
    return datetime.strptime(text.strip(), DATE_FORMAT).replace(tzinfo=UTC)


def session_id(key: str) -> str:
    """A session KEY ``<session id>#<content hash>`` → the session id ``answer_session_ids`` names."""
    return key.partition("#")[0]


@dataclass(slots=True)
class _Builder:
    prefix: str
    user_id: str
    login: str
    events: list[models.ChatEvent]
    replies: list[tuple[str, str]]
    evidence: list[EvidenceTurn]
    turn_of: dict[str, str]
    session_of: dict[str, str]
    user_turns: dict[str, bool]
    texts: dict[str, str]
    reply_turns: dict[str, tuple[str, ...]]

    def session(self, number: int, key: str, turns: Sequence[Mapping[str, Any]], ts: datetime,
                date: datetime) -> datetime:  # fmt: skip
        """Add one session as a stream starting at ``ts``; returns when it ended."""
        stream = f"{self.prefix}-s{number}"
        last_user: str | None = None
        pending: list[tuple[str, str]] = []
        for index, turn in enumerate(turns):
            turn_id = f"{stream}-t{index}"
            role, content = str(turn["role"]), str(turn["content"])
            parts = [f"{turn_id}-p{k}" for k, _ in enumerate(split(content) or [""])]
            self.turn_of.update(dict.fromkeys(parts, turn_id))
            self.session_of[turn_id] = session_id(key)
            self.user_turns[turn_id] = role == "user"
            self.texts[turn_id] = content
            if turn.get("has_answer"):
                self.evidence.append(EvidenceTurn(id=turn_id, role=role, session_id=session_id(key),
                                                  date=date, parts=tuple(parts)))  # fmt: skip
            if role != "user":
                pending.append((turn_id, content))  # the bot's reply to the last user turn
                continue
            self._flush(last_user, pending)
            ts += TURN_SPACING
            for part_id, text in zip(parts, split(content), strict=False):
                self.events.append(models.ChatEvent(
                    id=part_id, stream=stream, user_id=self.user_id, login=self.login,
                    name=self.login, text=text, ts=ts,
                ))  # fmt: skip
                last_user = part_id
                ts += PART_SPACING
        self._flush(last_user, pending)
        return ts

    def _flush(self, last_user: str | None, pending: list[tuple[str, str]]) -> None:
        """The bot's reply to the user turn ending with ``last_user`` (a session the bot opens
        has no turn to reply to: those words are not replayed)."""
        if last_user is not None and pending:
            self.replies.append((last_user, "\n\n".join(text for _, text in pending)))
            self.reply_turns[last_user] = tuple(turn for turn, _ in pending)
        pending.clear()


def convert(
    question: Mapping[str, Any], sessions: Mapping[str, Any], index: int, *, bot_name: str = "Mnemo"
) -> Channel:
    """One LongMemEval question → a channel of one stream per session and the question."""
    prefix = f"lme{index}"
    user_id = str(USER_ID_BASE + index)
    login = f"lmeviewer{index}"
    builder = _Builder(prefix, user_id, login, [], [], [], {}, {}, {}, {}, {})
    dated = sorted(
        zip(question["haystack_dates"], question["haystack_session_keys"], strict=True),
        key=lambda pair: parse_date(pair[0]),
    )
    end: datetime | None = None
    for number, (date_text, key) in enumerate(dated):
        date = parse_date(date_text)
        # sessions at the same minute (or overlapping) follow one another
        start = date if end is None or date > end else end + timedelta(minutes=1)
        end = builder.session(number, key, sessions[key], start - TURN_SPACING, date)
    asked_at = parse_date(question["question_date"])
    if end is not None and asked_at <= end:
        asked_at = end + timedelta(minutes=1)
    asked = models.ChatEvent(
        id=f"{prefix}-q", stream=f"{prefix}-q", user_id=user_id, login=login, name=login,
        text=f"@{bot_name} {question['question']}", ts=asked_at,
    )  # fmt: skip
    return Channel(
        question_id=str(question["question_id"]), question_type=str(question["question_type"]),
        question=str(question["question"]), answer=str(question["answer"]), user_id=user_id,
        login=login, events=tuple(builder.events), asked=asked, replies=tuple(builder.replies),
        evidence=tuple(builder.evidence),
        answer_session_ids=frozenset(str(s) for s in question.get("answer_session_ids", ())),
        turn_of=builder.turn_of, session_of=builder.session_of, user_turns=builder.user_turns,
        texts=builder.texts, reply_turns=builder.reply_turns,
    )  # fmt: skip


def read(path: Path) -> dict[str, Any]:
    """The data file (gzip'd JSON, or plain JSON when the name does not end in ``.gz``)."""
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    data: dict[str, Any] = json.loads(raw)
    return data


def half_of(question_id: str) -> str:
    """The half of the development part a question belongs to (``HALVES``), by a stable hash of
    its id: whatever is tuned is chosen on ``tune`` and reported on ``report``."""
    digest = hashlib.blake2b(question_id.encode(), digest_size=8).digest()
    return HALVES[int.from_bytes(digest, "little") % 2]


def load(
    data_dir: Path,
    *,
    first: int | None = None,
    types: Collection[str] | None = None,
    path: Path | None = None,
    half: str | None = None,
) -> list[Channel]:
    """The questions of ``<data_dir>/longmemeval/longmemeval_s_dev.json.gz`` (or ``path``) as
    channels: abstention questions left out, only ``types`` when given, only the ``half`` when
    given (``half_of``), the first ``first``."""
    data = read(path or data_dir / RELATIVE_PATH)
    out: list[Channel] = []
    for index, question in enumerate(data["questions"]):
        if str(question["question_id"]).endswith("_abs"):
            continue
        if types and question["question_type"] not in types:
            continue
        if half is not None and half_of(str(question["question_id"])) != half:
            continue
        if first is not None and len(out) >= first:
            break
        out.append(convert(question, data["sessions"], index))
    return out
