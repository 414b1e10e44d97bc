"""The memory dashboard (``python -m bot web``), signed in with the fake Twitch's OAuth flow.

The browser test drives Debian's Chromium through Playwright: a moderator signs in, finds a viewer,
forgets a memory, and the memory is then gone from recall; then makes the bot quiet in a stream and
edits the lore (a diff of the entries, then confirm). It saves a screenshot of each page but the
turns, which ``test_dashboard_turns`` makes from a real console (into ``docs/dashboard/`` with
``LIVEMEMORY_SCREENSHOTS=docs/dashboard``). The HTTP tests check the guard: no session, a stranger, a form without its
CSRF token.
"""

from __future__ import annotations

import os
import re
import shutil
import urllib.parse
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from bot.web import serve
from memory import reply, runtime
from memory.consolidate import consolidation
from tests import dashboard_helpers
from tests import test_admin as admin_tests
from tests import test_consolidation as helpers
from tests.fakes import twitch as fake_twitch
from tests.fakes import twitch_oauth

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from config import settings as settings_module
    from memory.adapters import postgres
    from tests.conftest import SettingsFactory

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: ``LIVEMEMORY_SCREENSHOTS=docs/dashboard`` refreshes the committed screenshots (when the UI
#: changes); otherwise they go to the test's temporary folder and the checkout stays clean
SCREENSHOTS_ENV = "LIVEMEMORY_SCREENSHOTS"
MODERATOR = ("3003", "modmia")
STRANGER = ("4004", "randy")

stream = admin_tests.stream


@pytest.fixture
async def twitch() -> AsyncIterator[twitch_oauth.FakeTwitchOAuth]:
    fake = twitch_oauth.FakeTwitchOAuth()
    for user_id, login in (MODERATOR, STRANGER):
        fake.add_user(user_id, login)
    fake.moderators[fake_twitch.OWNER_ID] = {MODERATOR[0]}
    await fake.start()
    yield fake
    await fake.stop()


@pytest.fixture
def port() -> int:
    return dashboard_helpers.free_port()


@pytest.fixture
def lore_dir(tmp_path: Path) -> Path:
    """A copy of the project's lore folder: the dashboard edits it."""
    copy = tmp_path / "lore"
    shutil.copytree(Path(__file__).resolve().parent.parent / "config" / "lore", copy)
    return copy


@pytest.fixture
def settings(
    make_settings: SettingsFactory, twitch: twitch_oauth.FakeTwitchOAuth, port: int, lore_dir: Path
) -> settings_module.Settings:
    return make_settings(
        bot_name="mnemo",
        lore_dir=lore_dir,
        twitch={
            "client_id": fake_twitch.CLIENT_ID,
            "client_secret": fake_twitch.CLIENT_SECRET,
            "channels": [fake_twitch.OWNER_LOGIN],
            "owner_id": fake_twitch.OWNER_ID,
            "api_base": twitch.api_base,
            "id_base": twitch.id_base,
        },
        web={"host": "127.0.0.1", "port": port, "public_url": f"http://127.0.0.1:{port}"},
    )


@pytest.fixture
async def dashboard(
    settings: settings_module.Settings, stream: list[str], port: int
) -> AsyncIterator[tuple[str, runtime.Services]]:
    async with (
        runtime.lifespan(settings, role="admin", no_llm=True) as services,
        serve.serving(settings, services, port=port),
    ):
        yield f"http://127.0.0.1:{port}", services


async def sign_in(client: httpx.AsyncClient, base: str, login: str) -> httpx.Response:
    """The authorization-code flow by hand: dashboard → Twitch consent form → callback."""
    to_twitch = await client.get(f"{base}/auth/start")
    assert to_twitch.status_code == 303
    authorize = urllib.parse.urlsplit(to_twitch.headers["location"])
    query = dict(urllib.parse.parse_qsl(authorize.query))
    consent = await client.post(
        urllib.parse.urlunsplit(authorize._replace(query="")),
        data={
            **{k: query[k] for k in ("client_id", "redirect_uri", "state", "scope")},
            "login": login,
        },
    )
    assert consent.status_code == 302, consent.text
    return await client.get(consent.headers["location"])


async def test_only_the_broadcaster_and_moderators_get_in(
    dashboard: tuple[str, runtime.Services],
) -> None:
    base, _ = dashboard
    async with httpx.AsyncClient() as client:
        anonymous = await client.get(f"{base}/viewers")
        assert (anonymous.status_code, anonymous.headers["location"]) == (303, "/login")
        refused = await sign_in(client, base, STRANGER[1])
        assert refused.status_code == 403
        assert "randy is neither the broadcaster nor a moderator of this channel" in refused.text
        assert (await client.get(f"{base}/viewers")).status_code == 303
    for login in (fake_twitch.OWNER_LOGIN, MODERATOR[1]):
        async with httpx.AsyncClient() as client:
            welcomed = await sign_in(client, base, login)
            assert (welcomed.status_code, welcomed.headers["location"]) == (303, "/viewers")
            page = await client.get(f"{base}/viewers")
            assert page.status_code == 200 and "alice" in page.text and f"{login} (" in page.text


async def test_a_forged_state_or_a_form_without_csrf_changes_nothing(
    dashboard: tuple[str, runtime.Services],
) -> None:
    base, services = dashboard
    async with httpx.AsyncClient() as client:
        forged = await client.get(f"{base}/auth/callback", params={"code": "x", "state": "forged"})
        assert forged.status_code == 400 and "expired or forged" in forged.text
        await sign_in(client, base, MODERATOR[1])
        [memory, *_] = await services.operations.inspect("1001")
        confirm = await client.get(f"{base}/memories/{memory.id}/forget")
        assert confirm.status_code == 200 and "Forget this memory?" in confirm.text
        no_token = await client.post(f"{base}/memories/{memory.id}/forget", data={})
        assert no_token.status_code == 403
        wrong = await client.post(f"{base}/memories/{memory.id}/forget", data={"csrf": "guess"})
        assert wrong.status_code == 403
        assert memory.id in {r.id for r in await services.operations.inspect("1001")}
        unknown = await client.get(f"{base}/viewers/nobody")
        assert unknown.status_code == 404 and "unknown viewer" in unknown.text


async def test_the_viewer_page_shows_a_superseded_memory_with_its_mark(
    dashboard: tuple[str, runtime.Services],
) -> None:
    base, services = dashboard
    designer, cat = await services.operations.inspect("1001")
    at = datetime(2026, 12, 6, 20, 0, tzinfo=UTC)
    await services.operations.spaces.supersede("viewer:1001", [designer.id], by=cat.id, at=at)
    async with httpx.AsyncClient() as client:
        await sign_in(client, base, MODERATOR[1])
        page = await client.get(f"{base}/viewers/1001")
    assert page.status_code == 200 and "I work as a graphic designer" in page.text
    assert f"superseded by <code>{cat.id[:8]}</code> on 2026-12-06" in page.text


async def test_the_viewer_page_shows_the_question_a_memory_answers(
    dashboard: tuple[str, runtime.Services],
    db: postgres.Database,
    settings: settings_module.Settings,
) -> None:
    base, services = dashboard
    asked = [
        helpers.msg("m4", "bob", "@alice what do you do on weekends?", second=9),
        helpers.msg("m5", "alice", "hiking in the Dolomites mostly", second=10),
    ]
    turn_id = await helpers.journal_turn(db, asked)
    await consolidation.Consolidator(db, services.spaces, settings).consolidate(turn_id)
    async with httpx.AsyncClient() as client:
        await sign_in(client, base, MODERATOR[1])
        page = await client.get(f"{base}/viewers/1001")
    assert page.status_code == 200 and "hiking in the Dolomites mostly" in page.text
    assert "answering “what do you do on weekends?”" in page.text
    assert page.text.count("answering") == 1


def _need_chromium() -> None:
    if shutil.which(CHROMIUM) is None:
        if os.environ.get("LIVEMEMORY_REQUIRE_SERVICES") == "1":
            pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium (.ci/run does)")
        pytest.skip(f"{CHROMIUM} is not installed")


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    """Where the browser test saves its page screenshots (see ``SCREENSHOTS_ENV``)."""
    folder = Path(os.environ.get(SCREENSHOTS_ENV) or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def test_a_moderator_forgets_a_memory_in_a_real_browser(
    dashboard: tuple[str, runtime.Services],
    db: postgres.Database,
    screenshots: Path,
    settings: settings_module.Settings,
) -> None:
    _need_chromium()
    from playwright.async_api import async_playwright

    base, services = dashboard
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            page = await browser.new_page(viewport={"width": 1200, "height": 800})

            async def shot(name: str) -> None:
                await page.screenshot(path=str(screenshots / f"{name}.png"), full_page=True)

            await page.goto(f"{base}/viewers")
            assert page.url == f"{base}/login"
            await shot("login")
            await page.get_by_text("Sign in with Twitch").click()
            await page.get_by_label("Username").fill(MODERATOR[1])
            await page.get_by_role("button", name="Authorize").click()
            await page.wait_for_url(f"{base}/viewers")
            await page.get_by_label("search viewers").fill("ali")
            await page.get_by_role("button", name="search").click()
            await page.wait_for_url(re.compile(r".*/viewers\?q=ali$"))
            await shot("viewers")
            await page.get_by_role("link", name="alice").click()
            await page.wait_for_url(f"{base}/viewers/1001")
            memories = page.locator("#memories")
            assert await memories.get_by_text("my cat is called Miso").count() == 2  # + source
            await shot("viewer")
            row = memories.get_by_role("row").filter(has_text="my cat is called Miso")
            await row.get_by_role("link", name="forget").click()
            await shot("forget")
            await page.get_by_role("button", name="Forget it").click()
            await page.wait_for_url(f"{base}/viewers/1001?done=forgot")
            assert await page.get_by_text("the memory was forgot").count() == 1
            assert await memories.get_by_text("my cat is called Miso").count() == 0
            assert await memories.get_by_text("I work as a graphic designer").count() == 2
            for name in ("turns", "jobs"):
                await page.goto(f"{base}/{name}")
                assert await page.title() == f"{name} · livememory"
            await shot("jobs")  # turns.png: from a real console (``test_dashboard_turns``)

            await page.goto(f"{base}/streams")
            s1 = page.get_by_role("row").filter(has_text="s1")
            await s1.get_by_role("button", name="make quiet").click()
            await page.wait_for_url(f"{base}/streams")
            assert await s1.get_by_role("button", name="let it speak").count() == 1
            await shot("streams")
            assert await reply.ReplyState(services.db).is_quiet("s1")

            await page.goto(f"{base}/lore")  # nothing loaded yet: load the files first
            await page.get_by_role("button", name="Replace the lore with these files").click()
            await page.wait_for_url(re.compile(r".*/lore\?loaded=\d+$"))
            await shot("lore")
            mascot = page.get_by_label("lore file mascot.yaml")
            text = await mascot.input_value()
            await mascot.fill(text.replace("a round orange pigeon", "a round grey pigeon"))
            await page.get_by_role("button", name="Preview changes").click()
            await page.wait_for_url(f"{base}/lore/preview")
            diff = page.locator("#diff")
            assert await diff.get_by_text("~ replaced: Biscotto").count() == 1
            assert await diff.get_by_text("a round grey pigeon").count() == 1
            await shot("lore_preview")
            await page.get_by_role("button", name="Replace the lore").click()
            await page.wait_for_url(re.compile(r".*/lore\?loaded=\d+$"))
            assert await page.get_by_text("a round grey pigeon").count() >= 1
        finally:
            await browser.close()

    hits = await services.operations.search_own("1001", "what is my cat called Miso")
    assert "my cat is called Miso" not in [h.record.text for h in hits]
    assert "I work as a graphic designer" in [h.record.text for h in hits]
    audit: list[Any] = await db.pool.fetch("SELECT actor, action FROM memory_audit ORDER BY id")
    assert [tuple(r) for r in audit] == [
        ("web:modmia", "forget_memory"),
        ("web:modmia", "quiet"),
        ("web:modmia", "lore_load"),
        ("web:modmia", "lore_load"),
    ]
    lore_hits = await services.spaces.search("lore", "Biscotto pigeon", limit=1)
    assert "a round grey pigeon" in lore_hits[0].record.text
    assert "a round grey pigeon" in (settings.lore_dir / "mascot.yaml").read_text()
