"""Chat events for tests: ``chat(n, login, text)`` is message ``n`` of a stream, ``n`` seconds after
``T0``, by the viewer ``id-<login>``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory import models

T0 = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)


def chat(n: int, login: str, text: str, stream: str = "s1") -> models.ChatEvent:
    return models.ChatEvent(
        id=f"{stream}-m{n}",
        stream=stream,
        user_id=f"id-{login}",
        login=login,
        text=text,
        ts=T0 + timedelta(seconds=n),
    )
