"""Time-scoped and past questions (EN + IT): the span of chat time a question names, and whether it
asks about the past.

The planner reads the viewers' questions (a question mark, an interrogative first word or a request
to recall) for a time expression — "last week", "yesterday", "last stream", "at the start of the
stream", "two weeks ago", "3 days ago", "this morning", "la settimana scorsa", "ieri", "l'ultima
live", "all'inizio della live", "due settimane fa", "stamattina" … — and puts its window on the
viewer's ``recall`` source (and on ``episodic`` when the window reaches into this stream; a question
about the last stream searches that stream's episodes instead). The
viewer's recall lifts what was said in the window among the whole space's best candidates, so it
ranks first and an approximate expression never hides the answer (``sources.window_first``); the
episodes search inside it, and without it when nothing is there.

Every window is relative to the turn's chat time (the batch's newest message, never the wall
clock) in UTC calendar days. "last stream" is the channel's previous stream as the viewer directory
saw it (``StreamCalendar``); when no earlier stream is known, everything before this stream. Day
and week windows are a little wider than the words (a day or two each side), because people count
loosely. Vague or present-tense words ("recently", "today", "tonight", "this week") scope nothing:
"what should I play today?" asks about what the viewer likes, whenever they said it.

A question about the past ("where did I live before?", "what was my old job?", "used to", "prima
dove abitavo?", "una volta") sets ``past`` on that viewer's recall: superseded memories are searched
too, and shown labelled "since superseded".
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Protocol, TypeAlias

from memory.recall import context
from memory.recall import planner_words as lexicon
from memory.spaces import records

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from memory import models

DAY = timedelta(days=1)
WEEK = timedelta(days=7)
#: "at the start of the stream": its first third, at least this long
START_SPAN = timedelta(minutes=30)

_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2,
    "a couple of": 2, "few": 3, "a few": 3, "several": 3, "un": 1, "uno": 1, "una": 1, "due": 2,
    "tre": 3, "quattro": 4, "cinque": 5, "sei": 6, "sette": 7, "otto": 8, "nove": 9, "dieci": 10,
    "undici": 11, "dodici": 12, "un paio di": 2, "paio di": 2, "qualche": 3,
}  # fmt: skip
_UNITS = {
    "minute": "minutes", "minutes": "minutes", "min": "minutes", "mins": "minutes",
    "minuto": "minutes", "minuti": "minutes", "hour": "hours", "hours": "hours", "ora": "hours",
    "ore": "hours", "day": "days", "days": "days", "giorno": "days", "giorni": "days",
    "week": "weeks", "weeks": "weeks", "settimana": "weeks", "settimane": "weeks",
    "month": "months", "months": "months", "mese": "months", "mesi": "months", "year": "years",
    "years": "years", "anno": "years", "anni": "years",
}  # fmt: skip
_WEEKDAYS = {
    "monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5,
    "sunday": 6, "lunedi": 0, "martedi": 1, "mercoledi": 2, "giovedi": 3, "venerdi": 4,
    "sabato": 5, "domenica": 6,
}  # fmt: skip
#: days of the year a question names by their name (EN + IT): the latest one up to today
_NAMED_DAYS = {
    "valentine s day": (2, 14), "valentines day": (2, 14),
    "san valentino": (2, 14), "st patrick s day": (3, 17), "saint patrick s day": (3, 17),
    "fourth of july": (7, 4), "4th of july": (7, 4), "independence day": (7, 4),
    "ferragosto": (8, 15), "halloween": (10, 31), "christmas eve": (12, 24),
    "vigilia di natale": (12, 24), "christmas day": (12, 25), "christmas": (12, 25),
    "natale": (12, 25), "boxing day": (12, 26), "santo stefano": (12, 26),
    "new year s eve": (12, 31), "new years eve": (12, 31), "san silvestro": (12, 31),
    "new year s day": (1, 1), "new years day": (1, 1), "capodanno": (1, 1),
    "epifania": (1, 6), "befana": (1, 6),
}  # fmt: skip
_NUMBER = "|".join(sorted(map(re.escape, _NUMBERS), key=len, reverse=True)) + r"|\d{1,3}"
_UNIT = "|".join(sorted(_UNITS, key=len, reverse=True))
_WEEKDAY = "|".join(_WEEKDAYS)
_NAMED_DAY = "|".join(sorted(_NAMED_DAYS, key=len, reverse=True))

#: asking when something was said ("when did I tell you …?"): a recall of the asker's own memory
WHEN_TOLD = lexicon.phrases(
    "when did i tell you|when did i say|when did i mention|when did i write|when was it i told you|"
    "quando ti ho detto|quando ho detto|quando ti ho parlato|quando ti ho raccontato|"
    "quando l ho detto|quando avevo detto"
)
#: a question about the past: superseded memories are recalled too (EN + IT)
PAST = lexicon.phrases(
    "used to|use to|before that|previously|formerly|in the past|back then|back in the day|"
    "originally|at first|my old|my previous|my former|my ex|old job|old house|old place|old city|"
    "old school|did i live|did i work|did i study|what was my|where was i|who was my|before|"
    "una volta|in passato|prima|all epoca|a quel tempo|il mio vecchio|la mia vecchia|"
    "i miei vecchi|il mio ex|la mia ex|precedente|abitavo|vivevo|lavoravo|studiavo|facevo|ero|"
    "avevo"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class When:
    """What a time expression is relative to: the turn's chat time, this stream's start and the
    channel's previous stream (None: not known)."""

    now: datetime
    stream_start: datetime
    previous: records.TimeWindow | None = None
    #: the id of the previous stream (its episodes answer "what happened last stream?")
    previous_stream: str | None = None

    @property
    def today(self) -> datetime:
        """Midnight (UTC) of the chat time's day."""
        now = self.now.astimezone(UTC)
        return datetime(now.year, now.month, now.day, tzinfo=UTC)


