"""``python -m bot run``: the Twitch bot on the live session (transcript → batches → turns → chat).

A missing or invalid Twitch credential prints one line naming it and exits with code 2.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from typing import TYPE_CHECKING

import twitchio

from bot import errors as bot_errors
from bot.twitch import client, credentials, deliveries, helix, tokens
from memory import runtime as services_module
from memory import session as session_module

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from config.settings import Settings
    from memory import models

logger = logging.getLogger(__name__)


def _refuse(problem: bot_errors.CredentialError) -> int:
    print(f"error: {problem}", file=sys.stderr)
    return credentials.EXIT_CREDENTIALS


async def main(settings: Settings) -> int:
    """Run the bot until SIGTERM/SIGINT; the process exit code (2: a Twitch credential)."""
    try:
        credentials.check(settings)  # before opening any store
    except bot_errors.CredentialError as exc:
        return _refuse(exc)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stop.set)
    async with services_module.lifespan(settings) as services:
        return await run_bot(settings, services, stop=stop)


async def run_bot(
    settings: Settings,
    services: services_module.Services,
    *,
    stop: asyncio.Event | None = None,
    ready: Callable[[client.LiveMemoryBot], Awaitable[None]] | None = None,
) -> int:
    """Connect Twitch chat to ``services``: every message goes to the live session (transcript,
    batcher), every turn's reply goes back to chat and its deliveries are recorded.

    ``ready`` is awaited once the bot is subscribed (tests drive the fake Twitch from there).
    """
    try:
        credentials.check(settings)
    except bot_errors.CredentialError as exc:
        return _refuse(exc)
    bot: client.LiveMemoryBot | None = None

    async def deliver(report: models.TurnReport) -> None:
        if report.reply and bot is not None:
            await bot.send_reply(report.stream, report.reply, turn_id=report.turn_id)

    async def register(channels: list[client.Channel]) -> None:
        for channel in channels:
            await services.transcript.ensure_stream(
                channel.stream, channel=channel.id, temporary=channel.temporary
            )

    async with contextlib.AsyncExitStack() as stack:
        session = await stack.enter_async_context(
            session_module.LiveSession(services, deliver, commands=services.commands)
        )
        http = helix.traced_session()
        stack.push_async_callback(http.close)
        bot = client.LiveMemoryBot(
            settings,
            on_chat=session.feed,
            token_store=tokens.TokenStore(services.db),
            delivery_log=deliveries.DeliveryLog(services.db),
            session=http,
            on_channels=register,
            on_login=services.reply.set_bot_login if services.reply else None,
        )
        return await _serve(bot, session, stop, ready)


async def _serve(
    bot: client.LiveMemoryBot,
    session: session_module.LiveSession,
    stop: asyncio.Event | None,
    ready: Callable[[client.LiveMemoryBot], Awaitable[None]] | None,
) -> int:
    async with bot:
        runner = asyncio.create_task(bot.start(with_adapter=False), name="twitch-bot")
        watchers: list[asyncio.Task[None]] = []
        if stop is not None:
            watchers.append(asyncio.create_task(_close_on(stop, bot, session), name="twitch-stop"))
        if ready is not None:
            watchers.append(asyncio.create_task(_when_ready(bot, ready), name="twitch-ready"))
        results: list[BaseException | None] = []
        try:
            await runner
        except (bot_errors.CredentialError, twitchio.HTTPException) as exc:
            problem = credentials.login_error(exc)
            if problem is None:
                raise
            return _refuse(problem)
        finally:
            for task in watchers:
                task.cancel()
            results = await asyncio.gather(*watchers, return_exceptions=True)
    failed = [r for r in results if isinstance(r, Exception)]
    if failed:
        raise failed[0]  # a dying side task stops the bot and is reported
    return 0


async def _close_on(
    stop: asyncio.Event, bot: client.LiveMemoryBot, session: session_module.LiveSession
) -> None:
    await stop.wait()
    await bot.flush_chat()
    await session.drain()  # the open batches are answered while chat is still reachable
    await bot.close()


async def _when_ready(
    bot: client.LiveMemoryBot, ready: Callable[[client.LiveMemoryBot], Awaitable[None]]
) -> None:
    await bot.wait_until_ready()
    try:
        await ready(bot)
    except Exception:
        await bot.close()
        raise
