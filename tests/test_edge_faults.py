"""The embedded store (Qdrant Edge) under faults: a worker killed mid-consolidation, a second process.

Run as a user runs them (subprocesses, the embedded defaults: Qdrant Edge in the data folder, no
Redis); the worker is killed with SIGKILL by the PID this test started.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import asyncpg

from memory.adapters import qdrant
from memory.spaces import embedders
from tests import cli
from tests.conftest import IsolatedSettings

if TYPE_CHECKING:
    from pathlib import Path

T0 = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)
FACTS = ["I live in {}", "my cat is called {}", "I work as a {} designer", "I play the {}"]
WORDS = ["Turin", "Miso", "graphic", "bass", "Oslo", "Pepe", "sound", "drums"]


#: the fact each viewer states in answer to the viewer before them (a reply: its vector is made
#: with the question)
ASKED = {2: "what do you do?"}


def stream(path: Path, viewers: int = 24) -> Path:
    """Chat of ``viewers`` viewers, each stating four things, a batch window apart; one of them in
    answer to the previous viewer's question (``ASKED``)."""
    lines: list[dict[str, object]] = []

    def say(viewer: int, text: str) -> None:
        n = len(lines) + 1
        lines.append({
            "ts": (T0 + timedelta(seconds=20 * n)).isoformat(),
            "stream": "faults-1",
            "id": f"m{n}",
            "user_id": str(2000 + viewer),
            "login": f"viewer{viewer}",
            "name": f"Viewer{viewer}",
            "badges": [],
            "text": text,
        })  # fmt: skip

    for round_ in range(len(FACTS)):
        for viewer in range(viewers):
            if round_ in ASKED:
                say((viewer - 1) % viewers, f"@viewer{viewer} {ASKED[round_]}")
            say(viewer, FACTS[round_].format(WORDS[(viewer + round_) % len(WORDS)]))
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def user_env(database_url: str, data_dir: Path) -> dict[str, str]:
    return {
        "DATABASE_URL": database_url,
        "LIVEMEMORY_DATA_DIR": str(data_dir),
        "OLLAMA_HOST": "http://127.0.0.1:9",
        "LIVEMEMORY_MEMORY__EMBEDDER": "offline",
        "LIVEMEMORY_WORKER__IN_PROCESS": "false",
        "LIVEMEMORY_WORKER__BACKOFF_BASE_SECONDS": "0",
    }


async def jobs(database_url: str) -> tuple[int, int]:
    """(jobs done, jobs in all)."""
    conn = await asyncpg.connect(database_url)
    try:
        row = await conn.fetchrow(
            "SELECT count(*) FILTER (WHERE status = 'succeeded') AS done, count(*) AS total FROM jobs"
        )
    finally:
        await conn.close()
    assert row is not None
    return int(row["done"]), int(row["total"])


async def sql(database_url: str, query: str) -> None:
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute(query)
    finally:
        await conn.close()


async def memories(database_url: str, data_dir: Path) -> dict[str, list[str]]:
    """Space → what each memory's vector is made of (its text, after the question it answers)."""
    settings = IsolatedSettings(database_url=database_url, data_dir=data_dir)
    async with await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder()) as opened:
        return {
            s: sorted(r.dense_text for r in await opened.list(s)) for s in await opened.spaces()
        }


def worker(env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "memory.worker", "--until-empty", "--name", "faults-w"],
        env={**os.environ, "PYTHONPATH": str(cli.ROOT), **env},
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


async def test_a_worker_killed_mid_consolidation_loses_no_memory(
    database_url: str, tmp_path: Path
) -> None:
    """A clean run (the replay consolidates every turn), then the same consolidation jobs run
    again over an empty store by a worker killed in the middle and started again: the same
    memories, space by space."""
    data_dir = tmp_path / "data"
    env = user_env(database_url, data_dir)
    chat = stream(tmp_path / "chat.jsonl")
    result = await asyncio.to_thread(
        cli.run, "bot", "replay", str(chat), "--no-llm", env=env, cwd=tmp_path
    )
    assert result.code == 0, result.err
    clean = await memories(database_url, data_dir)
    assert sum(map(len, clean.values())) >= 50
    replies = [t for texts in clean.values() for t in texts if t.startswith(f"{ASKED[2]} I work")]
    assert len(replies) == 24  # every viewer's job, with the question it answers
    done, total = await jobs(database_url)
    assert done == total >= 50

    for kind in ("viewer", "stream"):  # every memory the jobs wrote gone (lore is loaded at start)
        shutil.rmtree(data_dir / "qdrant-edge" / f"lm_shared_{kind}")
    await sql(
        database_url,
        "UPDATE jobs SET status = 'todo', attempts = 0, scheduled_at = now(), worker_id = NULL,"
        " started_at = NULL, finished_at = NULL, last_error = NULL",
    )
    proc = worker(env, tmp_path)
    try:
        while True:  # polling the job table, not waiting for a guess
            if (await jobs(database_url))[0] >= 5 or proc.poll() is not None:
                break
            await asyncio.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    done_at_kill, _ = await jobs(database_url)
    assert 5 <= done_at_kill < total, "killed in the middle of consolidation"
    assert proc.returncode == -signal.SIGKILL

    # the same worker name takes its interrupted job back at once; the shard replays its WAL
    again = await asyncio.to_thread(
        cli.run, "memory.worker", "--until-empty", "--name", "faults-w", env=env, cwd=tmp_path
    )
    assert again.code == 0, again.err
    assert await jobs(database_url) == (total, total)
    assert await memories(database_url, data_dir) == clean


async def test_a_second_process_on_the_same_data_folder_gets_one_line(
    database_url: str, tmp_path: Path
) -> None:
    settings = IsolatedSettings(database_url=database_url, data_dir=tmp_path / "data")
    held = await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder())
    try:
        env = user_env(database_url, tmp_path / "data")
        result = await asyncio.to_thread(
            cli.run, "memory.admin", "inspect", "--viewer", "alice", env=env, cwd=tmp_path
        )
    finally:
        await held.close()
    assert result.code == 1
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and "in use by another process" in lines[0], result.err
    assert "Traceback" not in result.err
