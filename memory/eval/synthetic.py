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

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from memory import models
from memory.eval import gold, vocab

START = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)


# the records live in ``gold``; these names are the generator's public API
ProbeKind = gold.ProbeKind
Persona = gold.Persona
Statement = gold.Statement
Claim = gold.Claim
Moment = gold.Moment
LoreEntry = gold.LoreEntry
Probe = gold.Probe
SyntheticStream = gold.SyntheticStream


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
    book = gold.Gold()
    ts = start
    for number, line in enumerate(lines, start=1):
        ts += timedelta(seconds=rng.uniform(0.3, 2.5) + (3.0 if line.gap else 0.0))
        message_id = f"{stream}-m{number:05d}"
        events.append(_event(line, message_id, stream, ts, people))
        book.record(line, message_id)
        if line.gap:
            ts += timedelta(seconds=3.0)
    return SyntheticStream(
        stream=stream,
        seed=seed,
        events=tuple(events),
        personas=tuple(people),
        statements=tuple(book.final_statements()),
        claims=tuple(book.claims),
        moments=tuple(book.moments),
        lore=tuple(LoreEntry(id=i, text=t, key=k) for i, t, k in vocab.LORE),
        probes=tuple(book.probes),
        noise_ids=tuple(book.noise),
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