class StreamCalendar(Protocol):
    """The streams of the channel with their chat-time spans (``directory.ViewerDirectory``)."""

    def span(self, stream: str) -> tuple[datetime, datetime] | None:
        """(first, last) message time of ``stream``, or None when unknown."""
        ...

    def previous(self, stream: str, *, before: datetime) -> tuple[str, datetime, datetime] | None:
        """The latest other stream that ended before ``before``: (stream, first, last)."""
        ...


def when_of(
    batch: models.Batch,
    history: Sequence[models.HistoryItem],
    calendar: StreamCalendar | None = None,
) -> When:
    """The turn's ``When``: chat time = the batch's newest message; this stream's start = the
    calendar's first message of it, else the oldest item of the working history or the batch."""
    moments = [event.ts for event in batch.events] or [datetime.now(UTC)]
    now = max(moments)
    start = min([*moments, *(item.ts for item in history)])
    span = calendar.span(batch.stream) if calendar is not None else None
    if span is not None:
        start = min(start, span[0])
    previous = calendar.previous(batch.stream, before=start) if calendar is not None else None
    if previous is None:
        return When(now=now, stream_start=start)
    stream, first, last = previous
    earlier = records.TimeWindow(since=first, until=last + timedelta(seconds=1))
    return When(now=now, stream_start=start, previous=earlier, previous_stream=stream)


def _window(since: datetime | None, until: datetime | None) -> records.TimeWindow:
    return records.TimeWindow(since=since, until=until)


def _ago(count: int, unit: str, when: When) -> records.TimeWindow:
    """``count`` ``unit`` before the chat time (see the module docstring for the margins)."""
    today = when.today
    if unit == "days":
        margin = DAY if count >= 2 else timedelta(0)
        day = today - count * DAY
        return _window(day - margin, day + DAY + margin)
    if unit == "weeks":  # as the labels count: "N weeks ago" is 7N..7N+6 days, two days each side
        return _window(today - (7 * count + 8) * DAY, today - (7 * count - 3) * DAY)
    if unit in ("minutes", "hours"):
        step = timedelta(minutes=count) if unit == "minutes" else timedelta(hours=count)
        half = max(step / 2, timedelta(minutes=10) if unit == "minutes" else timedelta(hours=1))
        return _window(when.now - step - half, when.now - step + half)
    span = timedelta(days=30 if unit == "months" else 365)
    return _window(when.now - span * (count + 0.5), when.now - span * (count - 0.5))


