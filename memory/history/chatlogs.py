"""Chat logs people have, read into chat events: the project's JSON Lines (``transcript_file``),
TwitchDownloader chat JSON, chat-downloader JSON (an array or JSON lines) and Twitch IRC logs
(``[timestamp] <nick> message``, as Chatterino and ZNC write them).

Each reader yields events in time order and raises ``errors.TranscriptLineError`` (file, item or line
number, what is wrong) at the first item it cannot read, after every item before it was yielded.
Badges keep whatever Twitch calls them (``founder``, ``artist-badge``, …); the bot only gives
meaning to broadcaster, moderator, vip and subscriber.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from memory import errors, identity, models
from memory.history import transcript_file

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from pathlib import Path

FORMATS = ("jsonl", "twitchdownloader", "chat-downloader", "irc")
#: IRC nick prefixes (channel modes) and the badge each stands for
_MODE_BADGES = {
    "~": "broadcaster",
    "&": "moderator",
    "@": "moderator",
    "%": "moderator",
    "+": "vip",
}
_IRC_LINE = re.compile(
    r"^\[(?P<ts>[^\]]+)\]\s+<(?P<mode>[~&@%+]?)(?P<nick>[^>\s]+)>\s?(?P<text>.*)$"
)
_DATE_IN_NAME = re.compile(r"(\d{4}-\d{2}-\d{2})")


def detect(path: Path) -> str:
    """The format of a chat log from its first bytes (``--format auto``)."""
    with path.open(encoding="utf-8") as handle:
        head = handle.read(4096).lstrip("\ufeff \t\r\n")
    if any(_IRC_LINE.match(line) for line in head.splitlines()[:20]):
        return "irc"
    if head.startswith("["):
        return "chat-downloader"
    if head.startswith("{"):
        if '"comments"' in head or '"streamer"' in head:
            return "twitchdownloader"
        if '"message_id"' in head or '"author"' in head or '"time_in_seconds"' in head:
            return "chat-downloader"
        return "jsonl"
    raise errors.TranscriptLineError(str(path), 1, "unknown chat log format: give --format")


def read(
    path: Path, fmt: str = "auto", *, stream: str | None = None, prefix: str = "!"
) -> Iterator[models.ChatEvent]:
    """The events of a chat log in ``fmt`` (``auto``: detected); ``stream`` names the stream
    session (default: from the file — the VOD id, or the file name)."""
    fmt = detect(path) if fmt == "auto" else fmt
    if fmt == "jsonl":
        yield from transcript_file.read(path, prefix=prefix)
        return
    if fmt == "twitchdownloader":
        events = _twitchdownloader(path, stream)
    elif fmt == "chat-downloader":
        events = _chat_downloader(path, stream or f"log-{path.stem}")
    elif fmt == "irc":
        events = _irc(path, stream or f"log-{path.stem}")
    else:
        raise errors.ConfigurationError(f"unknown chat log format {fmt!r} (one of {FORMATS})")
    yield from _in_order(path, events, prefix)


def _in_order(
    path: Path, items: Iterator[tuple[int, models.ChatEvent]], prefix: str
) -> Iterator[models.ChatEvent]:
    last: datetime | None = None
    for number, event in items:
        if last is not None and event.ts < last:
            raise errors.TranscriptLineError(str(path), number, "out of time order")
        last = event.ts
        if event.text.startswith(prefix):
            event = models.ChatEvent(**{**_fields(event), "kind": models.EventKind.COMMAND})
        yield event


def _fields(event: models.ChatEvent) -> dict[str, Any]:
    return {name: getattr(event, name) for name in event.__slots__}


def _event(
    *,
    mid: str,
    stream: str,
    user_id: str,
    login: str,
    name: str | None,
    badges: list[str],
    text: str,
    ts: datetime,
) -> models.ChatEvent:
    return models.ChatEvent(
        id=mid,
        stream=stream,
        user_id=user_id,
        login=identity.normalize_login(login),
        name=name,
        badges=tuple(b for b in (transcript_file.badge_name(b) for b in badges) if b),
        text=text,
        ts=ts,
    )


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as exc:
        raise errors.TranscriptLineError(str(path), exc.lineno, f"not JSON ({exc.msg})") from None


def _twitchdownloader(path: Path, stream: str | None) -> Iterator[tuple[int, models.ChatEvent]]:
    data = _load_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("comments"), list):
        raise errors.TranscriptLineError(str(path), 1, "not a TwitchDownloader chat (no comments)")
    video = data.get("video") or {}
    stream = stream or f"vod-{video.get('id') or path.stem}"
    for number, comment in enumerate(data["comments"], start=1):
        try:
            commenter, message = comment["commenter"], comment["message"]
            badges = [b["_id"] for b in message.get("user_badges") or []]
            yield (
                number,
                _event(
                    mid=str(comment["_id"]),
                    stream=stream,
                    user_id=str(commenter["_id"]),
                    login=commenter.get("name") or commenter["display_name"],
                    name=commenter.get("display_name"),
                    badges=badges,
                    text=message["body"],
                    ts=_timestamp(comment["created_at"]),
                ),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise errors.TranscriptLineError(str(path), number, f"comment: {_what(exc)}") from None


def _chat_downloader(path: Path, stream: str) -> Iterator[tuple[int, models.ChatEvent]]:
    text = path.read_text(encoding="utf-8-sig").strip()
    if text.startswith("["):
        items = _load_json(path)
    else:
        items = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                items.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise errors.TranscriptLineError(
                    str(path), number, f"not JSON ({exc.msg})"
                ) from None
    for number, item in enumerate(items, start=1):
        if not isinstance(item, dict) or item.get("message_type", "text_message") != "text_message":
            continue  # chat-downloader also writes ban/timeout/system items: not chat
        try:
            author: Mapping[str, Any] = item["author"]
            badges = [b.get("name") or b.get("title", "") for b in author.get("badges") or []]
            yield (
                number,
                _event(
                    mid=str(item["message_id"]),
                    stream=stream,
                    user_id=str(author["id"]),
                    login=author.get("name") or author["display_name"],
                    name=author.get("display_name"),
                    badges=badges,
                    text=item["message"],
                    ts=datetime.fromtimestamp(item["timestamp"] / 1_000_000, UTC),
                ),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise errors.TranscriptLineError(str(path), number, f"message: {_what(exc)}") from None


def _irc(path: Path, stream: str) -> Iterator[tuple[int, models.ChatEvent]]:
    found = _DATE_IN_NAME.search(path.name)
    day = date.fromisoformat(found.group(1)) if found else None
    previous: datetime | None = None
    with path.open(encoding="utf-8-sig") as handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.rstrip("\r\n")
            match = _IRC_LINE.match(line)
            if match is None:
                continue  # joins, parts, mode changes, server notices
            ts = _irc_time(match["ts"], day, path, number)
            if previous is not None and ts < previous and ts.date() == previous.date():
                ts += timedelta(days=1)  # a log without dates crossed midnight
            previous = ts
            nick = match["nick"]
            badge = _MODE_BADGES.get(match["mode"])
            yield (
                number,
                _event(
                    mid=f"{stream}-{number}",
                    stream=stream,
                    user_id=f"irc-{identity.normalize_login(nick)}",
                    login=nick,
                    name=nick,
                    badges=[badge] if badge else [],
                    text=match["text"],
                    ts=ts,
                ),
            )


def _irc_time(raw: str, day: date | None, path: Path, number: int) -> datetime:
    raw = raw.strip()
    try:
        if len(raw) <= 8:  # [HH:MM] or [HH:MM:SS]: the date comes from the file name
            if day is None:
                raise ValueError(
                    "a time without a date: name the file after its day (e.g. 2026-11-29.log)"
                )
            clock = datetime.strptime(raw, "%H:%M:%S" if raw.count(":") == 2 else "%H:%M")
            return datetime.combine(day, clock.time(), UTC)
        moment = datetime.fromisoformat(raw.replace(" ", "T"))
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    except ValueError as exc:
        raise errors.TranscriptLineError(str(path), number, f"timestamp {raw!r}: {exc}") from None


def _timestamp(value: str) -> datetime:
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _what(exc: Exception) -> str:
    return f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
