"""The embedded store at one audience size: start-up, ``inspect``, first memory, memory stage, disk.

    .venv/bin/python scripts/bench_store.py --viewers 1000 --memories 100 [--json out.json]
    .venv/bin/python scripts/bench_store.py --viewers 10000 --data-dir /work/sc10k [--json …]

Runs ``memory.eval.scale``'s pieces (``build_audience``, ``startup_and_inspect``, ``memory_stage``)
in one temporary data folder and adds the store's size on disk. ``--data-dir``: an audience built
before (``scale.build_audience`` into that folder) is measured instead, without building (a new
viewer's first memory is then ``scale.first_memory`` with viewers after the audience); its store's
files are read once first, so that every run starts with them in the page cache (issue 21 session
9: on this project's VMs DAMON evicts most of a freshly written store within minutes; a run on
evicted files measures the disk). The load average (``os.getloadavg``) is recorded before and
after, and ``cpu_probe_ms`` — the best of five runs of one fixed pure-Python loop — so that runs
on machines of different speeds can be told apart (session 9's machine ran the same code 2-2.5x
slower than session 8's). It imports whatever checkout
``PYTHONPATH`` names, so the previous store is measured the same way from an export of an older
commit (issue 21: ``git archive 86a3b69 | tar -x -C /work/prev``, then
``PYTHONPATH=/work/prev .venv/bin/python scripts/bench_store.py …``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from memory.eval import harness, scale


def cpu_probe_ms() -> float:
    """The best of five timings of one fixed loop: this machine's speed, for comparing runs."""
    best = float("inf")
    for _ in range(5):
        began = time.perf_counter()
        sum(i * i for i in range(1_000_000))
        best = min(best, time.perf_counter() - began)
    return best * 1000


def read_files(folder: Path) -> int:
    """Read every file under ``folder`` once (into the page cache); returns the bytes read."""
    total = 0
    for path in folder.rglob("*"):
        if path.is_file():
            with path.open("rb") as handle:
                while chunk := handle.read(1 << 20):
                    total += len(chunk)
    return total


def disk_mb(folder: Path) -> float:
    """Allocated, as ``du`` counts it (Edge preallocates sparse files: their size overstates)."""
    return sum(p.stat().st_blocks * 512 for p in folder.rglob("*") if p.is_file()) / 1e6


async def measure_folder(data_dir: Path, viewers: int, row: dict[str, Any]) -> dict[str, Any]:
    settings = harness.eval_settings(data_dir)
    store = next(p for p in (data_dir / "qdrant-edge", data_dir / "qdrant") if p.is_dir())
    row["store"] = store.name
    row["disk_mb"] = disk_mb(store)
    row |= await asyncio.to_thread(scale.startup_and_inspect, data_dir, viewers)
    row["memory_stage_ms"] = await scale.memory_stage(settings, viewers)
    return row


async def measure(viewers: int, memories: int, data_dir: Path | None) -> dict[str, Any]:
    row: dict[str, Any] = {"viewers": viewers, "memories_per_viewer": memories}
    row["load_before"] = os.getloadavg()
    row["cpu_probe_ms"] = cpu_probe_ms()
    began = time.perf_counter()
    if data_dir is not None:
        row["cached_mb"] = await asyncio.to_thread(read_files, data_dir) / 1e6
        row = await measure_folder(data_dir, viewers, row)
        # after the rest: these viewers are then in the folder (numbered past any earlier run's)
        first = viewers + 1000 * int(time.time() % 1000)
        row["first_memory_ms"] = await scale.first_memory(harness.eval_settings(data_dir), first)
    else:
        with tempfile.TemporaryDirectory(prefix="livememory-store-") as tmp:
            settings = harness.eval_settings(Path(tmp))
            row |= await scale.build_audience(settings, viewers, memories)
            row = await measure_folder(Path(tmp), viewers, row)
    row["seconds"] = time.perf_counter() - began
    row["load_after"] = os.getloadavg()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--viewers", type=int, default=1000)
    parser.add_argument("--memories", type=int, default=100)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    row = asyncio.run(measure(args.viewers, args.memories, args.data_dir))
    text = json.dumps(row, indent=1)
    if args.json is not None:
        args.json.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