def _month(moment: datetime, back: int) -> datetime:
    index = moment.year * 12 + moment.month - 1 - back
    return datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)


def _last_stream(when: When) -> records.TimeWindow:
    return when.previous or _window(None, when.stream_start)


def _stream_start(when: When) -> records.TimeWindow:
    span = max(START_SPAN, (when.now - when.stream_start) / 3)
    return _window(when.stream_start, when.stream_start + span)


def _weekday(name: str, when: When) -> records.TimeWindow:
    today = when.today
    back = (today.weekday() - _WEEKDAYS[name]) % 7 or 7
    return _window(today - back * DAY, today - (back - 1) * DAY)


def _named_day(name: str, when: When) -> records.TimeWindow:
    """The latest ``name``d day up to today (this year's, else last year's), a day each side."""
    month, day_of_month = _NAMED_DAYS[name]
    today = when.today
    day = datetime(today.year, month, day_of_month, tzinfo=UTC)
    if day > today:
        day = datetime(today.year - 1, month, day_of_month, tzinfo=UTC)
    return _window(day - DAY, day + 2 * DAY)


Make: TypeAlias = "Callable[[re.Match[str], When], records.TimeWindow]"
Rule: TypeAlias = "tuple[re.Pattern[str], Make]"


def _rule(pattern: str, make: Make) -> Rule:
    return re.compile(rf"(?<![\w])(?:{pattern})(?![\w])"), make


def _fixed(make: Callable[[When], records.TimeWindow]) -> Make:
    return lambda _match, when: make(when)


def _monday(when: When) -> datetime:
    return when.today - when.today.weekday() * DAY


#: (normalized pattern, window), tried in order: the specific before the general
RULES: tuple[Rule, ...] = (
    _rule(
        rf"({_NUMBER}) ({_UNIT}) (?:ago|fa)",
        lambda m, w: _ago(_NUMBERS.get(m[1]) or int(m[1]), _UNITS[m[2]], w),
    ),
    _rule(r"(?:an|un) (?:hour|ora) (?:ago|fa)", lambda _m, w: _ago(1, "hours", w)),
    _rule(
        r"(?:last|previous|the other|the last) (?:stream|live|broadcast)|the stream before|"
        r"(?:l|nell|dell|all|sull) (?:ultim|altr)[ao] (?:live|stream|diretta)|"
        r"(?:la|lo|nella|nello|della|dello|alla|allo) (?:scors[ao] (?:live|stream|diretta)|"
        r"(?:live|stream|diretta) (?:scors[ao]|precedente|di prima))",
        _fixed(_last_stream),
    ),
    _rule(
        r"(?:at|in|near) the (?:start|beginning) of (?:the |this |today s )?(?:stream|live)|"
        r"when the stream (?:started|began)|(?:at|in) the (?:start|beginning)(?! of )|"
        r"(?:all|a|ad) inizio(?: (?:della |dello |del |di )?(?:live|stream|diretta)|"
        r"(?! (?:di|del|dell|della|dello|dei|degli|delle) ))|appena iniziat[ao]",
        _fixed(_stream_start),
    ),
    _rule(
        r"earlier (?:in|on) (?:this|the) (?:stream|live)|earlier this stream|"
        r"prima in (?:live|stream|diretta)|(?:prima|poco fa) in questa (?:live|diretta)",
        _fixed(lambda w: _window(w.stream_start, None)),
    ),
    _rule(
        r"the day before yesterday|l altro ieri|ieri l altro",
        _fixed(lambda w: _window(w.today - 2 * DAY, w.today - DAY)),
    ),
    _rule(
        r"last night|ieri sera|ieri notte",
        _fixed(lambda w: _window(w.today - DAY / 2, w.today + DAY / 4)),
    ),
    _rule(r"yesterday|ieri", _fixed(lambda w: _window(w.today - DAY, w.today))),
    _rule(
        r"this morning|stamattina|stamane|stamani|questa mattina",
        _fixed(lambda w: _window(w.today, w.today + DAY / 2)),
    ),
    _rule(r"earlier today|oggi prima|prima oggi", _fixed(lambda w: _window(w.today, None))),
    _rule(r"the other day|l altro giorno", _fixed(lambda w: _window(w.today - WEEK, w.today))),
    _rule(
        r"(?:last|past) weekend|(?:lo|il) scorso (?:weekend|fine settimana)|"
        r"(?:il|lo) (?:weekend|fine settimana) scorso",
        _fixed(lambda w: _window(_monday(w) - 2 * DAY, _monday(w))),
    ),
    _rule(
        r"last week|(?:la )?settimana scorsa|la scorsa settimana",
        _fixed(lambda w: _window(_monday(w) - WEEK, _monday(w))),
    ),
    _rule(
        r"last month|(?:il )?mese scorso|lo scorso mese",
        _fixed(lambda w: _window(_month(w.now, 1), _month(w.now, 0))),
    ),
    _rule(
        r"last year|(?:l )?anno scorso|lo scorso anno",
        _fixed(
            lambda w: _window(
                datetime(w.now.year - 1, 1, 1, tzinfo=UTC), datetime(w.now.year, 1, 1, tzinfo=UTC)
            )
        ),
    ),
    _rule(
        rf"last ({_WEEKDAY})|({_WEEKDAY}) scors[oa]",
        lambda m, w: _weekday(m[1] or m[2], w),
    ),
    _rule(rf"({_NAMED_DAY})", lambda m, w: _named_day(m[1], w)),
)


