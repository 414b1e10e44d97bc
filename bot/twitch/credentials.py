"""Twitch credentials: what must be set before starting, and one clear line for what Twitch refused.

``python -m bot run`` prints the line and exits with code 2 (``EXIT_CREDENTIALS``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import twitchio

from bot import errors as bot_errors

if TYPE_CHECKING:
    from config.settings import Settings, TwitchSettings

EXIT_CREDENTIALS = 2
ENV = "LIVEMEMORY_TWITCH__"
#: the scope the EventSub chat subscription needs from the bot account
READ_SCOPE = "user:read:chat"
#: the scopes sending needs from the bot account, by ``send_as``
SEND_SCOPES = {"user": "user:write:chat", "app": "user:bot"}
_USER_ID = re.compile(r"^[0-9]+$")


def env_name(field: str) -> str:
    return f"{ENV}{field.upper()}"


def missing(field: str) -> bot_errors.CredentialError:
    return bot_errors.CredentialError(f"Twitch credential missing: {env_name(field)} is not set")


def invalid(field: str, problem: str) -> bot_errors.CredentialError:
    return bot_errors.CredentialError(f"Twitch credential invalid: {env_name(field)} {problem}")


def check(settings: Settings) -> None:
    """Raise ``CredentialError`` naming the first missing or malformed credential.

    The user token may be absent when one is already stored in Postgres; that is checked at login.
    """
    twitch = settings.twitch
    if not twitch.client_id:
        raise missing("client_id")
    if twitch.client_secret is None or not twitch.client_secret.get_secret_value():
        raise missing("client_secret")
    if not twitch.bot_id:
        raise missing("bot_id")
    if not _USER_ID.match(twitch.bot_id):
        raise invalid("bot_id", f"must be the bot account's numeric user id, not {twitch.bot_id!r}")
    if twitch.owner_id and not _USER_ID.match(twitch.owner_id):
        raise invalid("owner_id", f"must be a numeric user id, not {twitch.owner_id!r}")
    if not twitch.channels:
        raise missing("channels")
    if twitch.user_token is not None and not bare_token(twitch.user_token.get_secret_value()):
        raise invalid("user_token", "is empty")


def bare_token(token: str) -> str:
    """A token without the ``oauth:`` prefix some token generators add."""
    return token.strip().removeprefix("oauth:")


def login_error(exc: BaseException) -> bot_errors.CredentialError | None:
    """The credential a login failure points at, or None when it is not a credential problem."""
    if isinstance(exc, bot_errors.CredentialError):
        return exc
    if isinstance(exc, twitchio.InvalidTokenException):
        return invalid(
            "user_token",
            "was refused by Twitch and could not be refreshed "
            f"(check {env_name('refresh_token')}, or authorize the bot again)",
        )
    if isinstance(exc, twitchio.HTTPException) and exc.status in (400, 401, 403):
        route = str(getattr(exc.route, "url", "") or "")
        if "oauth2/token" in route:
            return invalid(
                "client_secret",
                f"or {env_name('client_id')} was refused by Twitch (HTTP {exc.status})",
            )
        return bot_errors.CredentialError(
            f"Twitch credential invalid: Twitch refused a request with HTTP {exc.status} ({route})"
        )
    return None


def check_user_token(
    settings: TwitchSettings, *, user_id: str | None, scopes: list[str] | None
) -> None:
    """The validated user token must belong to the bot account and allow reading chat."""
    if user_id != settings.bot_id:
        raise invalid(
            "user_token", f"belongs to user {user_id}, not to the bot account {settings.bot_id}"
        )
    if scopes is not None and READ_SCOPE not in scopes:
        raise invalid("user_token", f"lacks the scope {READ_SCOPE}")
