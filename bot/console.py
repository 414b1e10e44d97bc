"""``python -m bot console``: type chat as several viewers (``alice: hello``) and see the replies."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import sys
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal, TextIO

import pydantic

from bot import output
from bot.twitch import deliveries, sending
from memory import errors, identity, inbound, models, outage, session, stopping

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    from memory import ports
    from memory import runtime as services_module

HELP = """Type `login: message` to chat as a viewer (e.g. `alice: I moved to Turin`).
Badges: `bob[moderator]: !memory @alice`. A line without `login:` is said by `viewer`.
/quit or Ctrl-D leaves."""


def console_user_id(login: str) -> str:
    """A stable user id for a console viewer (same login, same id, across runs)."""
    return "console-" + hashlib.sha256(login.encode()).hexdigest()[:10]


#: the longest console line read at once (longer lines are refused, the next ones still read)
LINE_BYTES_MAX = 64 * 1024


class ConsoleLine(pydantic.BaseModel):
    """A console line, ``login[badge,…]: text`` or just ``text`` (said by ``viewer``), validated
    with the shared limits of ``memory.inbound`` (Twitch's 500 characters, clean login)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    login: inbound.Login = "viewer"
    badges: tuple[Literal["broadcaster", "moderator", "vip", "subscriber"], ...] = ()
    text: inbound.ChatText = pydantic.Field(min_length=1)

    @classmethod
    def parse(cls, line: str) -> ConsoleLine | None:
        """None for a blank line; ``errors.InvalidInput`` for a line out of the limits."""
        text = inbound.clean_text(line).strip()
        if not text:
            return None
        fields: dict[str, object] = {"text": text}
        head, sep, rest = text.partition(":")
        if sep and head and " " not in head.strip() and rest.strip():
            name = head.strip()
            if "[" in name and name.endswith("]"):
                name, _, badge_text = name[:-1].partition("[")
                fields["badges"] = tuple(b.strip() for b in badge_text.split(",") if b.strip())
            fields.update(login=identity.normalize_login(name) or "viewer", text=rest.strip())
        try:
            return cls.model_validate(fields)
        except pydantic.ValidationError as exc:
            raise errors.InvalidInput(inbound.problem(exc)) from None


def parse_line(line: str, stream: str, prefix: str) -> models.ChatEvent | None:
    """The chat event of a console line (None: blank); ``errors.InvalidInput`` when invalid."""
    parsed = ConsoleLine.parse(line)
    if parsed is None:
        return None
    return models.ChatEvent(
        id=f"c-{uuid.uuid4().hex[:12]}",
        stream=stream,
        user_id=console_user_id(parsed.login),
        login=parsed.login,
        name=parsed.login,
        badges=parsed.badges,
        text=parsed.text,
        ts=datetime.now(UTC),
        kind=models.EventKind.COMMAND
        if parsed.text.startswith(prefix)
        else models.EventKind.MESSAGE,
    )


async def lines(source: TextIO = sys.stdin) -> AsyncGenerator[str]:
    """The lines of ``source`` as they arrive: every line of a paste (several lines in one write)
    at once. A regular file (``< file``) is read whole; invalid UTF-8 is replaced, a line over
    ``LINE_BYTES_MAX`` is refused with a message."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_BYTES_MAX)
    try:
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), source
        )
    except (ValueError, OSError):  # not a pipe or terminal: it is all there already
        for line in source:
            yield line
        return
    try:
        while True:
            try:
                raw = await reader.readline()
            except ValueError:
                print(f"error: line longer than {LINE_BYTES_MAX} bytes, ignored", file=sys.stderr)
                continue
            if not raw:
                return
            yield raw.decode("utf-8", errors="replace")
    finally:
        transport.close()


#: the channel of the console's deliveries (``turn_deliveries``)
CONSOLE_CHANNEL = "console"


def console_deliveries(report: models.TurnReport) -> list[sending.Delivery]:
    """The reply's chat messages as the console showed them (``output.reply_lines``): sent,
    each with a message id of its own (``console-<turn id>-<part>``)."""
    parts = sending.split_message(report.reply or "")
    return [
        sending.Delivery(
            part=index,
            channel=CONSOLE_CHANNEL,
            text=part,
            status=sending.DeliveryStatus.SENT,
            message_id=f"{CONSOLE_CHANNEL}-{report.turn_id}-{index}",
        )
        for index, part in enumerate(parts)
    ]


async def console(
    services: services_module.Services,
    *,
    no_llm: bool,
    commands: ports.CommandHandler | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Feed typed lines to a live session until /quit, end of input or ``stop`` (a signal:
    ``memory.stopping``); on each, the session finishes its turns (within
    ``session.STOP_SECONDS``) and the caller's hosting (admin endpoint, control file) and stores
    close as on any exit."""
    stream = identity.temporary_stream_id()
    print(HELP, file=sys.stderr)
    print(f"stream session {stream}", file=sys.stderr)

    log = deliveries.DeliveryLog(services.db)

    async def deliver(report: models.TurnReport) -> None:
        if report.reply:  # recorded before it shows: a line typed after it may answer it
            parts = console_deliveries(report)
            await outage.patiently(
                lambda: log.record(report.turn_id, parts),
                wait_seconds=services.settings.ingest.write_wait_seconds,
                what=f"deliveries of turn {report.turn_id}",
            )
        output.human(report, no_llm=no_llm)

    async with session.LiveSession(services, deliver, commands=commands) as live:
        stopped = await _feed(live, stream, services.settings.twitch.prefix, stop)
        if stopped:
            print(f"stopping ({stopping.requested() or 'signal'})", file=sys.stderr, flush=True)


async def _feed(
    live: session.LiveSession, stream: str, prefix: str, stop: asyncio.Event | None
) -> bool:
    """Feed the typed lines until /quit or end of input (False) or ``stop`` (True). A stop cuts
    the wait for the next line, never a line being stored."""
    source = lines()
    stopped = asyncio.ensure_future(stop.wait() if stop is not None else asyncio.Future())
    try:
        while True:
            typed = asyncio.ensure_future(anext(source))
            await asyncio.wait({typed, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if not typed.done():
                typed.cancel()
                with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                    await typed
                return True
            try:
                line = typed.result()
            except StopAsyncIteration:
                return False
            if line.strip() in {"/quit", "/exit"}:
                return False
            try:
                event = parse_line(line, stream, prefix)
            except errors.InvalidInput as exc:
                print(f"error: {exc} (line ignored)", file=sys.stderr)
                continue
            if event is not None:
                await live.feed(event)
    finally:
        stopped.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await stopped
        await source.aclose()