def window(text: str, when: When) -> records.TimeWindow | None:
    """The window of the first time expression ``text`` holds (None: it names no time)."""
    norm = context.normalize(text)
    for pattern, make in RULES:
        match = pattern.search(norm)
        if match is not None:
            return make(match, when)
    return None


def _has(norm: str, phrases: Iterable[str]) -> bool:
    padded = f" {norm} "
    return any(f" {phrase} " in padded for phrase in phrases)


def asks(text: str) -> bool:
    """A question or a request to recall: only those scope retrieval by their time words."""
    norm = context.normalize(text)
    return (
        "?" in text
        or any(word in lexicon.INTERROGATIVES for word in norm.split()[:2])
        or _has(norm, lexicon.RECALL_REQUEST)
        or _has(norm, WHEN_TOLD)
    )


#: where someone comes from ("where is he from originally?"): the hometown, not a past question
ORIGIN = lexicon.phrases(
    "from originally|originally from|originally come from|originally comes from"
)


def asks_past(text: str) -> bool:
    """A question about how things were before ("where did I live before?", "prima dove abitavo?")."""
    padded = f" {context.normalize(text)} "
    for phrase in ORIGIN:
        padded = padded.replace(f" {phrase} ", " from ")
    return asks(text) and _has(padded.strip(), PAST)


def scoped(
    sources: Iterable[models.PlannedSource], when: When, texts: Sequence[str]
) -> list[models.PlannedSource]:
    """``sources`` with the window and past flag of the questions among ``texts``: on ``recall``
    both; on ``episodic`` the window when it reaches into this stream, and the previous stream's
    episodes (``stream``) for a question about the last stream."""
    questions = [text for text in texts if asks(text)]
    found = next((w for w in (window(text, when) for text in questions) if w is not None), None)
    past = any(asks_past(text) for text in questions)
    scoped_sources: list[models.PlannedSource] = []
    for source in sources:
        if source.kind == "recall" and (found is not None or past):
            source = dataclasses.replace(source, window=found, past=past)
        elif source.kind == "episodic" and found is not None and found is when.previous:
            source = dataclasses.replace(source, stream=when.previous_stream)
        elif (
            source.kind == "episodic"
            and found is not None
            and (found.until is None or found.until > when.stream_start)
        ):
            source = dataclasses.replace(source, window=found)
        scoped_sources.append(source)
    return scoped_sources
