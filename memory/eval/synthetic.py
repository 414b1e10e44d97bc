"""A seeded, reproducible multi-viewer chat stream with gold annotations.

Many viewers with personas (job, city, pet, hobby) talk at once, in English and some Italian: durable
self-statements, claims about other viewers ("alice lives in Rome" said by bob), corrections over time
("I moved to Turin"), questions, greetings, commands, emote spam, notable moments early in the stream,
and at the end probes: explicit recall ("what do you remember about me?"), questions about another
viewer, references back to the start of the stream, and lore questions about the bot Mnemo.

The gold annotations say which messages are durable self-statements of whom (corrections included;
the one they replace is marked superseded), which are claims about someone else, and for every probe
the message ids (or lore ids) that answer it, the latest correction winning.
"""

from __future__ import annotations

import enum
import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from memory import models
from memory.eval import vocab

START = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)


class ProbeKind(enum.StrEnum):
    SELF_RECALL = "self_recall"  #: a viewer asks what the bot remembers about them
    OTHER_VIEWER = "other_viewer"  #: a viewer asks about another viewer
    EPISODIC = "episodic"  #: a reference back to an earlier moment of the stream
    LORE = "lore"  #: a question about the bot's canon


@dataclass(frozen=True, slots=True, kw_only=True)
class Persona:
    user_id: str
    login: str
    name: str
    #: ``en`` or ``it``
    lang: str
    #: attribute → value, e.g. ``{"city": "Rome", "job": "nurse", ...}``
    facts: dict[str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class Statement:
    """A durable self-statement (or a correction of one)."""

    message_id: str
    user_id: str
    attribute: str
    value: str
    #: the message id of the correction that replaced this statement
    superseded_by: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """A statement about another viewer: never that viewer's personal memory."""

    message_id: str
    author_id: str
    subject_id: str
    attribute: str
    value: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Moment:
    """A notable moment early in the stream, referred back to later."""

    message_id: str
    user_id: str
    topic: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LoreEntry:
    id: str
    text: str
    #: a phrase that identifies this entry in a recalled text
    key: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Probe:
    message_id: str
    asker_id: str
    #: the viewer the question is about (None for lore and for moments asked about in general)
    target_id: str | None
    #: message ids (lore ids for lore probes) that answer the question
    evidence_ids: tuple[str, ...]
    kind: ProbeKind
    attribute: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SyntheticStream:
    stream: str
    seed: int
    events: tuple[models.ChatEvent, ...]
    personas: tuple[Persona, ...]
    statements: tuple[Statement, ...]
    claims: tuple[Claim, ...]
    moments: tuple[Moment, ...]
    lore: tuple[LoreEntry, ...]
    probes: tuple[Probe, ...]

    @property
    def authors(self) -> dict[str, str]:
        """Message id → author user id."""
        return {event.id: event.user_id for event in self.events}

    @property
    def self_statements(self) -> dict[str, str]:
        """Message id of every durable self-statement → the user id it belongs to."""
        return {s.message_id: s.user_id for s in self.statements}

    @property
    def logins(self) -> dict[str, str]:
        """Login → user id."""
        return {p.login: p.user_id for p in self.personas}

    def to_jsonl(self) -> str:
        """The transcript (DESIGN.md's JSON Lines format)."""
        return "".join(json.dumps(e.to_json(), ensure_ascii=False) + "\n" for e in self.events)

    def gold_json(self) -> dict[str, Any]:
        def rows(items: tuple[Any, ...]) -> list[dict[str, Any]]:
            return [
                {k: (list(v) if isinstance(v, tuple) else v) for k, v in _fields(i).items()}
                for i in items
            ]

        return {
            "stream": self.stream,
            "seed": self.seed,
            "self_statements": rows(self.statements),
            "claims": rows(self.claims),
            "moments": rows(self.moments),
            "lore": rows(self.lore),
            "probes": rows(self.probes),
        }


def _fields(item: Any) -> dict[str, Any]:
    return {name: getattr(item, name) for name in item.__slots__}


@dataclass(slots=True)
class _Line:
    """A planned message before times and ids are assigned."""

    user: Persona
    text: str
    #: callback tag: ("statement", attr, value) / ("claim", subject, attr, value) / ("moment", topic)
    #: / ("probe", ...) / ("noise",)
    tag: tuple[Any, ...] = ("noise",)
    #: probes get a gap before and after so that each opens its own batch
    gap: bool = False
    kind: models.EventKind = models.EventKind.MESSAGE
    event: str | None = None


@dataclass(slots=True)
class _Builder:
    rng: random.Random
    personas: list[Persona]
    bot: str
    phases: list[list[_Line]] = field(default_factory=list)

    def noise(self) -> _Line:
        user = self.rng.choice(self.personas)
        pool = vocab.NOISE_IT if user.lang == "it" and self.rng.random() < 0.7 else vocab.NOISE_EN
        # chat commands ("!uptime") stay plain messages: the transcript reader tells them by prefix
        return _Line(user=user, text=self.rng.choice(pool).format(bot=self.bot))

    def statement(self, user: Persona, attr: str, value: str, *, correction: bool = False) -> _Line:
        table = vocab.CORRECTIONS if correction else vocab.STATEMENTS
        template = self.rng.choice(table[user.lang][attr])
        word = vocab.localize(value, user.lang)
        text = template.format(value=word, article=vocab.article(word), pet_name=_pet_name(user))
        return _Line(user=user, text=text, tag=("statement", attr, value))

    def claim(self, author: Persona, subject: Persona, attr: str, value: str) -> _Line:
        template = self.rng.choice(vocab.CLAIMS[author.lang][attr])
        word = vocab.localize(value, author.lang)
        text = template.format(who=subject.login, value=word, article=vocab.article(word))
        return _Line(user=author, text=text, tag=("claim", subject.user_id, attr, value))


def _pet_name(user: Persona) -> str:
    return user.facts["pet_name"]


def _personas(rng: random.Random, count: int, italian_share: float) -> list[Persona]:
    people = []
    for index in range(count):
        base = vocab.NAMES[index % len(vocab.NAMES)]
        login = base if index < len(vocab.NAMES) else f"{base}{index // len(vocab.NAMES)}"
        italian = rng.random() < italian_share
        facts = {
            "job": rng.choice(vocab.JOBS),
            "city": rng.choice(vocab.CITIES),
            "pet": rng.choice(vocab.PETS),
            "pet_name": rng.choice(vocab.PET_NAMES),
            "hobby": rng.choice(vocab.HOBBIES),
        }
        people.append(
            Persona(
                user_id=str(5001 + index),
                login=login,
                name=login.capitalize(),
                lang="it" if italian else "en",
                facts=facts,
            )
        )
    return people


def _plan(b: _Builder, corrections: int, claims: int) -> dict[str, Any]:
    """Fill the phases: opening + moments, self-statements, claims + corrections, probes."""
    rng, people = b.rng, b.personas
    opening = [
        _Line(user=p, text=rng.choice(vocab.GREETINGS[p.lang]).format(bot=b.bot)) for p in people
    ]
    moments = rng.sample(vocab.MOMENTS, k=min(4, len(vocab.MOMENTS)))
    for topic, text in moments:
        opening.append(_Line(user=rng.choice(people), text=text, tag=("moment", topic)))
    raider = people[-1]
    opening.append(
        _Line(
            user=raider,
            text=f"{raider.login} is raiding with 25 viewers",
            kind=models.EventKind.EVENT,
            event="raid",
        )
    )
    statements = [b.statement(p, attr, p.facts[attr]) for p in people for attr in vocab.ATTRIBUTES]
    rng.shuffle(statements)
    changed = rng.sample(people, k=min(corrections, len(people)))
    later: list[_Line] = []
    for person in changed:
        attr = rng.choice(("city", "job"))
        pool = vocab.CITIES if attr == "city" else vocab.JOBS
        value = rng.choice([v for v in pool if v != person.facts[attr]])
        later.append(b.statement(person, attr, value, correction=True))
    for _ in range(claims):
        author, subject = rng.sample(people, k=2)
        attr = rng.choice(("city", "job"))
        pool = vocab.CITIES if attr == "city" else vocab.JOBS
        later.append(b.claim(author, subject, attr, rng.choice(pool)))
    rng.shuffle(later)
    b.phases = [opening, statements, later]
    return {"moments": [topic for topic, _ in moments], "changed": changed}


def _probe_lines(b: _Builder, moments: list[str], other_probes: int) -> list[_Line]:
    rng, people, lines = b.rng, b.personas, []
    for person in people:
        if rng.random() < 0.5:
            text = rng.choice(vocab.RECALL_ME[person.lang]).format(bot=b.bot)
            lines.append(
                _Line(user=person, text=text, tag=("probe", "self", person, None), gap=True)
            )
        else:
            attr = rng.choice(vocab.ATTRIBUTES)
            text = rng.choice(vocab.ASK_SELF[person.lang][attr]).format(bot=b.bot)
            lines.append(
                _Line(user=person, text=text, tag=("probe", "self", person, attr), gap=True)
            )
    for _ in range(other_probes):
        asker, target = rng.sample(people, k=2)
        attr = rng.choice(vocab.ATTRIBUTES)
        text = rng.choice(vocab.ASK_OTHER[asker.lang][attr]).format(bot=b.bot, who=target.login)
        lines.append(_Line(user=asker, text=text, tag=("probe", "other", target, attr), gap=True))
    for topic in moments:
        asker = rng.choice(people)
        text = rng.choice(vocab.ASK_MOMENT[asker.lang]).format(bot=b.bot, topic=topic)
        lines.append(_Line(user=asker, text=text, tag=("probe", "episodic", topic, None), gap=True))
    for lore_id, question in rng.sample(vocab.LORE_QUESTIONS, k=3):
        text = question.format(bot=b.bot)
        lines.append(
            _Line(
                user=rng.choice(people), text=text, tag=("probe", "lore", lore_id, None), gap=True
            )
        )
    rng.shuffle(lines)
    return lines


def generate(
    *,
    seed: int = 0,
    viewers: int = 12,
    stream: str = "synth",
    start: datetime = START,
    italian_share: float = 0.25,
    noise_per_item: tuple[int, int] = (1, 3),
    filler: int = 0,
    bot_name: str = "Mnemo",
) -> SyntheticStream:
    """Generate a stream; the same arguments always give the same stream.

    ``filler`` adds that many noise messages between the opening moments and the rest, to push the
    moments out of the working history.
    """
    rng = random.Random(seed)
    people = _personas(rng, max(viewers, 3), italian_share)
    builder = _Builder(rng=rng, personas=people, bot=bot_name)
    planned = _plan(builder, corrections=max(1, viewers // 3), claims=max(1, viewers // 2))
    probes = _probe_lines(builder, planned["moments"], other_probes=max(1, viewers // 2))
    opening, statements, later = builder.phases
    lines: list[_Line] = []
    for phase in (opening, [builder.noise() for _ in range(filler)], statements, later, probes):
        for line in phase:
            lines.extend(builder.noise() for _ in range(rng.randint(*noise_per_item)))
            lines.append(line)
    return _assemble(lines, rng=rng, stream=stream, start=start, seed=seed, people=people)


def _assemble(
    lines: list[_Line],
    *,
    rng: random.Random,
    stream: str,
    start: datetime,
    seed: int,
    people: list[Persona],
) -> SyntheticStream:
    events: list[models.ChatEvent] = []
    gold = _Gold()
    ts = start
    for number, line in enumerate(lines, start=1):
        ts += timedelta(seconds=rng.uniform(0.3, 2.5) + (3.0 if line.gap else 0.0))
        message_id = f"{stream}-m{number:05d}"
        events.append(_event(line, message_id, stream, ts, people))
        gold.record(line, message_id)
        if line.gap:
            ts += timedelta(seconds=3.0)
    return SyntheticStream(
        stream=stream,
        seed=seed,
        events=tuple(events),
        personas=tuple(people),
        statements=tuple(gold.final_statements()),
        claims=tuple(gold.claims),
        moments=tuple(gold.moments),
        lore=tuple(LoreEntry(id=i, text=t, key=k) for i, t, k in vocab.LORE),
        probes=tuple(gold.probes),
    )


def _event(
    line: _Line, message_id: str, stream: str, ts: datetime, people: list[Persona]
) -> models.ChatEvent:
    badges: tuple[str, ...] = ()
    if line.user is people[0]:
        badges = ("moderator",)
    elif int(line.user.user_id) % 3 == 0:
        badges = ("subscriber",)
    return models.ChatEvent(
        id=message_id,
        stream=stream,
        user_id=line.user.user_id,
        login=line.user.login,
        name=line.user.name,
        badges=badges,
        text=line.text,
        ts=ts,
        kind=line.kind,
        event=line.event,
    )


@dataclass(slots=True)
class _Gold:
    statements: list[Statement] = field(default_factory=list)
    #: (user id, attribute) → message id of the latest statement
    latest: dict[tuple[str, str], str] = field(default_factory=dict)
    superseded: dict[str, str] = field(default_factory=dict)
    claims: list[Claim] = field(default_factory=list)
    moments: list[Moment] = field(default_factory=list)
    probes: list[Probe] = field(default_factory=list)

    def record(self, line: _Line, message_id: str) -> None:
        tag, uid = line.tag, line.user.user_id
        if tag[0] == "statement":
            previous = self.latest.get((uid, tag[1]))
            if previous:
                self.superseded[previous] = message_id
            self.latest[(uid, tag[1])] = message_id
            self.statements.append(
                Statement(message_id=message_id, user_id=uid, attribute=tag[1], value=tag[2])
            )
        elif tag[0] == "claim":
            self.claims.append(
                Claim(
                    message_id=message_id,
                    author_id=uid,
                    subject_id=tag[1],
                    attribute=tag[2],
                    value=tag[3],
                )
            )
        elif tag[0] == "moment":
            self.moments.append(Moment(message_id=message_id, user_id=uid, topic=tag[1]))
        elif tag[0] == "probe":
            self.probes.append(self._probe(line, message_id))

    def _probe(self, line: _Line, message_id: str) -> Probe:
        _, what, subject, attr = line.tag
        asker = line.user.user_id
        if what in ("self", "other"):
            target = subject.user_id
            attrs = (attr,) if attr else vocab.ATTRIBUTES
            evidence = tuple(self.latest[(target, a)] for a in attrs if (target, a) in self.latest)
            kind = ProbeKind.SELF_RECALL if what == "self" else ProbeKind.OTHER_VIEWER
            return Probe(
                message_id=message_id,
                asker_id=asker,
                target_id=target,
                evidence_ids=evidence,
                kind=kind,
                attribute=attr,
            )
        if what == "episodic":
            moment = next(m for m in self.moments if m.topic == subject)
            return Probe(
                message_id=message_id,
                asker_id=asker,
                target_id=moment.user_id,
                evidence_ids=(moment.message_id,),
                kind=ProbeKind.EPISODIC,
            )
        return Probe(
            message_id=message_id,
            asker_id=asker,
            target_id=None,
            evidence_ids=(subject,),
            kind=ProbeKind.LORE,
        )

    def final_statements(self) -> list[Statement]:
        return [
            Statement(
                message_id=s.message_id,
                user_id=s.user_id,
                attribute=s.attribute,
                value=s.value,
                superseded_by=self.superseded.get(s.message_id),
            )
            for s in self.statements
        ]
