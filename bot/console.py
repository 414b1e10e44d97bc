"""``python -m bot console``: type chat as several viewers (``alice: hello``) and see the replies."""

from __future__ import annotations

import asyncio
import hashlib
import sys
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from bot import output
from memory import identity, models, session

if TYPE_CHECKING:
    from memory import ports
    from memory import runtime as services_module

HELP = """Type `login: message` to chat as a viewer (e.g. `alice: I moved to Turin`).
Badges: `bob[moderator]: !memory @alice`. A line without `login:` is said by `viewer`.
/quit or Ctrl-D leaves."""


def console_user_id(login: str) -> str:
    """A stable user id for a console viewer (same login, same id, across runs)."""
    return "console-" + hashlib.sha256(login.encode()).hexdigest()[:10]


def parse_line(line: str, stream: str, prefix: str) -> models.ChatEvent | None:
    text = line.strip()
    if not text:
        return None
    login = "viewer"
    badges: tuple[str, ...] = ()
    head, sep, rest = text.partition(":")
    if sep and head and " " not in head.strip() and rest.strip():
        name = head.strip()
        if "[" in name and name.endswith("]"):
            name, _, badge_text = name[:-1].partition("[")
            badges = tuple(b.strip() for b in badge_text.split(",") if b.strip())
        login, text = identity.normalize_login(name) or "viewer", rest.strip()
    return models.ChatEvent(
        id=f"c-{uuid.uuid4().hex[:12]}",
        stream=stream,
        user_id=console_user_id(login),
        login=login,
        name=login,
        badges=badges,
        text=text,
        ts=datetime.now(UTC),
        kind=models.EventKind.COMMAND if text.startswith(prefix) else models.EventKind.MESSAGE,
    )


async def _lines() -> asyncio.Queue[str | None]:
    queue: asyncio.Queue[str | None] = asyncio.Queue()
    loop = asyncio.get_running_loop()

    def on_input() -> None:
        line = sys.stdin.readline()
        queue.put_nowait(line if line else None)

    try:
        loop.add_reader(sys.stdin.fileno(), on_input)
    except (PermissionError, OSError):  # a regular file cannot be watched: it is all there already
        for line in sys.stdin:
            queue.put_nowait(line)
        queue.put_nowait(None)
    return queue


async def console(
    services: services_module.Services,
    *,
    no_llm: bool,
    commands: ports.CommandHandler | None = None,
) -> None:
    stream = identity.temporary_stream_id()
    print(HELP, file=sys.stderr)
    print(f"stream session {stream}", file=sys.stderr)

    async def deliver(report: models.TurnReport) -> None:
        output.human(report, no_llm=no_llm)

    queue = await _lines()
    async with session.LiveSession(services, deliver, commands=commands) as live:
        while (line := await queue.get()) is not None:
            if line.strip() in {"/quit", "/exit"}:
                break
            event = parse_line(line, stream, services.settings.twitch.prefix)
            if event is not None:
                await live.feed(event)
    asyncio.get_running_loop().remove_reader(sys.stdin.fileno())  # no-op when not watched
