"""Counts in words for the answers people read (commands, admin output): ``1 memory``,
``2 memories``, ``0 entries``."""

from __future__ import annotations


def plural(word: str) -> str:
    """The plural of a singular English noun used in the answers (``memory`` → ``memories``,
    ``message`` → ``messages``)."""
    if word.endswith("y") and word[-2:-1] not in tuple("aeiou"):
        return word[:-1] + "ies"
    return word + "s"


def counted(count: int, word: str, many: str | None = None) -> str:
    """``count`` and ``word`` in agreement: ``1 memory``, ``2 memories`` (``many``: an irregular
    plural)."""
    return f"{count} {word if count == 1 else many or plural(word)}"
