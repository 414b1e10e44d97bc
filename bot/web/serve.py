"""Serving the memory dashboard on ``LIVEMEMORY_WEB__HOST``/``__PORT``: inside the bot
(``python -m bot run --web`` / ``console --web``, over the bot's own open stores: ``bot.hosting``),
or on its own with ``python -m bot web`` for deployments with servers.

On its own it opens the stores like the admin command (``memory.runtime.lifespan(role="admin")``):
on the embedded defaults one process holds the Qdrant folder, so that needs ``QDRANT_URL`` (docker
compose sets it) or a stopped bot. Twitch sign-in needs the application's client id and secret, and
``<public_url>/auth/callback`` registered as its OAuth redirect URL; inside the bot, on loopback and
with no Twitch application, a one-time local link signs in instead (``auth.LocalSignIn``).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING

import httpx
import uvicorn

from bot import errors as bot_errors
from bot.web import app as app_module
from bot.web import auth
from memory import runtime
from memory.ops import control_client

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from config.settings import Settings

logger = logging.getLogger(__name__)


def check(settings: Settings) -> None:
    """The Twitch application the sign-in needs, or one clear error."""
    twitch = settings.twitch
    if not twitch.client_id or twitch.client_secret is None:
        raise bot_errors.BotError(
            "the dashboard signs in with Twitch: set LIVEMEMORY_TWITCH__CLIENT_ID and "
            "LIVEMEMORY_TWITCH__CLIENT_SECRET (see docs/dashboard.md)"
        )
    if not auth.channel_keys(settings):
        raise bot_errors.BotError(
            "the dashboard shows one channel: set LIVEMEMORY_TWITCH__CHANNELS or __OWNER_ID"
        )


def loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def sign_in_for(settings: Settings, *, in_bot: bool) -> auth.LocalSignIn | None:
    """How the dashboard signs in: Twitch (None), or inside the bot, on loopback and with no Twitch
    application configured, a one-time local link; one clear error when neither can."""
    if in_bot and not auth.twitch_app(settings):
        if not loopback(settings.web.host):
            raise bot_errors.BotError(
                f"the dashboard on {settings.web.host} signs in with Twitch: set "
                "LIVEMEMORY_TWITCH__CLIENT_ID and __CLIENT_SECRET, or keep LIVEMEMORY_WEB__HOST on "
                "127.0.0.1 for the local sign-in link (see docs/dashboard.md)"
            )
        return auth.LocalSignIn()
    check(settings)
    return None


class _Server(uvicorn.Server):
    """uvicorn without its own signal handlers: the process handles SIGINT, SIGTERM and SIGHUP
    (``memory.stopping``)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@dataclass(frozen=True, slots=True)
class Served:
    port: int
    #: ends when the server stops
    task: asyncio.Task[None]


@contextlib.asynccontextmanager
async def serving(
    settings: Settings,
    services: runtime.Services,
    *,
    port: int | None = None,
    local: auth.LocalSignIn | None = None,
) -> AsyncIterator[Served]:
    """The dashboard served in this event loop until the block ends; yields its port (tests ask
    for port 0) and its server task (it never takes the signals: the process's ``memory.stopping``
    does, and ``main`` ends the block). The socket is bound and listening before the
    block starts, so a request made at once waits in the backlog instead of being refused.
    ``local``: the one-time sign-in link instead of Twitch (``sign_in_for``)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((settings.web.host, settings.web.port if port is None else port))
    except OSError as exc:
        listener.close()
        raise bot_errors.BotError(
            f"the dashboard cannot listen on {settings.web.host}:{settings.web.port}: {exc.strerror}"
        ) from None
    listener.listen(128)
    async with httpx.AsyncClient(timeout=10.0) as http:
        app = app_module.create_app(services, http=http, local=local)
        config = uvicorn.Config(app, log_level="warning", lifespan="off")
        server = _Server(config)
        task = asyncio.create_task(server.serve(sockets=[listener]), name="web-server")
        try:
            yield Served(port=listener.getsockname()[1], task=task)
        finally:
            server.should_exit = True
            await task
            listener.close()


async def main(settings: Settings, *, stop: asyncio.Event | None = None) -> int:
    """``python -m bot web``: the dashboard on its own until ``stop`` (a signal)."""
    check(settings)
    held = await control_client.holder(settings.data_dir)
    if held is not None and settings.qdrant_url is None:
        raise bot_errors.BotError(
            f"a bot (pid {held.pid}) holds the data folder {settings.data_dir}: serve the "
            "dashboard from it (python -m bot run --web, or console --web), or set QDRANT_URL to "
            "run it on its own"
        )
    async with (
        runtime.lifespan(settings, role="admin", no_llm=True) as services,
        serving(settings, services) as served,
    ):
        logger.info("dashboard on %s (port %d)", settings.web.public_url, served.port)
        stopped = asyncio.ensure_future(stop.wait() if stop is not None else asyncio.Future())
        try:
            await asyncio.wait({served.task, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
        if served.task.done():
            served.task.result()  # a server that failed says why
    return 0
