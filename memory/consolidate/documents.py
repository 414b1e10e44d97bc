"""The memory documents a turn makes: a viewer's own statement, and the turn's public episode.

Point ids are uuid5 of turn id + author + kind (+ message id, or a fact's normalized text), so a
retried consolidation replaces the same points instead of adding duplicates.
"""

from __future__ import annotations

import re
import uuid
from typing import TYPE_CHECKING, Any

from memory import identity, models
from memory.spaces import lexical, records

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from datetime import datetime

    from memory import ports

#: namespace of memory point ids
POINT_NAMESPACE = uuid.UUID("5b0f2f4e-63a4-4f53-9a52-6d656d6f7279")
#: where a message's statements end (a question's "?" ends none: "how are you? and where from?")
_STATEMENT_END = re.compile(r"(?<=[.!])\s+")
_MENTION = re.compile(r"@\w+\s*")
_NAMED = re.compile(r"@(\w+)")
#: at most this many characters of the question a memory answers are embedded with it
MAX_QUESTION_CHARS = 200
#: at most this many characters of the author's message before that question (e5 reads 500 of a
#: text: the rest would never count)
MAX_THREAD_CHARS = 300


def point_id(turn_id: str, author: str, kind: str, part: str = "") -> str:
    """The deterministic id of a memory: uuid5 of turn id + author + kind (+ message id or part)."""
    return str(uuid.uuid5(POINT_NAMESPACE, f"{turn_id}\x1f{author}\x1f{kind}\x1f{part}"))


def personal_record(
    turn_id: str,
    event: models.ChatEvent,
    answers: tuple[str, str] | None = None,
    sparse: ports.SparseEncoder = lexical.ENCODER,
    thread: tuple[str, str] | None = None,
) -> records.MemoryRecord:
    """A viewer's own statement as a personal memory, with its provenance. ``answers``: (message
    id, text) of another viewer's message just before it; when it is a question, the memory is
    also indexed with its terms (``sparse.context_terms``) and its dense vector is made with the
    question before the text (``asked_question``, ``MemoryRecord.dense_text``) — unless the
    question was put to somebody else ("@mnemo who made you?", "@bob where are you from?").
    ``thread``: (message id, text) of the author's own message just before that question, the
    thread the reply continues, embedded after the text (``MemoryRecord.context_thread``)."""
    if answers and not put_to(answers[1], event.login):
        answers = None
    context = sparse.context_terms(answers[1]) if answers else ()
    question = asked_question(answers[1]) if answers and context else None
    thread = thread if question and thread and thread[1].strip() else None
    return records.MemoryRecord(
        id=point_id(turn_id, event.user_id, records.MemoryKind.PERSONAL, event.id),
        space=identity.personal_key(event.user_id),
        kind=records.MemoryKind.PERSONAL,
        text=event.text,
        user_id=event.user_id,
        login=identity.normalize_login(event.login),
        stream=event.stream,
        turn_id=turn_id,
        origin_message_ids=(event.id,),
        participants=(event.user_id,),
        first_ts=event.ts,
        last_ts=event.ts,
        context_terms=context,
        context_message_id=answers[0] if answers and context else None,
        context_question=question,
        context_thread=thread[1].strip()[:MAX_THREAD_CHARS] if thread else None,
        context_thread_id=thread[0] if thread else None,
    )


def named(text: str) -> frozenset[str]:
    """The normalized logins a message @names."""
    return frozenset(identity.normalize_login(name) for name in _NAMED.findall(text))


def put_to(question: str, login: str) -> bool:
    """Whether a message may be put to the viewer ``login``: it @names nobody, or them."""
    names = named(question)
    return not names or identity.normalize_login(login) in names


def asked_question(text: str) -> str | None:
    """The last question of a message, without its @names: what a reply to it answers ("@bob nice
    pics! where did you take them?" → "where did you take them?"). A memory's vector made with it
    finds the reply by what was asked (LoCoMo's replies, "Sweden!", "Yep, since I was a kid"):
    docs/evaluation.md, LoCoMo, "The question a reply answers"."""
    asked = [part for part in _STATEMENT_END.split(_MENTION.sub("", text)) if "?" in part]
    return asked[-1].strip()[:MAX_QUESTION_CHARS] if asked else None


def episode_line(message: Mapping[str, Any]) -> str:
    if message.get("kind") == models.EventKind.EVENT.value:
        return f"{message['login']} [{message.get('event') or 'event'}]: {message['text']}".rstrip()
    return f"{message['login']}: {message['text']}"


def episode_text(messages: Sequence[Mapping[str, Any]]) -> str:
    return "\n".join(episode_line(m) for m in messages)


def episode_record(
    turn_id: str,
    stream: str,
    events: Sequence[models.ChatEvent],
    *,
    reply: str | None,
    reply_ts: datetime | None,
) -> records.MemoryRecord:
    """The public record of one turn: its messages, participants, timestamps and the bot's reply."""
    messages = [
        {
            "id": e.id,
            "user_id": e.user_id,
            "login": identity.normalize_login(e.login),
            "text": e.text,
            "ts": e.ts.isoformat(),
            "kind": e.kind.value,
            "event": e.event,
        }
        for e in events
    ]
    return records.MemoryRecord(
        id=point_id(turn_id, "stream", records.MemoryKind.EPISODIC),
        space=identity.episodic_key(stream),
        kind=records.MemoryKind.EPISODIC,
        text=episode_text(messages),
        stream=stream,
        turn_id=turn_id,
        origin_message_ids=tuple(e.id for e in events),
        participants=tuple(dict.fromkeys(e.user_id for e in events)),
        first_ts=events[0].ts,
        last_ts=events[-1].ts,
        extra={
            "reply": reply,
            "reply_ts": reply_ts.isoformat() if reply_ts else None,
            "messages": messages,
        },
    )
