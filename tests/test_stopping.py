"""Every stop is a clean stop, and a crash leaves nothing running for long.

The bot as a streamer runs it on their PC — ``python -m bot console --no-llm`` on the full embedded
defaults (no ``DATABASE_URL``, ``REDIS_URL`` or ``QDRANT_URL`` in its environment), a fresh data
folder — stopped the ways a PC stops it, by a real signal to the real process: ``kill -TERM``
(docker, systemd), the terminal window closed (SIGHUP), ``kill -9`` (a crash, the OOM killer) then a
new console and ``/quit``; the Twitch bot against the fake Twitch (Ctrl-C); ``memory.admin`` run on
the folder a crashed bot left; and a second signal while the bot stops. After each: no embedded
Postgres of the folder runs (its ``postmaster.pid``, the process naming the folder), no control
file is left, and what was said before the stop is all there (``memory.admin``).

Readiness is a line of the child's output (an event), never a sleep; an embedded Postgres a failed
test leaves on its folder is stopped by the finalizer (``LiveBot.kill``).
"""

from __future__ import annotations

import asyncio
import json
import signal
from typing import TYPE_CHECKING

import pytest

from memory.adapters import pg_embedded
from memory.ops import control
from tests import live_bot
from tests import test_run_web as run_web
from tests import test_twitch_e2e as twitch_tests
from tests.fakes import eventsub
from tests.fakes import ollama as fake_ollama
from tests.fakes import twitch as fake_twitch

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator
    from pathlib import Path

    from aiohttp import web

twitch_fake = twitch_tests.twitch_fake

pytestmark = pytest.mark.slow

#: a turn per line (no batch window to wait for), the whole log on the terminal
FAST = {"LIVEMEMORY_BATCH__MAX_MESSAGES": "1"}
CONSOLE = ("console", "--no-llm", "--log-level", "DEBUG")
SAID = ("my cat is called Miso", "I work as a graphic designer")


@pytest.fixture
def bots() -> Iterator[list[live_bot.LiveBot]]:
    """The bots a test starts: killed at its end if still running, and the embedded Postgres of
    their folder stopped if one is left (a failed test leaves nothing running)."""
    started: list[live_bot.LiveBot] = []
    yield started
    for bot in started:
        bot.kill()


def _console(bots: list[live_bot.LiveBot], tmp_path: Path, *argv: str) -> live_bot.LiveBot:
    bot = live_bot.LiveBot.start(tmp_path, *(argv or CONSOLE), env=FAST)
    bots.append(bot)
    bot.wait_log(lambda line: line.startswith("stream session"), "console prompt")
    return bot


def _chat(bot: live_bot.LiveBot) -> None:
    """alice says what the test later finds in memory, each line consolidated."""
    for text in SAID:
        bot.say(f"alice: {text}")
        bot.consolidated()


def _nothing_left(data_dir: Path) -> None:
    assert live_bot.postgres_of(data_dir) is None, "an embedded Postgres of the folder runs"
    assert not (data_dir / "postgres" / "postmaster.pid").exists()
    assert not control.path(data_dir).exists(), "the control file was left behind"
    assert list((data_dir / pg_embedded.USERS).glob("*.lock")) == []


def _all_there(bot: live_bot.LiveBot) -> None:
    """What alice said is in memory — read by ``memory.admin`` on its own (no bot live), which
    leaves nothing running either."""
    exported = bot.admin("export", "--viewer", "alice")
    assert exported.code == 0, exported
    texts = [m["text"] for m in json.loads(exported.out)["memories"]]
    assert sorted(texts) == sorted(SAID)
    _nothing_left(bot.data_dir)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_stops_the_console_as_quit_does(
    signum: signal.Signals, bots: list[live_bot.LiveBot], tmp_path: Path
) -> None:
    """``kill -TERM`` and the terminal window closed: exit 0, the server stopped, the file gone."""
    bot = _console(bots, tmp_path)
    _chat(bot)
    assert live_bot.postgres_of(bot.data_dir) is not None and control.path(bot.data_dir).exists()
    bot.process.send_signal(signum)
    code = bot.wait_exit()
    assert code == 0, "".join(bot.log)
    assert f"stopping ({signum.name})\n" in bot.log
    assert any("embedded Postgres stopped in" in line for line in bot.log)
    _nothing_left(bot.data_dir)
    _all_there(bot)


def test_after_a_crash_the_next_console_adopts_the_server_and_stops_it(
    bots: list[live_bot.LiveBot], tmp_path: Path
) -> None:
    """``kill -9`` leaves the server and the control file; the next console says it adopted the
    server, and after its ``/quit`` neither is left."""
    crashed = _console(bots, tmp_path)
    _chat(crashed)
    crashed.process.send_signal(signal.SIGKILL)
    assert crashed.process.wait(timeout=live_bot.LINE_SECONDS) == -signal.SIGKILL
    left = live_bot.postgres_of(crashed.data_dir)
    assert left is not None and control.path(crashed.data_dir).exists()  # what a crash leaves

    bot = _console(bots, tmp_path)
    assert live_bot.postgres_of(bot.data_dir) == left  # taken over, not started again
    assert bot.quit() == 0, "".join(bot.log)
    log = [line.split(": ", 1)[-1].rstrip("\n") for line in bot.log]
    assert (
        f"the embedded Postgres left by pid {crashed.process.pid} was adopted; it will stop when "
        "this bot exits"
    ) in log
    assert any(
        line.startswith(f"the embedded Postgres left by pid {crashed.process.pid} stopped")
        for line in log
    )
    _nothing_left(bot.data_dir)
    _all_there(bot)


