"""What a running bot (``run``, ``console``) serves beside chat, in its own process and lifespan:
the admin endpoint ``python -m memory.admin`` forwards to (``memory.ops.control_server``), and with
``--web`` (or ``LIVEMEMORY_WEB__IN_BOT``) the memory dashboard — both over the bot's open stores,
caches and working history, so they work on the embedded defaults while the bot holds them.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from typing import TYPE_CHECKING

from memory.ops import admin_io, control_client, control_server

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from config.settings import Settings
    from memory import runtime


async def refuse_second_bot(settings: Settings) -> None:
    """Before the stores open: one clear error when a live bot already holds the data folder."""
    await control_client.refuse_second_bot(settings.data_dir)


@contextlib.asynccontextmanager
async def hosting(
    settings: Settings, services: runtime.Services, *, web: bool
) -> AsyncIterator[None]:
    """The admin endpoint and (``web``) the dashboard, until the block ends."""
    web = web or settings.web.in_bot
    async with contextlib.AsyncExitStack() as stack:
        dashboard: str | None = None
        link: str | None = None
        renew: Callable[[], str] | None = None
        if web:
            from bot.web import serve  # uvicorn, Starlette, Jinja2: only for a bot that serves it

            local = serve.sign_in_for(settings, in_bot=True)
            served = await stack.enter_async_context(serve.serving(settings, services, local=local))
            dashboard = f"http://{settings.web.host}:{served.port}"
            if local is not None:
                link = local.link(dashboard)
                renew = functools.partial(local.renew, dashboard)
        admin_services = admin_io.AdminServices(
            db=services.db, ops=services.operations, settings=settings
        )
        await stack.enter_async_context(
            control_server.hosting(admin_services, dashboard=dashboard, sign_in_link=renew)
        )
        if dashboard is not None:
            how = (
                f"sign in with this one-time link (this PC only): {link} "
                "(python -m memory.admin sign-in-link makes another)"
                if link is not None
                else "sign in with Twitch"
            )
            print(f"dashboard on {dashboard}: {how}", file=sys.stderr, flush=True)
        yield
