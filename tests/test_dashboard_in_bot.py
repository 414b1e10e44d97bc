"""The dashboard served by a running bot on the embedded defaults (``python -m bot console --no-llm
--web``): the streamer signs in with the one-time link the bot printed, forgets a memory
in Chromium, and the bot's next turn no longer recalls it; the audit names ``web:local``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import httpx
import pytest

from tests import live_bot
from tests import test_dashboard as dashboard_tests

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

MISO = "my cat is called Miso"


@pytest.fixture
def bot(tmp_path: Path) -> Iterator[live_bot.LiveBot]:
    running = live_bot.LiveBot.start(tmp_path)
    yield running
    running.kill()


def _recalls(bot: live_bot.LiveBot, text: str) -> bool:
    report = bot.say("alice: do you remember my cat Miso?")
    return any(text in line for line in live_bot.recalled(report))


async def test_the_streamer_forgets_a_memory_in_the_bots_own_dashboard(
    bot: live_bot.LiveBot,
) -> None:
    dashboard_tests._need_chromium()
    from playwright.async_api import async_playwright

    link = bot.ready()
    base = link.split("/auth/")[0]
    bot.say(f"alice: {MISO}")
    bot.consolidated()
    bot.say("alice: I work as a graphic designer")
    bot.consolidated()
    assert _recalls(bot, MISO)
    async with httpx.AsyncClient() as client:  # a wrong token does not use the link up
        for wrong in ("guess", "gués"):
            refused = await client.get(f"{base}/auth/local", params={"token": wrong})
            assert refused.status_code == 403

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=dashboard_tests.CHROMIUM, args=dashboard_tests.CHROMIUM_FLAGS
        )
        try:
            page = await browser.new_page()
            await page.goto(f"{base}/viewers")
            assert page.url == f"{base}/login"
            assert await page.get_by_text("Open the sign-in link the bot printed").count() == 1
            await page.goto(link)
            await page.wait_for_url(f"{base}/viewers")
            assert await page.get_by_text("local (broadcaster)").count() == 1
            await page.get_by_role("link", name="alice").click()
            await page.wait_for_url(re.compile(r".*/viewers/console-[0-9a-f]+$"))
            memories = page.locator("#memories")
            assert await memories.get_by_text(MISO).count() == 2  # + its source message
            row = memories.get_by_role("row").filter(has_text=MISO)
            await row.get_by_role("link", name="forget").click()
            await page.get_by_role("button", name="Forget it").click()
            await page.wait_for_url(re.compile(r".*\?done=forgot$"))
            assert await memories.get_by_text(MISO).count() == 0
            assert await memories.get_by_text("I work as a graphic designer").count() == 2
        finally:
            await browser.close()

    # the link signed in once: a second browser gets nothing with it
    async with httpx.AsyncClient() as client:
        again = await client.get(link)
        assert again.status_code == 403 and "was used already" in again.text
        fresh = bot.admin("sign-in-link")  # a new one, made by the bot
        assert fresh.code == 0 and fresh.out.startswith(f"{base}/auth/local?token=")
        signed = await client.get(fresh.out.strip())
        assert (signed.status_code, signed.headers["location"]) == (303, "/viewers")
        assert (await client.get(fresh.out.strip())).status_code == 403  # once
    assert not _recalls(bot, MISO)
    audit = bot.admin_json("audit")
    assert [(r["actor"], r["action"]) for r in audit] == [("web:local", "forget_memory")]
    assert bot.quit() == 0
