"""Benchmark of ``memory.admin reembed``'s engine on the embedded Qdrant (prints figures).

    .venv/bin/python scripts/bench_reembed.py [--spaces 100] [--per-space 50]

Fills ``--spaces`` viewer spaces with ``--per-space`` memories each (offline embedder, dim 384) in a
temporary data folder, then times: a full rebuild for another embedder (offline, dim 256); the same
rebuild stopped half-way by a budget and resumed (what the resumed run costs against the half it has
left); and the plan of an up-to-date store (what a no-op run costs).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from pathlib import Path

from config.settings import Settings
from memory.adapters import qdrant, qdrant_reembed
from memory.spaces import embedders, records


def memory(space: str, n: int) -> records.MemoryRecord:
    return records.MemoryRecord(
        id=str(uuid.uuid4()),
        space=space,
        kind=records.MemoryKind.PERSONAL,
        text=f"memory number {n}: I like playing chess on sundays with my cat {n % 7}",
        user_id=space.partition(":")[2],
        login=f"viewer{space}",
    )


async def fill(settings: Settings, spaces: int, per_space: int) -> None:
    async with await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder()) as opened:
        for s in range(spaces):
            space = f"viewer:{1000 + s}"
            await opened.upsert([memory(space, n) for n in range(per_space)])


async def rebuild(settings: Settings, budget: int | None = None) -> tuple[int, float]:
    start = time.perf_counter()
    embedded = 0
    async with qdrant_reembed.open_reembedder(settings, embedders.OfflineHashEmbedder(256)) as job:
        for task in await job.plan(None):
            left = None if budget is None else budget - embedded
            count, finished = await job.run(task, budget=left)
            embedded += count
            if not finished:
                break
        await job.finish()
    return embedded, time.perf_counter() - start


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spaces", type=int, default=100)
    parser.add_argument("--per-space", type=int, default=50)
    args = parser.parse_args()
    total = args.spaces * args.per_space
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(data_dir=Path(folder) / "a")
        await fill(settings, args.spaces, args.per_space)
        embedded, seconds = await rebuild(settings)
        print(
            f"full rebuild: {embedded} memories in {args.spaces} collections, {seconds:.2f} s "
            f"({embedded / seconds:.0f} memories/s)"
        )

        settings = Settings(data_dir=Path(folder) / "b")
        await fill(settings, args.spaces, args.per_space)
        half, first = await rebuild(settings, budget=total // 2)
        rest, second = await rebuild(settings)
        print(
            f"interrupted at {half} then resumed: the resumed run embedded {rest} "
            f"(total {half + rest} of {total}), {first:.2f} s + {second:.2f} s"
        )
        start = time.perf_counter()
        async with qdrant_reembed.open_reembedder(
            settings, embedders.OfflineHashEmbedder(256)
        ) as job:
            assert await job.plan(None) == []
        print(
            f"plan of an up-to-date store ({args.spaces} collections): "
            f"{time.perf_counter() - start:.2f} s"
        )


if __name__ == "__main__":
    asyncio.run(main())
