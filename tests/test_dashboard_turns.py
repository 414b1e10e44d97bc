"""The turn view answers "why did the bot say that?".

The browser test drives a real console (``python -m bot console --no-llm --web`` on the embedded
defaults, typed to through its stdin): a silent turn, a turn that recalls what the viewer said in
it, a moderator's command. In Chromium, each turn's page shows the chat lines it answered, the
plan, the recall in prompt order with when it was said, the reply or the reason it stayed silent,
and a timing bar per source — each checked against the report the console printed for that turn.
The viewer's memory links to the turn that recalled it. The test saves ``turns.png`` (the list:
the recalling turn and the silent one) and ``turn.png`` (one turn) into ``docs/dashboard/`` with
``LIVEMEMORY_SCREENSHOTS=docs/dashboard``.

The HTTP test renders a journaled degraded turn and a failed one, and an unknown turn id.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import httpx
import pytest

from memory import models
from memory.history import transcript
from tests import live_bot
from tests import test_dashboard as dashboard_tests

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from playwright.async_api import Locator, Page

    from memory import runtime

twitch = dashboard_tests.twitch
port = dashboard_tests.port
settings = dashboard_tests.settings
stream = dashboard_tests.stream
dashboard = dashboard_tests.dashboard
lore_dir = dashboard_tests.lore_dir
screenshots = dashboard_tests.screenshots

MISO = "my cat is called Miso"
QUESTION = "@mnemo do you remember my cat?"
COMMAND = "!memory @alice"
#: chat of others between the statement and the question: the prompt's short history
#: (``live_bot``: two messages) no longer shows the statement, so the turn recalls it
BETWEEN = ("carla: that boss fight was wild",)
#: the turn head line of the console's report: ``── turn 3a1c4570 · <stream> · <message ids>``
HEAD = re.compile(r"── turn ([0-9a-f]{8}) · ")
PLAN = re.compile(r"  plan    @(\w+) score ([0-9.]+): (.+)$")


@pytest.fixture
def bot(tmp_path: Path) -> Iterator[live_bot.LiveBot]:
    # the default reply policy: the bot speaks when addressed, else the turn is silent
    running = live_bot.LiveBot.start(tmp_path, env={"LIVEMEMORY_REPLY__POLICY": "addressed"})
    yield running
    running.kill()


def _head(report: list[str]) -> str:
    found = HEAD.match(report[0])
    assert found, report
    return found.group(1)


def _field(report: list[str], name: str) -> str:
    [line] = [line for line in report if line.startswith(f"  {name} ")]
    return line[len(name) + 2 :].strip()


def _recalled_texts(report: list[str]) -> list[str]:
    """The recall lines' texts: ``recall  <source> <space> <text>  ← <origin ids>``."""
    return [line.split(None, 3)[3].rsplit("  ← ", 1)[0] for line in live_bot.recalled(report)]


async def _open_turn(page: Page, base: str, short: str) -> Locator:
    """From the turn list, the page of the turn whose id starts with ``short``."""
    await page.goto(f"{base}/turns")
    await page.get_by_role("link", name=f"turn {short}").click()
    await page.wait_for_url(re.compile(rf".*/turns/{short}[0-9a-f-]+$"))
    return page.get_by_role("article")


