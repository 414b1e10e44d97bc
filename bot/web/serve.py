"""``python -m bot web``: serve the memory dashboard on ``LIVEMEMORY_WEB__HOST``/``__PORT``.

It opens the stores like the admin command (``memory.runtime.lifespan(role="admin")``): on the
embedded defaults one process holds the Qdrant folder, so run the dashboard with ``QDRANT_URL``
(docker compose does) or while the bot is stopped. Twitch sign-in needs the application's client id
and secret, and ``<public_url>/auth/callback`` registered as its OAuth redirect URL.
"""

from __future__ import annotations

import asyncio
import contextlib
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

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

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


@dataclass(frozen=True, slots=True)
class Served:
    port: int
    #: ends when the server stops
    task: asyncio.Task[None]


@contextlib.asynccontextmanager
async def serving(
    settings: Settings, services: runtime.Services, *, port: int | None = None
) -> AsyncIterator[Served]:
    """The dashboard served in this event loop until the block ends (or a SIGINT/SIGTERM, which
    uvicorn catches); yields its port (tests ask for port 0) and its server task. The socket is bound and listening before the block starts, so a
    request made at once waits in the backlog instead of being refused."""
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
        app = app_module.create_app(services, http=http)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        task = asyncio.create_task(server.serve(sockets=[listener]), name="web-server")
        try:
            yield Served(port=listener.getsockname()[1], task=task)
        finally:
            server.should_exit = True
            await task
            listener.close()


async def main(settings: Settings) -> int:
    check(settings)
    async with (
        runtime.lifespan(settings, role="admin", no_llm=True) as services,
        serving(settings, services) as served,
    ):
        logger.info("dashboard on %s (port %d)", settings.web.public_url, served.port)
        await served.task  # until SIGINT/SIGTERM
    return 0
