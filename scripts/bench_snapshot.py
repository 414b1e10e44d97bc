"""Benchmark of one large embedded-Qdrant collection and its snapshot (prints figures).

    .venv/bin/python scripts/bench_snapshot.py [--points 20000]

Fills one space with ``--points`` memories (offline embedder, dim 384) in a temporary data folder,
then times: closing the store (it waits for the snapshot rebuild of the folder it wrote), opening
the folder from its snapshot, and opening it the usual way (every point loaded). A stream's episodes
are the large collection of a real channel: this is what start-up saves and shutdown pays for it.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from pathlib import Path

from memory import identity
from memory.adapters import qdrant, qdrant_snapshot
from memory.eval import harness
from memory.spaces import embedders, records

SPACE = identity.personal_key("1000")
BATCH = 1_000


def memory(n: int) -> records.MemoryRecord:
    return records.MemoryRecord(
        id=str(uuid.uuid4()),
        space=SPACE,
        kind=records.MemoryKind.PERSONAL,
        text=f"memory number {n}: I like playing chess on sundays with my cat {n % 7}",
        user_id="1000",
    )


async def main(points: int) -> None:
    with tempfile.TemporaryDirectory(prefix="livememory-bench-snapshot-") as tmp:
        settings = harness.eval_settings(Path(tmp))
        spaces = await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder())
        began = time.perf_counter()
        for first in range(0, points, BATCH):
            await spaces.upsert([memory(n) for n in range(first, min(points, first + BATCH))])
        print(f"filled {points:,} memories in {time.perf_counter() - began:.1f} s")
        folder = Path(tmp) / "qdrant" / "spaces" / spaces.collection(SPACE)
        began = time.perf_counter()
        await spaces.close()
        print(f"close, snapshot rebuilt: {time.perf_counter() - began:.2f} s")
        for snapshot, way in ((True, "from the snapshot"), (False, "the usual way")):
            began = time.perf_counter()
            local = qdrant_snapshot.open_folder(folder, snapshot=snapshot)
            print(f"open {way}: {time.perf_counter() - began:.2f} s")
            await local.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=20_000)
    asyncio.run(main(parser.parse_args().points))
