"""Chat events for the tests of issue 10: message ``m<n>`` of stream ``s1`` at ``3 n`` seconds
(one batch each under the default 2 s window); ``!…`` texts are commands."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from memory import models

T0 = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)


def chat(n: int, login: str, text: str, **extra: Any) -> models.ChatEvent:
    command = text.startswith("!")
    extra.setdefault("kind", models.EventKind.COMMAND if command else models.EventKind.MESSAGE)
    return models.ChatEvent(
        id=f"m{n}",
        stream="s1",
        user_id=f"id-{login}",
        login=login,
        text=text,
        ts=T0 + timedelta(seconds=3 * n),
        **extra,
    )
