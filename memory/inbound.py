"""Validation at the edge: the limits and field types shared by every inbound shape.

Chat reaches the bot in three shapes — a transcript line (``memory.history.transcript_file``), an
EventSub ``channel.chat.message`` notification (``bot.twitch.components.chat``) and a console line
(``bot.console``) — each validated by its own pydantic model built from the types below, so nothing
the database driver or the prompt cannot hold gets past the edge:

- free text (chat text, display names): NUL, other control characters (but newline and tab) and lone
  UTF-16 surrogates are **stripped** (the rest of the message is kept); chat text is at most
  :data:`TEXT_MAX` characters, Twitch's own limit;
- identifiers (message, user and stream ids, logins): **rejected** when empty, longer than their cap,
  or holding whitespace, control characters or surrogates; a login must also normalise to a non-empty
  Twitch login (``identity.normalize_login``);
- timestamps: time-zone aware, between :data:`TS_MIN` and now + :data:`TS_FUTURE_SLACK`.

``docs/reliability.md`` lists the limits.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated

import pydantic

from memory import identity

#: Twitch's limit for one chat message (characters)
TEXT_MAX = 500
#: message ids (Twitch: a UUID, 36 characters) and the ids they reply to
MESSAGE_ID_MAX = 128
#: platform user ids (Twitch: decimal digits, at most ~20)
USER_ID_MAX = 64
#: logins as seen (Twitch: 4–25 characters) and display names
LOGIN_MAX = 64
NAME_MAX = 64
#: stream session ids (Twitch: decimal digits; ours: ``tmp-<time>-<hex>``)
STREAM_MAX = 128
#: badges on one message (Twitch shows a few)
BADGES_MAX = 16
#: the earliest chat time accepted
TS_MIN = datetime(2000, 1, 1, tzinfo=UTC)
#: how far ahead of this machine's clock a chat time may be (clock skew)
TS_FUTURE_SLACK = timedelta(days=1)

#: what free text loses: C0 controls but tab and newline, DEL, lone surrogates
_STRIPPED = re.compile("[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff]")
#: what an identifier may not hold: whitespace, controls, lone surrogates
_NOT_IN_ID = re.compile(r"[\s\x00-\x1f\x7f\ud800-\udfff]")


def clean_text(value: str) -> str:
    """Free text without NUL, control characters (newline and tab kept) or lone surrogates."""
    return _STRIPPED.sub("", value)


def _text_of(max_length: int, what: str) -> pydantic.BeforeValidator:
    def check(value: object) -> object:
        if not isinstance(value, str):
            return value  # pydantic says it is not a string
        value = clean_text(value)
        if len(value) > max_length:
            raise ValueError(f"at most {max_length} characters{what}, not {len(value)}")
        return value

    return pydantic.BeforeValidator(check)


def _identifier_of(max_length: int) -> pydantic.BeforeValidator:
    def check(value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)  # numeric ids in JSON
        if not isinstance(value, str):
            return value
        if not value:
            raise ValueError("must not be empty")
        if len(value) > max_length:
            raise ValueError(f"at most {max_length} characters, not {len(value)}")
        if _NOT_IN_ID.search(value):
            raise ValueError("must not hold whitespace, control characters or lone surrogates")
        return value

    return pydantic.BeforeValidator(check)


def _login(value: str) -> str:
    if not identity.normalize_login(value):
        raise ValueError("holds no letter, digit or underscore (Twitch logins are a-z, 0-9, _)")
    return value


def _timestamp(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("needs a time zone (e.g. a trailing Z)")
    if value < TS_MIN:
        raise ValueError(f"is before {TS_MIN:%Y-%m-%d}")
    latest = datetime.now(UTC) + TS_FUTURE_SLACK
    if value > latest:
        raise ValueError(f"is in the future (after {latest:%Y-%m-%d %H:%M} UTC)")
    return value


def in_window(value: datetime) -> bool:
    """Whether a chat time is aware and within the sane window."""
    try:
        _timestamp(value)
    except ValueError:
        return False
    return True


#: chat text: cleaned, at most ``TEXT_MAX`` characters
ChatText = Annotated[str, _text_of(TEXT_MAX, " (Twitch's limit)")]
#: a display name: cleaned, capped
DisplayName = Annotated[str, _text_of(NAME_MAX, "")]
MessageId = Annotated[str, _identifier_of(MESSAGE_ID_MAX)]
UserId = Annotated[str, _identifier_of(USER_ID_MAX)]
StreamId = Annotated[str, _identifier_of(STREAM_MAX)]
#: a login as seen: an identifier that normalises to a Twitch login
Login = Annotated[str, _identifier_of(LOGIN_MAX), pydantic.AfterValidator(_login)]
#: chat time: aware, within the sane window
Timestamp = Annotated[datetime, pydantic.AfterValidator(_timestamp)]


def problem(exc: pydantic.ValidationError) -> str:
    """A validation error in one line: ``field: what is wrong; …`` (no input echoed back)."""
    parts = []
    for error in exc.errors(include_input=False, include_url=False):
        where = ".".join(str(p) for p in error["loc"]) or "value"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)
