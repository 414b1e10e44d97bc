"""A token stored in Postgres that differs from the one in ``.env``: the bot says which it uses."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

import pydantic

from bot.twitch import run, tokens
from memory import runtime
from tests import test_twitch_e2e as e2e
from tests.fakes import twitch as fake_twitch

if TYPE_CHECKING:
    import pytest

    from bot.twitch import client
    from tests.conftest import SettingsFactory

twitch_fake = e2e.twitch_fake


async def test_the_stored_token_wins_and_the_log_says_so(
    make_settings: SettingsFactory,
    twitch_fake: fake_twitch.FakeTwitch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = e2e.twitch_settings(make_settings, twitch_fake)
    settings = settings.model_copy(
        update={
            "twitch": settings.twitch.model_copy(
                update={"user_token": pydantic.SecretStr("oauth:an-older-token")}
            )
        }
    )
    caplog.set_level(logging.WARNING, logger="bot.twitch.client")
    stop = asyncio.Event()

    async def ready(_bot: client.LiveMemoryBot) -> None:
        stop.set()

    async with runtime.lifespan(settings, no_llm=True) as services:
        await tokens.TokenStore(services.db).save(
            fake_twitch.BOT_ID, fake_twitch.USER_TOKEN, fake_twitch.REFRESH_TOKEN
        )
        code = await asyncio.wait_for(run.run_bot(settings, services, stop=stop, ready=ready), 30)
    assert code == 0
    [line] = [r.getMessage() for r in caplog.records if r.name == "bot.twitch.client"]
    assert line.startswith(
        "the bot's user token stored in Postgres differs from LIVEMEMORY_TWITCH__USER_TOKEN: "
        "using the stored one"
    )
