"""The model server's API key goes to the model server and nowhere else: a console session with
provider ``openai`` against the fake OpenAI server (which refuses a request without the key as
its bearer token), with its dashboard, a failed model call and an export; then its log, its
terminal, every row of its database, the dashboard's pages and the export are searched for the key.
"""

from __future__ import annotations

import asyncio
import subprocess
from typing import TYPE_CHECKING

import asyncpg
import httpx
import pytest

from bot import console
from tests import conftest, live_bot
from tests.fakes import openai_server

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

KEY = "sk-test-LEAKCHECK-7f3a9c2e51d84b06"
#: a part of the key a truncated or reformatted copy would still show
MARK = "LEAKCHECK"


@pytest.fixture
async def fake() -> AsyncIterator[openai_server.FakeOpenAI]:
    server = openai_server.FakeOpenAI(key=KEY)
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def bot(
    fake: openai_server.FakeOpenAI, tmp_path: Path, database_url: str
) -> AsyncIterator[live_bot.LiveBot]:
    env = {
        "DATABASE_URL": database_url,
        "LIVEMEMORY_MODEL__PROVIDER": "openai",
        "LIVEMEMORY_MODEL__BASE_URL": fake.url,
        "LIVEMEMORY_MODEL__NAME": fake.model,
        "LIVEMEMORY_MODEL__API_KEY": KEY,
    }
    running = live_bot.LiveBot.start(tmp_path, "console", "--web", "--log-level", "DEBUG", env=env)
    yield running
    await asyncio.to_thread(running.kill)


async def _pages(base: str, link: str, turn_ids: list[str], user_id: str) -> dict[str, str]:
    """The dashboard's pages, signed in with the one-time link."""
    paths = ["/viewers", f"/viewers/{user_id}", "/turns", "/jobs", "/streams", "/lore"]
    paths += [f"/turns/{turn_id}" for turn_id in turn_ids]
    async with httpx.AsyncClient(follow_redirects=True) as client:
        assert (await client.get(link)).status_code == 200
        pages = {path: await client.get(base + path) for path in paths}
    assert {path: page.status_code for path, page in pages.items()} == dict.fromkeys(paths, 200)
    return {path: page.text for path, page in pages.items()}


def _database_dump(database_url: str) -> str:
    """Every row of the session's database (``pg_dump --data-only``)."""
    dump = subprocess.run(
        ["pg_dump", "--data-only", database_url], capture_output=True, text=True, check=True
    )
    return dump.stdout


async def test_the_api_key_reaches_the_server_and_nothing_else(
    fake: openai_server.FakeOpenAI, bot: live_bot.LiveBot, database_url: str
) -> None:
    link = await asyncio.to_thread(bot.ready)
    fake.reply("hello alice")
    answered = await asyncio.to_thread(bot.say, "alice: hi @Mnemo, I like green tea")
    fake.replies.append(500)  # a failed call: its error is in the report and the log
    failed = await asyncio.to_thread(bot.say, "alice: @Mnemo are you there?")
    assert answered[-1] == "  reply   hello alice"
    assert failed[-1].startswith("  FAILED  model server at ") and "HTTP 500" in failed[-1]
    assert fake.headers and all(h["Authorization"] == f"Bearer {KEY}" for h in fake.headers)

    turn_ids = await _turn_ids(database_url)
    assert len(turn_ids) == 2
    pages = await _pages(link.split("/auth/")[0], link, turn_ids, console.console_user_id("alice"))
    exported = await asyncio.to_thread(bot.admin, "export", "--viewer", "alice", "--json")
    assert exported.code == 0 and "green tea" in exported.out, exported
    assert await asyncio.to_thread(bot.quit) == 0

    log_file = (bot.data_dir / "logs" / "console.log").read_text(encoding="utf-8")
    assert "hello alice" in "".join(answered) and " DEBUG " in log_file  # everything logged
    searched = {
        "the terminal's log": "".join(bot.log),
        "the log file": log_file,
        "the turn reports printed": "\n".join(answered + failed),
        "the database": _database_dump(database_url),
        "the export": exported.out + exported.err,
        **{f"the dashboard's {path}": text for path, text in pages.items()},
    }
    assert "hello alice" in searched["the database"]  # the journal is in what is searched
    leaked = [where for where, text in searched.items() if MARK in text]
    assert leaked == []


async def _turn_ids(database_url: str) -> list[str]:
    conn = await asyncpg.connect(database_url)
    try:
        return [row["id"] for row in await conn.fetch("SELECT id FROM turns ORDER BY seq")]
    finally:
        await conn.close()


def test_the_settings_never_show_the_key() -> None:
    settings = conftest.IsolatedSettings(
        database_url="postgresql://unused/x", model={"provider": "openai", "api_key": KEY}
    )
    shown = [repr(settings), str(settings), repr(settings.model), settings.model_dump_json()]
    assert [MARK in text for text in shown] == [False] * len(shown)
    assert settings.model.api_key.get_secret_value() == KEY
