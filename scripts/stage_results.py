"""What the memory stage brings back over a built audience, to compare two checkouts.

    PYTHONPATH=<checkout> .venv/bin/python scripts/stage_results.py --data-dir /work/sc10k out.json

Runs ``scale.memory_stage``'s batches (``bench_retrieval.make_batches``, ``scale.STAGE_TURNS`` a
seed, seeds 1-5) through a fresh retriever each and writes, per batch, its items (source, memory
id, score, time said), its context block, each source's ids and the degraded sources as JSON: two
checkouts whose files are byte-identical recall the same. Not a test.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

from memory import stopping
from memory.adapters import qdrant
from memory.eval import bench_retrieval, harness, scale
from memory.recall import cache, planner, retrieval
from memory.spaces import embedders

SEEDS = (1, 2, 3, 4, 5)


async def results(data_dir: Path, viewers: int) -> list[dict[str, Any]]:
    settings = harness.eval_settings(data_dir)
    out: list[dict[str, Any]] = []
    spaces = await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder())
    async with spaces:
        await spaces.preload()
        profiles = bench_retrieval.MemoryProfiles([])
        plans = planner.Planner(settings, lore_entities=["Captain Nebula"])
        for seed in SEEDS:
            for batch in bench_retrieval.make_batches(
                scale.STAGE_TURNS, viewers, random.Random(seed)
            ):
                retriever = retrieval.build_retriever(
                    settings, spaces=spaces, profiles=profiles, cache=cache.InProcessCache()
                )
                found = await retriever.retrieve(plans.plan(batch, []), batch, [])
                out.append(
                    {
                        "items": [
                            [i.source, i.memory_id, round(i.score, 12), str(i.said_at)]
                            for i in found.items
                        ],
                        "block": found.block,
                        "sources": [
                            [o.source.key, [i.memory_id for i in o.items]] for o in found.outcomes
                        ],
                        "degraded": [d.reason for d in found.degraded],
                    }
                )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--viewers", type=int, default=10_000)
    args = parser.parse_args()
    found = stopping.run_interrupted(results(args.data_dir, args.viewers))
    args.out.write_text(json.dumps(found), encoding="utf-8")
    print(f"{len(found)} batches, {sum(len(b['items']) for b in found)} items → {args.out}")


if __name__ == "__main__":
    main()
