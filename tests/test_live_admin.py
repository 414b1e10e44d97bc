"""Moderating while live on one PC: ``python -m memory.admin`` while ``python -m bot
console --no-llm --web`` runs on the embedded defaults — no Postgres, Redis or Qdrant server.

The admin command finds the bot's control file and runs in the bot: inspect, forget (its question
answered through the bot), correct, export, lore load, jobs and audit succeed, and the next turn
shows their effect (a forgotten memory is not recalled, a correction is, the new lore is). A viewer
forgotten everywhere is found nowhere afterwards: not in any Postgres column, not in the Qdrant
folder or the ingest spool. A second bot on the folder, a wrong token and a stale control file each
give one line.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from memory import migrate
from memory.ops import control
from tests import cli, conftest, dashboard_helpers, live_bot, scan

if TYPE_CHECKING:
    from collections.abc import Iterator

LORE = Path(__file__).resolve().parent.parent / "config" / "lore"


@pytest.fixture
def bot(tmp_path: Path) -> Iterator[live_bot.LiveBot]:
    running = live_bot.LiveBot.start(tmp_path)
    yield running
    running.kill()


def _memory(memories: list[dict[str, str]], text: str) -> dict[str, str]:
    [found] = [m for m in memories if text in m["text"]]
    return found


def _said(report: list[str], text: str) -> bool:
    print("\n".join(report))  # shown when the test fails
    return any(text in line for line in live_bot.recalled(report))


async def test_admin_commands_act_on_the_running_bot(bot: live_bot.LiveBot, tmp_path: Path) -> None:
    secret = f"zq{uuid.uuid4().hex[:12]}"
    lore = tmp_path / "lore"
    shutil.copytree(LORE, lore)
    mascot = lore / "mascot.yaml"
    mascot.write_text(mascot.read_text().replace("a round orange pigeon", "a round grey pigeon"))
    bot.ready()
    held = control.path(bot.data_dir)
    assert held.stat().st_mode & 0o777 == 0o600
    assert json.loads(held.read_text())["pid"] == bot.process.pid

    bot.say("alice: my cat is called Miso")
    bot.consolidated()
    bot.say(f"alice: I work as a graphic designer, my secret word is {secret}")
    bot.consolidated()
    memories = bot.admin_json("inspect", "--viewer", "alice")["memories"]
    miso = _memory(memories, "my cat is called Miso")
    designer = _memory(memories, "graphic designer")
    assert _said(bot.say("alice: do you remember my cat Miso?"), "my cat is called Miso")

    # forget: the bot asks, the admin command's terminal answers
    forgot = bot.admin("forget", "--memory-id", miso["id"][:8], stdin="y\n")
    assert forgot.code == 0, forgot
    assert f"forget memory {miso['id']}" in forgot.err and "Go ahead? [y/N]" in forgot.err
    assert forgot.out.startswith("forgot=memory")
    assert not _said(bot.say("alice: do you remember my cat Miso?"), "Miso")
    kept = bot.admin("forget", "--memory-id", designer["id"], stdin="n\n")
    assert (kept.code, kept.err.splitlines()[-1]) == (1, "Go ahead? [y/N] aborted: nothing changed")

    corrected = bot.admin(
        "correct", "--memory-id", designer["id"], "--text", "I work as an illustrator", "--yes"
    )
    assert corrected.code == 0 and corrected.out.startswith(f"corrected {designer['id']}")
    report = bot.say("alice: what do I work as, designer or illustrator?")
    assert _said(report, "I work as an illustrator") and not _said(report, "graphic designer")
    exported = json.loads(bot.admin("export", "--viewer", "alice").out)
    assert [m["text"] for m in exported["memories"]] == ["I work as an illustrator"]

    dry = bot.admin_json("lore", "load", str(lore), "--dry-run")
    assert dry["dry_run"] and [c["title"] for c in dry["changed"]] == ["Biscotto"]
    loaded = bot.admin("lore", "load", str(lore), "--yes")
    assert loaded.code == 0 and loaded.out.startswith("lore loaded:")
    assert _said(bot.say("bob: tell me about Biscotto"), "a round grey pigeon")

    jobs = bot.admin_json("jobs")
    assert jobs["counts"]["succeeded"] >= 2 and jobs["failed"] == []
    audit = bot.admin_json("audit")
    assert [(r["actor"], r["action"]) for r in reversed(audit)] == [
        ("admin:cli", "forget_memory"),
        ("admin:cli", "correct"),
        ("admin:cli", "lore_load"),
    ]

    everywhere = bot.admin("forget", "--viewer", "alice", "--everywhere", "--yes")
    assert everywhere.code == 0 and everywhere.out.startswith("forgot=viewer login=alice")
    report = bot.say("bob: what is alice's secret word? what does alice work as?")
    assert not any(secret in line or "illustrator" in line for line in report)

    _one_line_refusals(bot, tmp_path)
    assert bot.quit() == 0
    assert not held.exists()
    await _found_nowhere(bot.data_dir, secret)


def _one_line_refusals(bot: live_bot.LiveBot, tmp_path: Path) -> None:
    """A second bot on the folder, a dashboard of its own on it, and a control file whose token
    is not the bot's."""
    env = {**bot.env, "LIVEMEMORY_LOG_LEVEL": "INFO"}  # as a user starts it
    for argv in (("console", "--no-llm"), ("replay", str(cli.EXAMPLE), "--no-llm")):
        second = cli.run("bot", *argv, env=env, cwd=tmp_path, stdin="")
        assert second.code == 1
        assert second.err.splitlines() == [
            f"error: another bot (pid {bot.process.pid}) already runs on the data folder "
            f"{bot.data_dir}: stop it first, or give this one its own LIVEMEMORY_DATA_DIR"
        ], argv
    twitch_app = {
        "LIVEMEMORY_TWITCH__CLIENT_ID": "app",
        "LIVEMEMORY_TWITCH__CLIENT_SECRET": "secret",
        "LIVEMEMORY_TWITCH__CHANNELS": '["chan"]',
    }
    web = cli.run("bot", "web", env={**env, **twitch_app}, cwd=tmp_path)
    assert web.code == 1
    assert web.err.splitlines() == [
        f"error: a bot (pid {bot.process.pid}) holds the data folder {bot.data_dir}: serve the "
        "dashboard from it (python -m bot run --web, or console --web), or set QDRANT_URL to "
        "run it on its own"
    ]
    held = control.path(bot.data_dir)
    real = held.read_text()
    held.write_text(json.dumps({**json.loads(real), "token": "guessed"}))
    try:
        refused = bot.admin("audit")
    finally:
        held.write_text(real)
    assert (refused.code, refused.out) == (1, "")
    assert refused.err.splitlines() == [
        f"error: the bot (pid {bot.process.pid}) refused the command: wrong or missing token"
    ]