def test_memory_admin_alone_stops_the_server_a_crashed_bot_left(
    bots: list[live_bot.LiveBot], tmp_path: Path
) -> None:
    """No bot live, a server a ``kill -9`` left: the admin command adopts it (one line), answers,
    and leaves neither the server nor the stale control file."""
    crashed = _console(bots, tmp_path)
    _chat(crashed)
    crashed.process.kill()
    crashed.process.wait(timeout=live_bot.LINE_SECONDS)
    assert live_bot.postgres_of(crashed.data_dir) is not None

    inspected = crashed.admin("inspect", "--viewer", "alice")
    assert inspected.code == 0, inspected
    assert all(text in inspected.out for text in SAID)
    assert (
        f"the embedded Postgres left by pid {crashed.process.pid} was adopted; it will stop when "
        "this command exits"
    ) in inspected.err.splitlines()
    _nothing_left(crashed.data_dir)


async def test_ctrl_c_stops_the_twitch_bot_on_the_embedded_defaults(
    twitch_fake: fake_twitch.FakeTwitch, bots: list[live_bot.LiveBot], tmp_path: Path
) -> None:
    """``python -m bot run --no-llm`` against the fake Twitch, nothing but the data folder: SIGINT
    ends chat, stores and server, exit 0, and what chat said is in memory."""
    bot = live_bot.LiveBot.start(
        tmp_path, "run", "--no-llm", env={**run_web._twitch_env(twitch_fake), **FAST}
    )
    bots.append(bot)
    await twitch_fake.wait_subscriptions(1)
    for text in SAID:
        await twitch_fake.push_chat(eventsub.chat_event(user_id="3001", login="alice", text=text))
        await asyncio.to_thread(bot.consolidated)
    bot.process.send_signal(signal.SIGINT)
    code = await asyncio.to_thread(bot.wait_exit)
    assert code == 0, "".join(bot.log)
    assert any("SIGINT: stopping" in line for line in bot.log)
    _nothing_left(bot.data_dir)
    exported = await asyncio.to_thread(bot.admin, "export", "--viewer", "alice")
    assert exported.code == 0, exported
    assert sorted(m["text"] for m in json.loads(exported.out)["memories"]) == sorted(SAID)
    _nothing_left(bot.data_dir)


class _HeldOllama(fake_ollama.FakeOllama):
    """A fake Ollama whose chat answers wait until ``release`` (a turn held in flight)."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = asyncio.Event()
        self.release = asyncio.Event()

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        self.asked.set()
        await self.release.wait()
        return await super()._chat(request)


@pytest.fixture
async def held_ollama() -> AsyncIterator[_HeldOllama]:
    server = _HeldOllama()
    await server.start()
    yield server
    server.release.set()
    await server.stop()


async def test_a_second_signal_exits_at_once_and_keeps_the_stored_message(
    held_ollama: _HeldOllama, bots: list[live_bot.LiveBot], tmp_path: Path
) -> None:
    """A turn waits for the model when SIGTERM comes: the stop waits for it (bounded); a second
    SIGTERM exits at once (128 + 15) — the control file removed, the server stopped — and the
    message it was answering stays stored."""
    env = {**FAST, "OLLAMA_HOST": held_ollama.url}
    bot = live_bot.LiveBot.start(tmp_path, "console", "--log-level", "DEBUG", env=env)
    bots.append(bot)
    await asyncio.to_thread(
        bot.wait_log, lambda line: line.startswith("stream session"), "console prompt"
    )
    assert bot.process.stdin is not None
    bot.process.stdin.write("alice: my cat is called Miso\n")
    bot.process.stdin.flush()
    await asyncio.wait_for(held_ollama.asked.wait(), live_bot.LINE_SECONDS)  # the turn in flight
    bot.process.send_signal(signal.SIGTERM)
    await asyncio.to_thread(bot.wait_log, lambda line: line == "stopping (SIGTERM)\n", "stop")
    bot.process.send_signal(signal.SIGTERM)
    code = await asyncio.to_thread(bot.wait_exit)
    assert code == 128 + signal.SIGTERM, "".join(bot.log)
    assert "SIGTERM again: exiting at once\n" in bot.log
    _nothing_left(bot.data_dir)
    viewers = await asyncio.to_thread(bot.admin, "list", "viewers", "--json")
    assert viewers.code == 0, viewers
    [alice] = [v for v in json.loads(viewers.out) if v["login"] == "alice"]
    assert alice["messages"] == 1
    _nothing_left(bot.data_dir)
