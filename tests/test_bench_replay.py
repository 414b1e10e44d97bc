"""The paced IRC replay of ``memory.eval.bench`` with a background worker: the chat goes on while the
worker consolidates, the queue's backlog is read, and nothing is left in the queue (figures are not
checked: speed is measured by the benchmark, never in a test)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.eval import REPO_ROOT, bench, irc


def _data_dir() -> Path:
    for candidate in (REPO_ROOT.parent / "shared" / "data", Path("/work/shared/data")):
        if irc.files(candidate, "dev"):
            return candidate
    pytest.skip("the IRC data is not in ../shared/data or /work/shared/data")


async def test_a_replay_with_a_background_worker_consolidates_as_the_chat_goes_on() -> None:
    # 40 messages paced at 1,000x real time: well under a second of chat
    [run] = await bench.replay_throughput(_data_dir(), speedup=1000, limit=40, workers=2)
    assert run["messages"] == 40 and run["workers"] == 2
    assert len(run["backlog"]) == 2  # read every 20 messages
    assert run["jobs_left"] == 0  # the worker, then the drain, consolidated every turn
    assert run["drain_s"] is not None
    assert run["stages_ms"]["memory"]["count"] > 0


async def test_a_replay_without_workers_consolidates_turn_by_turn() -> None:
    [run] = await bench.replay_throughput(_data_dir(), speedup=1000, limit=20)
    assert "workers" not in run and "backlog" not in run
    assert run["stages_ms"]["consolidation"]["count"] == 20
