"""Chat events for the privacy and reply-policy tests: message ``m<n>`` of stream ``s1`` at ``3 n`` seconds
(one batch each under the default 2 s window); ``!…`` texts are commands."""

from __future__ import annotations

import dataclasses
from typing import Any

from memory import models
from tests import chatlog

T0 = chatlog.T0


def chat(n: int, login: str, text: str, **extra: Any) -> models.ChatEvent:
    command = text.startswith("!")
    extra.setdefault("kind", models.EventKind.COMMAND if command else models.EventKind.MESSAGE)
    return dataclasses.replace(chatlog.chat(3 * n, login, text), id=f"m{n}", **extra)
