"""One console session (``python -m bot console``, typed to through its stdin) run with each chat
backend: ``ollama`` against the fake Ollama, and ``openai`` against a real small model
(``tests.model_server``). Both journal the same kinds of turns; of the real model's replies the
test asserts only what a real model can be relied on for: a reply reaches the channel within the
budget (the reply timeout, the context window), redacted, in chat messages of at most 500
characters, and the turn is journaled. With the model's tool-calling format, a turn offering the
bot's tools ends, its tool calls completed or refused cleanly.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import asyncpg
import pytest

from bot.twitch import sending
from memory.history import fit
from memory.state import tool_args, tool_handlers
from tests import live_bot, model_server

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from tests.fakes import ollama as fake_ollama_module

EMAIL = "alice.cat@example.com"
#: the session typed: a statement (with an address the redactor takes out), a question to the bot
#: about it, and a chat command
SESSION = (
    f"alice: hi @Mnemo, my cat is called Miso, write to me at {EMAIL}",
    "bob: @Mnemo what is the name of alice's cat?",
    "alice: !memory",
)
#: the turns it journals, with either backend: (chat or command, status)
KINDS = [("chat", "completed"), ("chat", "completed"), ("command", "completed")]
#: the reply settings of the real model's sessions (a loaded 2-core machine: a first prompt of
#: ~1,000 tokens takes up to ~10 s)
REPLY_TOKENS = 96
REPLY_TIMEOUT_S = 120


@pytest.fixture
async def bots() -> AsyncIterator[list[live_bot.LiveBot]]:
    started: list[live_bot.LiveBot] = []
    yield started
    for bot in started:
        await asyncio.to_thread(bot.kill)


async def _console(
    bots: list[live_bot.LiveBot], tmp_path: Path, env: dict[str, str]
) -> live_bot.LiveBot:
    bot = live_bot.LiveBot.start(tmp_path, "console", "--log-level", "DEBUG", env=env)
    bots.append(bot)
    await asyncio.to_thread(
        bot.wait_log, lambda line: line.startswith("stream session"), "console prompt"
    )
    return bot


async def _session(bot: live_bot.LiveBot, typed: tuple[str, ...]) -> list[list[str]]:
    """Type each line, wait for its turn report; /quit (exit code 0)."""
    reports = [await asyncio.to_thread(bot.say, line) for line in typed]
    assert await asyncio.to_thread(bot.quit) == 0, "".join(bot.log)
    return reports


async def _journal(database_url: str) -> list[dict[str, Any]]:
    """The turn reports journaled, in turn order."""
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch(
            "SELECT o.report FROM turns t JOIN turn_outcomes o ON o.turn_id = t.id ORDER BY t.seq"
        )
    finally:
        await conn.close()
    return [json.loads(row["report"]) for row in rows]


def _kinds(journal: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [("command" if r["command"] else "chat", r["status"]) for r in journal]


def _printed(reports: list[list[str]]) -> str:
    return "\n".join(line for report in reports for line in report)


def _replies(report: list[str]) -> list[str]:
    """The chat messages of a printed turn report's reply."""
    return [line[10:] for line in report if line.startswith("  reply ")]


def _env(database_url: str, **model: str) -> dict[str, str]:
    return {
        "DATABASE_URL": database_url,
        **{f"LIVEMEMORY_MODEL__{key.upper()}": value for key, value in model.items()},
    }


async def test_the_session_with_the_fake_ollama(
    fake_ollama: fake_ollama_module.FakeOllama,
    bots: list[live_bot.LiveBot],
    tmp_path: Path,
    database_url: str,
) -> None:
    env = {**_env(database_url), "OLLAMA_HOST": fake_ollama.url}
    reports = await _session(await _console(bots, tmp_path, env), SESSION)
    journal = await _journal(database_url)
    assert _kinds(journal) == KINDS
    # the fake echoes the line it answers: what the model saw was redacted already
    assert _replies(reports[0]) == [f"echo: alice: {_redacted(SESSION[0])}"]
    assert EMAIL not in json.dumps(journal) and EMAIL not in _printed(reports)


