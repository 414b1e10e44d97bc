"""The embedded store at one audience size: start-up, ``inspect``, first memory, memory stage, disk.

    .venv/bin/python scripts/bench_store.py --viewers 1000 --memories 100 [--json out.json]

Runs ``memory.eval.scale``'s pieces (``build_audience``, ``startup_and_inspect``, ``memory_stage``)
in one temporary data folder and adds the store's size on disk. It imports whatever checkout
``PYTHONPATH`` names, so the previous store is measured the same way from a worktree of an older
commit (issue 21: ``git worktree add --detach /tmp/old 0595cdf``, then
``PYTHONPATH=/tmp/old .venv/bin/python scripts/bench_store.py …``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from memory.eval import harness, scale


def disk_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


async def measure(viewers: int, memories: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="livememory-store-") as tmp:
        data_dir = Path(tmp)
        settings = harness.eval_settings(data_dir)
        row: dict[str, Any] = {"viewers": viewers, "memories_per_viewer": memories}
        row |= await scale.build_audience(settings, viewers, memories)
        store = next(p for p in (data_dir / "qdrant-edge", data_dir / "qdrant") if p.is_dir())
        row["store"] = store.name
        row["disk_mb"] = disk_mb(store)
        row |= await asyncio.to_thread(scale.startup_and_inspect, data_dir, viewers)
        row["memory_stage_ms"] = await scale.memory_stage(settings, viewers)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--viewers", type=int, default=1000)
    parser.add_argument("--memories", type=int, default=100)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    row = asyncio.run(measure(args.viewers, args.memories))
    text = json.dumps(row, indent=1)
    if args.json is not None:
        args.json.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