async def test_each_turn_shows_why_the_bot_spoke_or_stayed_silent(
    bot: live_bot.LiveBot, screenshots: Path
) -> None:
    dashboard_tests._need_chromium()
    from playwright.async_api import async_playwright

    link = bot.ready()
    base = link.split("/auth/")[0]
    silent = bot.say(f"alice: {MISO}")
    bot.consolidated()
    others = [bot.say(line) for line in BETWEEN]
    replied = bot.say(f"alice: {QUESTION}")
    command = bot.say(f"bob[moderator]: {COMMAND}")
    assert _field(silent, "silent").startswith("(not_addressed")
    recalled = _recalled_texts(replied)
    assert MISO in recalled, replied
    [(login, score, signals)] = [m.groups() for m in map(PLAN.match, replied) if m]
    sources = _field(replied, "sources").split(", ")
    [held] = [
        m for m in bot.admin_json("inspect", "--viewer", "alice")["memories"] if m["text"] == MISO
    ]
    said_at = datetime.fromisoformat(held["said_at"]).astimezone(UTC)

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=dashboard_tests.CHROMIUM, args=dashboard_tests.CHROMIUM_FLAGS
        )
        try:
            page = await browser.new_page(viewport={"width": 1200, "height": 800})
            await page.goto(link)
            await page.wait_for_url(f"{base}/viewers")

            # the turn that recalled: chat, plan, recall in prompt order, reply, timings
            turn = await _open_turn(page, base, _head(replied))
            replied_url = page.url
            chat = turn.get_by_role("region", name="chat")
            assert await chat.get_by_role("link", name="alice").count() == 1
            assert await chat.get_by_text(QUESTION).count() == 1
            plan = turn.get_by_role("region", name="plan")
            row = plan.get_by_role("row").filter(has_text=login)
            assert await row.get_by_role("cell").all_inner_texts() == [login, score, signals]
            for source in sources:
                assert await plan.get_by_text(source, exact=True).count() == 1
            recall = turn.get_by_role("region", name="recall")
            rows = recall.get_by_role("row")
            assert await rows.count() == 1 + len(recalled)  # the header, then prompt order
            for place, text in enumerate(recalled, start=1):
                cells = await rows.nth(place).get_by_role("cell").all_inner_texts()
                assert cells[0] == str(place) and cells[3].startswith(text), cells
                assert cells[2] == "alice"
            # the statement's row: the memory's id, and when it was said (the memory's said_at)
            cells = await rows.nth(1 + recalled.index(MISO)).get_by_role("cell").all_inner_texts()
            assert held["id"][:8] in cells[3]
            assert cells[4] == f"earlier this stream\n{said_at:%Y-%m-%d %H:%M} UTC", cells
            outcome = turn.get_by_role("region", name="outcome")
            assert await outcome.get_by_role("heading", name="Reply").count() == 1
            assert await outcome.get_by_text("the bot ran without a model").count() == 1
            assert await outcome.get_by_text("it spoke because: addressed").count() == 1
            bars = turn.get_by_role("region", name="timings").get_by_role("row")
            names = [(await r.get_by_role("cell").first.inner_text()) for r in await bars.all()]
            assert names[: len(sources)] == sources
            assert names[len(sources) :] == ["memory stage", "whole turn"]
            for bar in await turn.locator(".bar").all():
                assert re.fullmatch(r"width: \d+\.\d%", await bar.get_attribute("style") or "")
            # one scale: the whole turn, the longest, is the full width
            assert await bars.last.locator(".bar").get_attribute("style") == "width: 100.0%"
            await page.screenshot(path=str(screenshots / "turn.png"), full_page=True)

            # the turn links to the viewer; the viewer's memory links back to the turn
            await chat.get_by_role("link", name="alice").click()
            await page.wait_for_url(re.compile(r".*/viewers/console-[0-9a-f]+$"))
            memory = page.locator("#memories").get_by_role("row").filter(has_text=MISO)
            await memory.get_by_role("link", name=re.compile(r"turn \S+ recalled it")).click()
            await page.wait_for_url(replied_url)

            # the silent turn: what it heard, that it planned nothing, why it stayed silent
            turn = await _open_turn(page, base, _head(silent))
            assert await turn.get_by_role("region", name="chat").get_by_text(MISO).count() == 1
            outcome = turn.get_by_role("region", name="outcome")
            assert await outcome.get_by_role("heading", name="Stayed silent").count() == 1
            assert (
                await outcome.get_by_text("nobody addressed the bot (not_addressed)").count() == 1
            )
            plan = turn.get_by_role("region", name="plan")
            assert await plan.get_by_text("a silent turn plans nothing").count() == 1
            recall = turn.get_by_role("region", name="recall")
            assert await recall.get_by_text("nothing recalled").count() == 1

            # the command turn: the moderator's line and the handler's answer
            turn = await _open_turn(page, base, _head(command))
            chat = turn.get_by_role("region", name="chat")
            assert await chat.get_by_role("link", name="bob").count() == 1
            outcome = turn.get_by_role("region", name="outcome")
            assert await outcome.get_by_text(COMMAND, exact=True).count() == 1
            assert await outcome.get_by_text(_field(command, "reply")).count() == 1

            # the list: every turn in full, newest first
            await page.goto(f"{base}/turns")
            cards = page.get_by_role("article")
            heads = [_head(r) for r in (command, replied, *reversed(others), silent)]
            assert [
                (await c.get_by_role("link").first.inner_text()) for c in await cards.all()
            ] == [f"turn {short}" for short in heads]
            await page.screenshot(path=str(screenshots / "turns.png"), full_page=True)
        finally:
            await browser.close()
    assert bot.quit() == 0