async def test_a_line_typed_after_the_bot_s_question_answers_it(
    fake_ollama: fake_ollama_module.FakeOllama,
    bots: list[live_bot.LiveBot],
    tmp_path: Path,
    database_url: str,
) -> None:
    """The console shows the bot's reply as chat does, and records it delivered before it shows:
    alice's next line ("@Mnemo a nurse, six years now") answers the question it asked her, and is
    remembered with it."""
    for reply in ("@alice welcome! what do you do for work?", "@alice a nurse, lovely!"):
        fake_ollama.reply(reply)
    bot = await _console(bots, tmp_path, {**_env(database_url), "OLLAMA_HOST": fake_ollama.url})
    for line in ("alice: @Mnemo hi, first time here", "alice: @Mnemo a nurse, six years now"):
        await asyncio.to_thread(bot.say, line)
        await asyncio.to_thread(bot.consolidated)
    held = await asyncio.to_thread(bot.admin_json, "inspect", "--viewer", "alice")
    assert await asyncio.to_thread(bot.quit) == 0, "".join(bot.log)

    [answer] = [m for m in held["memories"] if "nurse" in m["text"]]
    assert answer["context_question"] == "what do you do for work?"
    assert answer["context_message_id"].startswith("console-")


def _redacted(line: str) -> str:
    return line.partition(": ")[2].replace(EMAIL, "[redacted:email]")


def _real_env(database_url: str, real_model: model_server.RealModel, name: str) -> dict[str, str]:
    return _env(
        database_url,
        provider="openai",
        base_url=real_model.url,
        name=name,
        context_tokens=str(model_server.CONTEXT_TOKENS),
        reply_tokens=str(REPLY_TOKENS),
        reply_timeout_s=str(REPLY_TIMEOUT_S),
        temperature="0",
    )


@pytest.mark.realmodel
@pytest.mark.timeout(600)
async def test_the_session_with_a_real_model(
    real_model: model_server.RealModel,
    bots: list[live_bot.LiveBot],
    tmp_path: Path,
    database_url: str,
) -> None:
    env = _real_env(database_url, real_model, model_server.PLAIN)
    reports = await _session(await _console(bots, tmp_path, env), SESSION)
    journal = await _journal(database_url)
    assert _kinds(journal) == KINDS
    tools = [tool_args.tool_schema(tool) for tool in tool_handlers.TOOLS.values()]
    limit = fit.budget(model_server.CONTEXT_TOKENS, REPLY_TOKENS, tools)
    for printed, turn in zip(reports[:2], journal[:2], strict=True):
        messages = _replies(printed)
        assert messages and all(0 < len(m) <= sending.MAX_MESSAGE_CHARS for m in messages)
        assert " ".join(messages) == " ".join(sending.split_message(turn["reply"]))
        assert turn["degraded"] == [] and turn["prompt"]["tokens_estimate"] <= limit
    assert EMAIL not in json.dumps(journal) and EMAIL not in _printed(reports)


@pytest.mark.realmodel
@pytest.mark.timeout(600)
async def test_a_real_model_with_tools_ends_its_turn_cleanly(
    real_model: model_server.RealModel,
    bots: list[live_bot.LiveBot],
    tmp_path: Path,
    database_url: str,
) -> None:
    """``chatml-function-calling``: the model answers with a tool call, with text, or with
    nothing at all; whichever, the turn ends and every call it made has its result."""
    env = _real_env(database_url, real_model, model_server.TOOLS)
    typed = ("alice: @Mnemo please add a note that alice likes green tea",)
    [printed] = await _session(await _console(bots, tmp_path, env), typed)
    [turn] = await _journal(database_url)
    assert turn["status"] in ("completed", "degraded")
    assert {d["source"] for d in turn["degraded"]} <= {"model"}
    assert printed[-1].startswith(("  reply", "  no reply"))
    for call in turn["tools"]:
        assert call["result"]["ok"] is (call["error"] is None)
