"""The embedded store at one audience size: start-up, ``inspect``, first memory, memory stage, disk.

    .venv/bin/python scripts/bench_store.py --viewers 1000 --memories 100 [--json out.json]
    .venv/bin/python scripts/bench_store.py --viewers 10000 --data-dir /work/sc10k [--json …]

Runs ``memory.eval.scale``'s pieces (``build_audience``, ``startup_and_inspect``, ``memory_stage``)
in one temporary data folder and adds the store's size on disk. ``--data-dir``: an audience built
before (``scale.build_audience`` into that folder) is measured instead, without building (a new
viewer's first memory is then ``scale.first_memory`` with viewers after the audience); its store's
files are mapped and every page touched first, and stay mapped for the whole run
(``hold_pages``), so that every run finds them in the page cache, as on a PC whose memory holds
the store (a VM may run DAMON with a scheme that pages out file pages no process maps once
they are ~60 s old; reading the files once kept them only for the first minute of a run, so
later parts measured the disk: cold memory
stage 19.7 / 30.8 ms p50 / p95 against 7.5-8.6 / 12-13.7 ms with the pages held, same code and
folder). ``--no-hold`` measures without. The load average (``os.getloadavg``) is recorded before and
after, and ``cpu_probe_ms`` — the best of five runs of one fixed pure-Python loop — so that runs
on machines of different speeds can be told apart (the same code has run 2-2.5x slower on one
day's VM than on another's). It imports whatever checkout
``PYTHONPATH`` names, so the previous store is measured the same way from an export of an older
commit (e.g. ``git archive 86a3b69 | tar -x -C /work/prev``, then
``PYTHONPATH=/work/prev .venv/bin/python scripts/bench_store.py …``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import mmap
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory import stopping
from memory.eval import blocks, harness, report, scale

if TYPE_CHECKING:
    from collections.abc import Iterator


def cpu_probe_ms() -> float:
    """The best of five timings of one fixed loop: this machine's speed, for comparing runs."""
    best = float("inf")
    for _ in range(5):
        began = time.perf_counter()
        sum(i * i for i in range(1_000_000))
        best = min(best, time.perf_counter() - began)
    return best * 1000


@contextlib.contextmanager
def hold_pages(folder: Path, hold: bool = True) -> Iterator[int]:
    """Map every file under ``folder`` and touch each page, keeping the mappings until the block
    ends (mapped pages are not paged out, module docstring); yields the bytes held."""
    maps: list[mmap.mmap] = []
    try:
        for path in folder.rglob("*") if hold else ():
            if path.is_file() and path.stat().st_size:
                with path.open("rb") as handle:
                    mapped = mmap.mmap(handle.fileno(), 0, prot=mmap.PROT_READ)
                maps.append(mapped)
                for offset in range(0, len(mapped), mmap.PAGESIZE):
                    mapped[offset]
        yield sum(len(m) for m in maps)
    finally:
        for mapped in maps:
            mapped.close()


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


async def measure(
    viewers: int, memories: int, data_dir: Path | None, hold: bool = True
) -> dict[str, Any]:
    row: dict[str, Any] = {"viewers": viewers, "memories_per_viewer": memories}
    row["load_before"] = os.getloadavg()
    row["pages_held"] = hold
    row["cpu_probe_ms"] = cpu_probe_ms()
    began = time.perf_counter()
    if data_dir is not None:
        with hold_pages(data_dir, hold) as held:
            row["held_mb"] = held / 1e6
            row = await measure_folder(data_dir, viewers, row)
        # after the rest: these viewers are then in the folder (numbered past any earlier run's)
        first = viewers + 1000 * int(time.time() % 1000)
        row["first_memory_ms"] = await scale.first_memory(harness.eval_settings(data_dir), first)
    else:
        with harness.temporary_data_dir("livememory-store-") as tmp:
            settings = harness.eval_settings(tmp)
            row |= await scale.build_audience(settings, viewers, memories)
            with hold_pages(tmp, hold) as held:
                row["held_mb"] = held / 1e6
                row = await measure_folder(tmp, viewers, row)
    row["seconds"] = time.perf_counter() - began
    row["load_after"] = os.getloadavg()
    return row


def command_line(argv: list[str]) -> str:
    """The command that reproduces the run: its arguments without ``--json FILE``."""
    shown, skip = [], False
    for word in argv:
        if skip:
            skip = False
        elif word == "--json":
            skip = True
        elif not word.startswith("--json="):
            shown.append(word)
    return " ".join(["python scripts/bench_store.py", *shown])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--viewers", type=int, default=1000)
    parser.add_argument("--memories", type=int, default=100)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--no-hold", action="store_true", help="do not keep the store's pages mapped"
    )
    args = parser.parse_args()
    row = stopping.run_interrupted(
        measure(args.viewers, args.memories, args.data_dir, not args.no_hold)
    )
    row["meta"] = {  # for ``python -m memory.eval report --from`` (the "store" block)
        "command": command_line(sys.argv[1:]),
        "commit": blocks.commit(),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "wall_seconds": round(row["seconds"], 1),
        "hardware": report.hardware(),
    }
    text = json.dumps(row, indent=1)
    if args.json is not None:
        args.json.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
