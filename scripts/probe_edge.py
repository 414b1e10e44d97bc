"""Two probes of the embedded store of a data folder built before.

    .venv/bin/python scripts/probe_edge.py gil --data-dir /work/sc10k
    .venv/bin/python scripts/probe_edge.py first-touch --data-dir /work/sc10k

``gil``: Edge calls of the viewer shard (a whole-shard query, a count, a facet, a scroll) run in
``asyncio.to_thread`` while a ticker on the event loop records its longest stall: a binding that
releases the GIL leaves the loop free, one that holds it stalls the loop for the whole call.
``first-touch``: the adapter's fused query (dense and sparse prefetches, filtered by tenant and "not
superseded", with payloads) for 60 random viewers, the first time and again, with the process's
major page faults (reads from disk: pages the OS no longer holds). Figures, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import statistics
import time
from pathlib import Path
from typing import Any

import qdrant_edge as edge

from memory import stopping
from memory.adapters import qdrant
from memory.eval import bench_retrieval, harness
from memory.spaces import embedders

VIEWERS = 60


async def gil(shard: Any, dim: int) -> None:
    dense = edge.Query.Nearest([1.0] + [0.0] * (dim - 1), using="dense")
    kind = edge.Filter(must=[edge.FieldCondition("kind", match=edge.MatchValue("personal"))])
    calls = {
        "query of the whole shard": (shard.query, edge.QueryRequest(limit=10, query=dense)),
        "count by kind": (shard.count, edge.CountRequest(exact=True, filter=kind)),
        "facet of the tenants": (shard.facet, edge.FacetRequest(key="tenant", limit=10**6)),
        "scroll of 5,000 payloads": (shard.scroll, edge.ScrollRequest(limit=5000)),
    }
    for name, (call, request) in calls.items():
        call(request)  # pages in memory: the call's own time
        with bench_retrieval.LoopStall() as stall:
            await asyncio.sleep(0)  # let the ticker start
            began = time.perf_counter()
            await asyncio.to_thread(call, request)
            took = (time.perf_counter() - began) * 1000
        print(f"{name}: {took:.0f} ms in a worker thread, the loop stalled {stall.worst:.0f} ms")


def first_touch(spaces: qdrant.QdrantSpaces, shard: Any) -> None:
    name = spaces.collection("viewer:0")
    encoder = spaces._collections.encoder(name)
    question = "what did i say about the weather"
    dense = embedders.OfflineHashEmbedder().vector(question)
    indices, values = encoder.query(question) if encoder else ([], [])

    def request(viewer: int) -> edge.QueryRequest:
        where = edge.Filter(
            must=[
                edge.FieldCondition("tenant", match=edge.MatchValue(f"viewer:u{viewer}")),
                edge.IsEmptyCondition("superseded_by"),
            ]
        )
        stages = [
            edge.Prefetch(limit=40, query=edge.Query.Nearest(dense, using="dense"), filter=where)
        ]
        sparse = edge.Query.Nearest(edge.SparseVector(indices, values), using="lexical")
        stages += [edge.Prefetch(limit=40, query=sparse, filter=where)] * 2
        fused: Any = edge.Fusion.Rrf(k=2)
        return edge.QueryRequest(limit=40, query=fused, prefetches=stages, with_payload=True)

    viewers = random.Random(time.time()).sample(range(10_000), VIEWERS)
    for label in ("first time", "again"):
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_majflt
        took = []
        for viewer in viewers:
            began = time.perf_counter()
            shard.query(request(viewer))
            took.append((time.perf_counter() - began) * 1000)
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_majflt - faults
        print(
            f"{label}: p50 {statistics.median(took):.2f} ms, max {max(took):.2f} ms, "
            f"{faults / VIEWERS:.1f} major page faults a query"
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("probe", choices=["gil", "first-touch"])
    parser.add_argument("--data-dir", type=Path, required=True)
    args = parser.parse_args()
    settings = harness.eval_settings(args.data_dir)
    spaces = await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder())
    async with spaces:
        await spaces.preload()
        engine = spaces.client.engine  # type: ignore[attr-defined]
        shard = engine._shards[spaces.collection("viewer:0")]
        if args.probe == "gil":
            await gil(shard, spaces.embedder.dim)
        else:
            first_touch(spaces, shard)


if __name__ == "__main__":
    stopping.run_interrupted(main())
