"""Where a cold memory stage's time goes, on an audience built before (``scale.build_audience``).

    .venv/bin/python scripts/stage_split.py --data-dir /work/sc10k [--viewers 10000] [--passes 4]

Runs ``memory.eval.scale``'s cold passes (a fresh cache per batch, the store opened and preloaded
once, the store's pages held as ``bench_store`` holds them) and times, around the calls, the
engine's query (``EdgeEngine.query_candidates``), each memory-space search (``QdrantSpaces.search``)
and the context assembly (``context.assemble``). Prints per pass the stage's mean and p95 and what
each part takes a batch; then the slowest tenth of the batches after the first pass, each with its
parts and its sources. Wrappers only time: every call runs as it does in the bot. Not a test:
figures only (docs/evaluation.md, 'The embedded store').
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import functools
import random
import statistics
import time
from pathlib import Path
from typing import Any

from bench_store import hold_pages

from memory import stopping
from memory.adapters import qdrant, qdrant_edge
from memory.eval import bench_retrieval, harness, scale
from memory.recall import cache, context, planner, retrieval
from memory.spaces import embedders

#: seconds and calls of each timed part, since the counters were last read
SPENT: dict[str, float] = collections.defaultdict(float)
CALLS: collections.Counter[str] = collections.Counter()


def _timed(owner: Any, name: str, part: str) -> None:
    call = getattr(owner, name)
    if asyncio.iscoroutinefunction(call):

        @functools.wraps(call)
        async def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return await call(*args, **kwargs)
            finally:
                SPENT[part] += time.perf_counter() - began
                CALLS[part] += 1

        setattr(owner, name, timed)
        return

    @functools.wraps(call)
    def timed_sync(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            SPENT[part] += time.perf_counter() - began
            CALLS[part] += 1

    setattr(owner, name, timed_sync)


def _parts(spent: dict[str, float], calls: dict[str, int]) -> str:
    return ", ".join(f"{k} {1000 * v:.2f} ms / {calls[k]}" for k, v in sorted(spent.items()))


async def split(data_dir: Path, viewers: int, passes: int) -> None:
    _timed(qdrant_edge.EdgeEngine, "query_candidates", "engine")
    _timed(qdrant.QdrantSpaces, "search", "search")
    _timed(context, "assemble", "assemble")
    settings = harness.eval_settings(data_dir)
    spaces = await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder())
    batches_seen: list[tuple[float, dict[str, float], dict[str, int], dict[str, float]]] = []
    async with spaces:
        await spaces.preload()
        profiles = bench_retrieval.MemoryProfiles([])
        plans = planner.Planner(settings, lore_entities=["Captain Nebula"])
        batches = bench_retrieval.make_batches(scale.STAGE_TURNS, viewers, random.Random(1))
        for number in range(passes):
            totals = []
            for batch in batches:
                retriever = retrieval.build_retriever(
                    settings, spaces=spaces, profiles=profiles, cache=cache.InProcessCache()
                )
                SPENT.clear()
                CALLS.clear()
                result = await retriever.retrieve(plans.plan(batch, []), batch, [])
                total = result.timings_ms["memory_total"]
                totals.append(total)
                if number:
                    batches_seen.append((total, dict(SPENT), dict(CALLS), result.timings_ms))
            ordered = sorted(totals)
            print(
                f"pass {number}: mean {statistics.mean(totals):.2f} ms, "
                f"p95 {ordered[int(0.95 * len(ordered))]:.2f} ms",
                flush=True,
            )
    batches_seen.sort(key=lambda seen: seen[0])
    slowest = batches_seen[int(0.9 * len(batches_seen)) :]
    print(f"slowest tenth after the first pass ({len(slowest)} batches):")
    for total, spent, calls, timings in slowest:
        sources = ", ".join(k for k in timings if k != "memory_total")
        print(f"  {total:.2f} ms | {_parts(spent, calls)} | {sources}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--viewers", type=int, default=10_000)
    parser.add_argument("--passes", type=int, default=4)
    args = parser.parse_args()
    with hold_pages(args.data_dir):
        stopping.run_interrupted(split(args.data_dir, args.viewers, args.passes))


if __name__ == "__main__":
    main()
