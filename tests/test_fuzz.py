"""Fuzz suite (hypothesis) over every edge that takes input from outside: the transcript reader, the
login normaliser, the chat command parser and the EventSub ``channel.chat.message`` handler.

No input crashes any of them: each returns something within the limits of ``memory.inbound`` or
refuses with the project's own clear error. CI runs the bounded ``ci`` profile (tests/conftest.py);
``--hypothesis-profile=long`` runs 20,000 examples per test.
"""

from __future__ import annotations

import json
import re
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import twitchio
from hypothesis import given
from hypothesis import strategies as st

from bot.twitch.components import chat
from memory import errors, identity, inbound, models
from memory.history import transcript_file
from memory.ops import commands
from tests.fakes import eventsub

#: text as hostile as it gets: every code point, lone surrogates and NUL included
hostile_text = st.text(
    st.characters(codec=None, exclude_categories=()), max_size=40
) | st.sampled_from(
    [
        "",
        "\x00",
        "\ud800",
        "a" * 600,
        "alice\u200b",
        "@",
        "ＡＬＩＣＥ",
        "!forget @alice all confirm",
    ]
)
#: a field value of any JSON type
scalar = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | hostile_text
json_value = (
    scalar | st.lists(scalar, max_size=3) | st.dictionaries(hostile_text, scalar, max_size=2)
)
timestamps = st.datetimes(
    min_value=datetime(1, 1, 2),
    max_value=datetime(9999, 12, 30),
    timezones=st.sampled_from([UTC, None]),
).map(lambda d: d.isoformat()) | st.sampled_from(["2026-11-29T20:00:00Z", "yesterday", ""])

SANE_TS = "2026-11-29T20:00:00Z"


def assert_storable(event: models.ChatEvent) -> None:
    """What the database driver and the prompt can hold (the limits of ``memory.inbound``)."""
    for value in (event.id, event.user_id, event.login, event.stream, event.text, event.name or ""):
        value.encode("utf-8")  # no lone surrogate
        assert "\x00" not in value
    assert len(event.text) <= inbound.TEXT_MAX
    assert 0 < len(event.id) <= inbound.MESSAGE_ID_MAX
    assert 0 < len(event.user_id) <= inbound.USER_ID_MAX
    assert identity.normalize_login(event.login)
    assert inbound.in_window(event.ts)


@st.composite
def transcript_lines(draw: st.DrawFn) -> bytes:
    """A line: mostly a well-formed object with hostile fields, sometimes garbage bytes."""
    kind = draw(st.sampled_from(["object", "object", "object", "json", "bytes"]))
    if kind == "bytes":
        return draw(st.binary(max_size=60)).replace(b"\n", b"")
    if kind == "json":
        return json.dumps(draw(json_value)).encode()
    line: dict[str, Any] = {
        "ts": SANE_TS,
        "stream": "s1",
        "id": f"m{draw(st.integers(0, 10**6))}",
        "user_id": "1001",
        "login": "alice",
        "text": "hello",
    }
    for key in draw(
        st.sets(st.sampled_from([*line, "name", "badges", "kind", "event", "reply_to"]))
    ):
        line[key] = draw(timestamps if key == "ts" else json_value)
    return json.dumps(line).encode("utf-8", errors="surrogatepass")


@given(st.lists(transcript_lines(), max_size=6))
def test_transcript_reader_yields_storable_events_or_one_clear_error(lines: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.jsonl"
        path.write_bytes(b"\n".join(lines) + b"\n")
        events: list[models.ChatEvent] = []
        try:
            for event in transcript_file.read(path):
                events.append(event)
        except errors.TranscriptLineError as exc:
            assert 1 <= exc.line <= len(lines)
            assert exc.problem and "Traceback" not in exc.problem
            # every line before the bad one was read
            assert len(events) == sum(1 for raw in lines[: exc.line - 1] if raw.strip())
        for event in events:
            assert_storable(event)


@given(hostile_text)
def test_login_normaliser_keeps_only_the_twitch_charset_and_is_idempotent(login: str) -> None:
    normal = identity.normalize_login(login)
    assert re.fullmatch(r"[a-z0-9_]*", normal)
    assert identity.normalize_login(normal) == normal


@given(
    st.lists(
        hostile_text
        | st.sampled_from(
            [
                "!forget",
                "!memory",
                "@",
                "@ali\u200bce",
                "confirm",
                "all",
                "me",
                "last",
                "!correct",
                "!lore",
            ]
        ),
        max_size=6,
    )
)
def test_command_parser_answers_every_text(words: list[str]) -> None:
    parsed = commands.parse(" ".join(words))
    assert parsed is None or isinstance(parsed, commands.Command | commands.Usage)
    if isinstance(parsed, commands.Command) and parsed.target is not None:
        assert re.fullmatch(r"[a-z0-9_]+", parsed.target)  # never "" for an empty login


@given(
    message_id=hostile_text,
    user_id=hostile_text | st.integers(),
    login=hostile_text,
    name=hostile_text,
    text=hostile_text | st.text(min_size=480, max_size=2000),
    badges=st.lists(hostile_text, max_size=3),
    timestamp=st.none() | timestamps,
)
def test_eventsub_chat_handler_stores_or_refuses_every_notification(
    message_id: str,
    user_id: str | int,
    login: str,
    name: str,
    text: str,
    badges: list[str],
    timestamp: str | None,
) -> None:
    payload = eventsub.chat_event(user_id="1", login="x", text="x")
    payload.update(
        message_id=message_id,
        chatter_user_id=user_id,
        chatter_user_login=login,
        chatter_user_name=name,
        message={"text": text, "fragments": []},
        badges=[{"set_id": b, "id": "1", "info": ""} for b in badges],
    )
    message = twitchio.ChatMessage(payload, http=None)  # type: ignore[arg-type]
    metadata = {"message_timestamp": timestamp} if timestamp is not None else None
    # set by TwitchIO's websocket layer on a real notification
    message._metadata = metadata  # type: ignore[assignment]
    message._headers = None
    try:
        event = chat.to_event(message, stream="s1", prefix="!")
    except errors.InvalidInput as exc:
        assert str(exc)
        return
    assert_storable(event)
    if "\x00" not in text and len(text) <= inbound.TEXT_MAX:
        assert event.text == inbound.clean_text(text)


def test_the_timestamp_window() -> None:
    now = datetime.now(UTC)
    assert inbound.in_window(now + timedelta(hours=23))
    assert not inbound.in_window(datetime(9999, 1, 1, tzinfo=UTC))
    assert not inbound.in_window(datetime(1999, 12, 31, tzinfo=UTC))
    assert not inbound.in_window(datetime(2026, 1, 1))  # naive
