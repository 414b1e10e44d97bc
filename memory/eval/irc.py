"""Real multi-party #ubuntu IRC chat (``irc-ubuntu/``, CC BY 4.0) replayed as chat streams.

``[HH:MM] <nick> text`` lines (and ``[HH:MM]  * nick action`` lines) become chat events; ``===``
system lines and empty messages are skipped. The date comes from the file name (``2004-11-15_03``),
a clock going backwards means 12 hours or midnight passed (some logs have a 12-hour clock), and the messages of one minute are spread evenly over
it. A nick has one stable user id everywhere (derived from the nick), and a login unique within the
loaded logs. Reply links of ``<date>.annotation.txt`` become ``reply_to``.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from memory import identity, models

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

RELATIVE_DIR = "irc-ubuntu"
_MESSAGE = re.compile(r"^\[(\d{2}):(\d{2})\] <([^>]+)> ?(.*)$")
_ACTION = re.compile(r"^\[(\d{2}):(\d{2})\]\s+\* (\S+) (.*)$")
_NAME = re.compile(r"^(\d{4}-\d{2}-\d{2})_(\d+)$")


@dataclass(slots=True)
class Nicks:
    """Stable user ids and unique logins for IRC nicks, shared across files."""

    logins: dict[str, str] = field(default_factory=dict)
    _taken: dict[str, str] = field(default_factory=dict)

    def user_id(self, nick: str) -> str:
        return str(100_000_000 + zlib.crc32(nick.encode()) % 900_000_000)

    def login(self, nick: str) -> str:
        known = self.logins.get(nick)
        if known:
            return known
        base = identity.normalize_login(nick) or "nick"
        login, suffix = base, 1
        while login in self._taken:
            suffix += 1
            login = f"{base}_{suffix}"
        self._taken[login] = nick
        self.logins[nick] = login
        return login


@dataclass(frozen=True, slots=True, kw_only=True)
class _Raw:
    line: int
    minute: datetime
    nick: str
    text: str


def _raw_lines(path: Path, day: datetime) -> list[_Raw]:
    out: list[_Raw] = []
    offset = timedelta(0)
    previous: datetime | None = None
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines()):
        match = _MESSAGE.match(line) or _ACTION.match(line)
        if not match:
            continue  # "=== x has joined" and other system lines
        hour, minute, nick, text = match.groups()
        if match.re is _ACTION:
            text = f"* {nick} {text}"
        moment = day + offset + timedelta(hours=int(hour), minutes=int(minute))
        # some logs use a 12-hour clock: a jump back means 12 hours (or midnight) passed
        while previous is not None and moment < previous - timedelta(hours=1):
            offset += timedelta(hours=12)
            moment += timedelta(hours=12)
        previous = moment
        if text.strip():
            out.append(_Raw(line=number, minute=moment, nick=nick, text=text.strip()))
    return out


def _replies(path: Path) -> dict[int, int]:
    """Line b → line a it replies to (first link wins), from ``<name>.annotation.txt``."""
    annotation = path.with_name(path.name.replace(".raw.txt", ".annotation.txt"))
    links: dict[int, int] = {}
    if not annotation.exists():
        return links
    for row in annotation.read_text(encoding="utf-8").splitlines():
        parts = row.split()
        if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
            a, b = int(parts[0]), int(parts[1])
            if a != b:
                links.setdefault(b, a)
    return links


def parse_file(
    path: Path, *, nicks: Nicks | None = None, stream: str | None = None
) -> list[models.ChatEvent]:
    """The chat events of one ``<date>_<n>.raw.txt`` file, in time order."""
    stem = path.name.removesuffix(".raw.txt")
    match = _NAME.match(stem)
    if not match:
        raise ValueError(f"not an IRC log name (<date>_<n>.raw.txt): {path.name}")
    day = datetime.strptime(match.group(1), "%Y-%m-%d").replace(tzinfo=UTC)
    nicks = nicks or Nicks()
    stream = stream or f"irc-{stem}"
    raws = _raw_lines(path, day)
    replies = _replies(path)
    ids = {raw.line: f"{stream}-L{raw.line}" for raw in raws}
    per_minute: dict[datetime, int] = {}
    for raw in raws:
        per_minute[raw.minute] = per_minute.get(raw.minute, 0) + 1
    seen: dict[datetime, int] = {}
    events = []
    for raw in raws:
        index = seen.get(raw.minute, 0)
        seen[raw.minute] = index + 1
        parent = replies.get(raw.line)
        events.append(
            models.ChatEvent(
                id=ids[raw.line],
                stream=stream,
                user_id=nicks.user_id(raw.nick),
                login=nicks.login(raw.nick),
                name=raw.nick,
                text=raw.text,
                ts=raw.minute + timedelta(seconds=60 * index / per_minute[raw.minute]),
                reply_to=ids.get(parent) if parent is not None and parent < raw.line else None,
            )
        )
    return events


def files(data_dir: Path, split: str = "dev") -> list[Path]:
    return sorted((data_dir / RELATIVE_DIR / split).glob("*.raw.txt"))


def load(
    data_dir: Path,
    *,
    split: str = "dev",
    limit_files: int | None = None,
    nicks: Nicks | None = None,
) -> list[list[models.ChatEvent]]:
    """One event list (one stream) per log file of ``split`` (``dev`` or ``test``)."""
    nicks = nicks or Nicks()
    return [parse_file(path, nicks=nicks) for path in files(data_dir, split)[:limit_files]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Hour:
    stream: str
    start: datetime
    count: int


def busiest_hours(streams: Sequence[Sequence[models.ChatEvent]], n: int = 1) -> list[Hour]:
    """The ``n`` busiest one-hour windows (starting on a message), over all streams, busiest first.

    Windows of one stream do not overlap.
    """
    candidates: list[Hour] = []
    for events in streams:
        if not events:
            continue
        times = [e.ts for e in events]
        end = 0
        for start, ts in enumerate(times):
            while end < len(times) and times[end] < ts + timedelta(hours=1):
                end += 1
            candidates.append(Hour(stream=events[0].stream, start=ts, count=end - start))
    candidates.sort(key=lambda h: (-h.count, h.start))
    chosen: list[Hour] = []
    for hour in candidates:
        if any(
            c.stream == hour.stream and abs(c.start - hour.start) < timedelta(hours=1)
            for c in chosen
        ):
            continue
        chosen.append(hour)
        if len(chosen) == n:
            break
    return chosen


def window(
    events: Sequence[models.ChatEvent], start: datetime, length: timedelta = timedelta(hours=1)
) -> list[models.ChatEvent]:
    """The events in ``[start, start + length)``."""
    return [e for e in events if start <= e.ts < start + length]
