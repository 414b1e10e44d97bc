"""Exceptions of the bot package: one root, the docstring is the default message."""

from __future__ import annotations


class BotError(Exception):
    """A livememory bot error."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip())


class CredentialError(BotError):
    """A Twitch credential is missing or invalid."""


class TwitchUnreachable(BotError):
    """Twitch could not be reached."""