async def _journal(
    services: runtime.Services, report: models.TurnReport, events: list[models.ChatEvent]
) -> str:
    store = transcript.Transcript(services.db)
    await store.append_events(events)
    turn_id = await store.start_turn(events[0].stream, [e.id for e in events])
    report.turn_id = turn_id
    await store.finish_turn(
        turn_id,
        stream=report.stream,
        status=report.status,
        reply=report.reply,
        error=report.error,
        ts=events[-1].ts + timedelta(seconds=1),
        report=report.to_json(),
        consolidate=False,
    )
    return turn_id


def _said(mid: str, login: str, text: str) -> models.ChatEvent:
    user_id = {"alice": "1001", "bob": "1002"}[login]  # the ``stream`` fixture's viewers
    return models.ChatEvent(
        id=mid, stream="s1", user_id=user_id, login=login, text=text, ts=datetime.now(UTC)
    )


async def test_a_degraded_turn_shows_what_it_went_without(
    dashboard: tuple[str, runtime.Services],
) -> None:
    base, services = dashboard
    said = datetime.now(UTC) - timedelta(days=3)
    asked = _said("d1", "alice", "@mnemo what do you know about me?")
    report = models.TurnReport(
        turn_id="",
        stream="s1",
        message_ids=["d1"],
        plan=models.Plan(
            viewers=(models.PlannedViewer(login="alice", user_id="1001", score=9.0),),
            sources=(
                models.PlannedSource(kind="recall", viewer="alice", user_id="1001"),
                models.PlannedSource(kind="lore"),
            ),
        ),
        recall=[
            models.RecallItem(
                source="recall",
                space="viewer-alice",
                viewer="alice",
                memory_id="mem-designer",
                text="I work as a graphic designer",
                said_at=said,
                stream="s0",
            )
        ],
        timings_ms={"recall:alice": 4.0, "lore": 1000.0, "memory_total": 1001.0},
        degraded=[
            models.Degraded(source="history", reason="unavailable"),
            models.Degraded(source="lore", reason="timeout"),
        ],
        reply="@alice you are a graphic designer",
        status=models.TurnStatus.DEGRADED,
        reason="addressed",
    )
    degraded = await _journal(services, report, [asked])
    failed = await _journal(
        services,
        models.TurnReport(
            turn_id="",
            stream="s1",
            message_ids=["d2"],
            status=models.TurnStatus.FAILED,
            error="the model server is unreachable",
        ),
        [_said("d2", "bob", "@mnemo hi")],
    )
    late = await _journal(
        services,
        models.TurnReport(
            turn_id="",
            stream="s1",
            message_ids=["d3"],
            degraded=[models.Degraded(source="model", reason="timeout")],
            status=models.TurnStatus.DEGRADED,
        ),
        [_said("d3", "bob", "@mnemo still there?")],
    )
    async with httpx.AsyncClient() as client:
        await dashboard_tests.sign_in(client, base, dashboard_tests.MODERATOR[1])
        page = await client.get(f"{base}/turns/{degraded}")
        assert page.status_code == 200
        html = page.text
        assert 'class="status st-degraded">degraded<' in html
        assert "degraded: history (unavailable)" in html and "degraded: lore (timeout)" in html
        assert '<a href="/viewers/1001">alice</a>' in html
        assert "I work as a graphic designer" in html and "3 days ago" in html
        assert said.strftime("%Y-%m-%d %H:%M") in html
        assert "@alice you are a graphic designer" in html
        # one scale: the late source's bar is near the memory stage's, marked; the answer short
        assert re.search(r'class="degraded"><td><code>lore</code>.*?width: 99\.9%.*?timeout', html)
        assert re.search(r"<code>recall:alice</code>.*?width: 0\.4%", html)
        assert re.search(r"<td>memory stage</td>.*?width: 100\.0%", html)
        page = await client.get(f"{base}/turns/{failed}")
        assert "the model server is unreachable" in page.text and "<h3>Failed</h3>" in page.text
        page = await client.get(f"{base}/turns/{late}")
        assert "no reply text: the model did not answer within the reply timeout" in page.text
        assert "degraded: model (timeout)" in page.text
        listed = await client.get(f"{base}/turns?stream=s1")
        assert f"/turns/{degraded}" in listed.text and f"/turns/{failed}" in listed.text
        unknown = await client.get(f"{base}/turns/nope")
        assert unknown.status_code == 404 and "unknown turn" in unknown.text
