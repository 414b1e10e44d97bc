"""``python -m bot run``: the Twitch bot on the live session (transcript → batches → turns → chat).

A missing or invalid Twitch credential prints one line naming it and exits with code 2.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import sys
from typing import TYPE_CHECKING

import aiohttp
import twitchio

from bot import errors as bot_errors
from bot import hosting
from bot.twitch import client, credentials, deliveries, helix, tokens
from memory import runtime as services_module
from memory import session as session_module
from memory import stopping

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from config.settings import Settings
    from memory import models

logger = logging.getLogger(__name__)

#: what a Twitch that cannot be reached raises at start-up (aiohttp's connector errors are OSErrors)
UNREACHABLE = (aiohttp.ClientConnectionError, OSError, TimeoutError)
#: the longest pause between two start-up attempts
MAX_RETRY_SECONDS = 60.0


def _refuse(problem: bot_errors.CredentialError) -> int:
    print(f"error: {problem}", file=sys.stderr)
    return credentials.EXIT_CREDENTIALS


async def main(
    settings: Settings,
    *,
    no_llm: bool = False,
    web: bool = False,
    stop: asyncio.Event | None = None,
) -> int:
    """Run the bot until ``stop`` (SIGINT, SIGTERM or SIGHUP: ``memory.stopping``); the process
    exit code (0 for a stop asked for, 2: a Twitch credential).

    The admin endpoint ``python -m memory.admin`` forwards to, and with ``web`` the dashboard, run
    beside it over the same services (``bot.hosting``).

    Without a reachable Ollama it stops at once with one line, unless ``no_llm`` (or
    ``LIVEMEMORY_OLLAMA__ENABLED=false``) asked for a memory-only bot, which answers chat commands.
    """
    try:
        credentials.check(settings)  # before opening any store
    except bot_errors.CredentialError as exc:
        return _refuse(exc)
    stop = stop or asyncio.Event()
    await hosting.refuse_second_bot(settings)
    async with services_module.lifespan(settings, no_llm=no_llm) as services:
        if services.model is None:
            logger.info("no language model: memory-only bot (chat commands are answered)")
        else:
            await services.model.check()
        async with hosting.hosting(settings, services, web=web):
            code = await run_bot(settings, services, stop=stop)
            if stop.is_set():
                logger.info("chat stopped (%s): closing the stores", stopping.requested())
            return code


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
        twitch = settings.twitch
        for attempt in itertools.count(1):
            bot = client.LiveMemoryBot(
                settings,
                on_chat=session.feed,
                token_store=tokens.TokenStore(services.db),
                delivery_log=deliveries.DeliveryLog(services.db),
                session=http,
                on_channels=register,
                metrics=services.metrics.operator,
                on_login=services.learn_bot_login,
            )
            connected: list[bool] = []
            try:
                return await _serve(bot, session, stop, ready, connected)
            except UNREACHABLE as exc:
                if connected or attempt >= twitch.connect_attempts:
                    raise bot_errors.TwitchUnreachable(
                        f"Twitch unreachable at {twitch.api_base} ({_reason(exc)})"
                        + (f" after {attempt} attempts" if attempt > 1 else "")
                    ) from None
                delay = min(twitch.connect_retry_seconds * 2 ** (attempt - 1), MAX_RETRY_SECONDS)
                logger.warning(
                    "Twitch unreachable at %s (%s): attempt %d of %d, next in %.0f s",
                    twitch.api_base,
                    _reason(exc),
                    attempt,
                    twitch.connect_attempts,
                    delay,
                    extra={"action": "twitch_unreachable"},
                )
                if stop is not None and await _stopped_within(stop, delay):
                    return 0
                if stop is None:
                    await asyncio.sleep(delay)
    raise AssertionError("unreachable")  # the loop returns or raises


def _reason(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


async def _stopped_within(stop: asyncio.Event, seconds: float) -> bool:
    """Wait up to ``seconds`` for ``stop``; whether it was set."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await stop.wait()
    return stop.is_set()


async def _serve(
    bot: client.LiveMemoryBot,
    session: session_module.LiveSession,
    stop: asyncio.Event | None,
    ready: Callable[[client.LiveMemoryBot], Awaitable[None]] | None,
    connected: list[bool],
) -> int:
    async def mark_connected() -> None:
        await bot.wait_until_ready()
        connected.append(True)

    async with bot:
        runner = asyncio.create_task(bot.start(with_adapter=False), name="twitch-bot")
        watchers = [asyncio.create_task(mark_connected(), name="twitch-connected")]
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
    # the open batches are answered while chat is still reachable (within a bounded time)
    await session.drain(within=session_module.STOP_SECONDS)
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
