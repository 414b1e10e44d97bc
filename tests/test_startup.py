"""First start: no Ollama (one line, or a memory-only bot with ``--no-llm``), Twitch unreachable
(one line per attempt with a growing pause, then one error line; no traceback)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pytest

from bot import errors as bot_errors
from bot.twitch import run as twitch_run
from memory import runtime
from tests import cli, dashboard_helpers

if TYPE_CHECKING:
    from pathlib import Path

    from tests.conftest import SettingsFactory


def twitch_env(closed: str) -> dict[str, str]:
    return {
        "LIVEMEMORY_TWITCH__CLIENT_ID": "client",
        "LIVEMEMORY_TWITCH__CLIENT_SECRET": "secret",
        "LIVEMEMORY_TWITCH__BOT_ID": "1001",
        "LIVEMEMORY_TWITCH__CHANNELS": '["streamer"]',
        "LIVEMEMORY_TWITCH__USER_TOKEN": "token",
        "LIVEMEMORY_TWITCH__API_BASE": f"{closed}/helix/",
        "LIVEMEMORY_TWITCH__ID_BASE": f"{closed}/id/",
        "LIVEMEMORY_TWITCH__CONNECT_ATTEMPTS": "2",
        "LIVEMEMORY_TWITCH__CONNECT_RETRY_SECONDS": "0",
    }


async def test_twitch_unreachable_is_retried_with_backoff_then_one_error(
    make_settings: SettingsFactory, caplog: pytest.LogCaptureFixture
) -> None:
    closed = f"http://127.0.0.1:{dashboard_helpers.free_port()}"
    settings = make_settings(
        twitch={
            "client_id": "client",
            "client_secret": "secret",
            "bot_id": "1001",
            "channels": ["streamer"],
            "user_token": "token",
            "api_base": f"{closed}/helix/",
            "id_base": f"{closed}/id/",
            "connect_attempts": 3,
            "connect_retry_seconds": 0,
        }
    )
    caplog.set_level(logging.WARNING, logger="bot.twitch.run")
    async with runtime.lifespan(settings, no_llm=True) as services:
        with pytest.raises(bot_errors.TwitchUnreachable) as raised:
            await twitch_run.run_bot(settings, services)
    assert str(raised.value).startswith(f"Twitch unreachable at {closed}/helix/ (")
    assert str(raised.value).endswith("after 3 attempts")
    retries = [r.getMessage() for r in caplog.records if r.name == "bot.twitch.run"]
    assert len(retries) == 2
    assert "attempt 1 of 3, next in 0 s" in retries[0] and "attempt 2 of 3" in retries[1]


def test_bot_run_without_ollama_is_one_line_and_no_llm_runs_memory_only(
    database_url: str, tmp_path: Path
) -> None:
    closed = f"http://127.0.0.1:{dashboard_helpers.free_port()}"
    env = {
        "DATABASE_URL": database_url,
        "LIVEMEMORY_DATA_DIR": str(tmp_path / "data"),
        "LIVEMEMORY_MEMORY__EMBEDDER": "offline",
        "OLLAMA_HOST": closed,
        **twitch_env(closed),
    }
    result = cli.run("bot", "run", env=env, cwd=tmp_path)
    assert result.code == 1 and "Traceback" not in result.err
    [line] = [line for line in result.err.splitlines() if line.startswith("error:")]
    assert "Ollama" in line and closed in line

    # memory-only: no model check; here Twitch is unreachable too, which is one line at the end
    result = cli.run("bot", "run", "--no-llm", env=env, cwd=tmp_path)
    assert result.code == 1 and "Traceback" not in result.err
    assert "memory-only bot" in result.err
    assert "Twitch unreachable" in result.err and "attempt 1 of 2" in result.err
    assert (
        result.err.strip()
        .splitlines()[-1]
        .startswith(f"error: Twitch unreachable at {closed}/helix/")
    )
    result = cli.run("bot", "run", env={**env, "LIVEMEMORY_OLLAMA__ENABLED": "false"}, cwd=tmp_path)
    assert result.code == 1 and "memory-only bot" in result.err
