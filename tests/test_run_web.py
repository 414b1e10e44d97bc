"""``python -m bot run --no-llm --web`` against the fake Twitch: the Twitch bot hosts the
admin endpoint and the dashboard in its process, ``memory.admin`` is answered by it, and SIGTERM
stops chat, dashboard and endpoint together (exit 0, the control file gone)."""

from __future__ import annotations

import asyncio
import signal
from typing import TYPE_CHECKING

import httpx

from memory.ops import control
from tests import live_bot
from tests import test_twitch_e2e as twitch_tests
from tests.fakes import twitch as fake_twitch

if TYPE_CHECKING:
    from pathlib import Path

twitch_fake = twitch_tests.twitch_fake


def _twitch_env(fake: fake_twitch.FakeTwitch) -> dict[str, str]:
    prefix = "LIVEMEMORY_TWITCH__"
    values = {
        "CLIENT_ID": fake_twitch.CLIENT_ID,
        "CLIENT_SECRET": fake_twitch.CLIENT_SECRET,
        "BOT_ID": fake_twitch.BOT_ID,
        "OWNER_ID": fake_twitch.OWNER_ID,
        "CHANNELS": f'["{fake_twitch.OWNER_LOGIN}"]',
        "USER_TOKEN": "oauth:" + fake_twitch.USER_TOKEN,
        "REFRESH_TOKEN": fake_twitch.REFRESH_TOKEN,
        "API_BASE": fake.api_base,
        "ID_BASE": fake.id_base,
        "EVENTSUB_WS": fake.eventsub_ws,
    }
    return {prefix + name: value for name, value in values.items()}


async def test_the_twitch_bot_hosts_the_admin_endpoint_and_the_dashboard(
    twitch_fake: fake_twitch.FakeTwitch, database_url: str, tmp_path: Path
) -> None:
    env = {**_twitch_env(twitch_fake), "DATABASE_URL": database_url}
    bot = live_bot.LiveBot.start(tmp_path, "run", "--no-llm", "--web", env=env)
    try:
        # the fake Twitch answers in this event loop: the blocking reads wait in a thread
        line = await asyncio.to_thread(
            bot.wait_log, lambda text: text.startswith("dashboard on "), "dashboard line"
        )
        assert line.rstrip().endswith(": sign in with Twitch")  # a Twitch application is set
        base = line.split()[2].rstrip(":")
        await twitch_fake.wait_subscriptions(1)
        audit = await asyncio.to_thread(bot.admin, "audit")
        assert (audit.code, audit.out, audit.err) == (0, "no audit rows\n", "")
        async with httpx.AsyncClient() as client:
            login = await client.get(f"{base}/login")
            assert login.status_code == 200 and "Sign in with Twitch" in login.text
        assert control.path(bot.data_dir).exists()
        bot.process.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(bot.process.wait, live_bot.LINE_SECONDS)
    finally:
        bot.kill()
    assert code == 0, "".join(bot.log)
    assert not control.path(bot.data_dir).exists()