async def _found_nowhere(data_dir: Path, secret: str) -> None:
    """The forget-everywhere scan over the embedded stores the bot left (``tests.scan``)."""
    settings = conftest.IsolatedSettings(data_dir=data_dir, memory={"embedder": "offline"})
    async with migrate.open_database(settings) as db:
        assert await scan.postgres_hits(db, secret) == []
    assert _file_hits(data_dir, secret) == []


def _file_hits(data_dir: Path, secret: str) -> list[str]:
    """The embedded Postgres's own files are read through SQL (its pages keep dead rows until a
    vacuum); everything else in the folder — Qdrant's storage, the ingest spool — byte by byte."""
    hits = []
    for child in data_dir.iterdir():
        if child.is_dir() and child.name != "postgres":
            hits += scan.file_hits(child, secret)
        elif child.is_file() and secret.encode() in child.read_bytes():
            hits.append(str(child))
    return hits


def test_a_stale_control_file_is_noted_and_the_command_opens_the_stores(tmp_path: Path) -> None:
    """The bot died without removing its control file: the admin command says so in one line,
    removes it and runs on the stores itself."""
    env = live_bot.embedded_env(tmp_path)
    data_dir = Path(env["LIVEMEMORY_DATA_DIR"])
    dead_pid = _exited_pid(tmp_path)
    stale = control.Control(
        pid=dead_pid, host=control.LOOPBACK, port=dashboard_helpers.free_port(), token="t"
    )
    path = control.write(data_dir, stale)
    result = cli.run("memory.admin", "audit", env=env, cwd=tmp_path)
    assert result.code == 0, result
    assert (
        f"note: {path} names a bot (pid {dead_pid}) that is no longer running: removed it, "
        "opening the stores"
    ) in result.err.splitlines()
    assert result.out == "no audit rows\n" and not path.exists()
    assert live_bot.postgres_of(data_dir) is None  # the server it started stopped at its exit


def _exited_pid(cwd: Path) -> int:
    """The pid of a process that has run and exited."""
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"], cwd=cwd)
    child.wait()
    assert not control.pid_alive(child.pid) or child.pid == os.getpid()
    return child.pid
