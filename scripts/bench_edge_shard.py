"""One Qdrant Edge shard the way the shared layout uses it: build, load, the adapter's query.

    .venv/bin/python scripts/bench_edge_shard.py --points 1000000 --tenants 10000 [--cold]

Random 384-d vectors and sparse vectors, a keyword tenant index (``is_tenant``) and a datetime index
on ``said_at``; then ``load`` in the same process and 300 queries as ``QdrantSpaces.search`` sends
them (a dense and two sparse prefetches, filtered by a random tenant and "not superseded", fused by
RRF). ``--cold``: dense vectors on disk (``Memory.Cold``) instead of Edge's default (in RAM). Peak
RSS includes the build. Not a test: it prints figures (docs/evaluation.md, 'The embedded store').
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import statistics
import tempfile
import time
import uuid

import qdrant_edge as edge


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--tenants", type=int, default=1_000)
    parser.add_argument("--cold", action="store_true")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="edge-shard-")
    memory = edge.Memory.Cold if args.cold else None
    config = edge.EdgeConfig(
        vectors={"dense": edge.EdgeVectorParams(384, edge.Distance.Cosine, memory=memory)},
        sparse_vectors={"lexical": edge.EdgeSparseVectorParams(modifier=edge.Modifier.Idf)},
    )
    rng = random.Random(1)
    try:
        began = time.perf_counter()
        shard = edge.EdgeShard.create(folder, config)
        tenant = edge.KeywordIndexParams(is_tenant=True)
        shard.update(edge.UpdateOperation.create_field_index("tenant", tenant))
        said_at = edge.PayloadSchemaType.Datetime
        shard.update(edge.UpdateOperation.create_field_index("said_at", said_at))
        for first in range(0, args.points, 500):
            points = [
                edge.Point(
                    str(uuid.uuid4()),
                    {
                        "dense": [rng.random() - 0.5 for _ in range(384)],
                        "lexical": edge.SparseVector(sorted(rng.sample(range(5000), 6)), [1.0] * 6),
                    },
                    {
                        "tenant": f"viewer:{n % args.tenants}",
                        "text": "x" * 80,
                        "said_at": "2026-11-29T20:00:00+00:00",
                    },
                )
                for n in range(first, min(args.points, first + 500))
            ]
            shard.update(edge.UpdateOperation.upsert_points(points))
        shard.flush()
        shard.close()
        print(f"build {time.perf_counter() - began:.1f} s", flush=True)
        began = time.perf_counter()
        shard = edge.EdgeShard.load(folder)
        print(f"load {time.perf_counter() - began:.3f} s", flush=True)
        times = []
        for _ in range(300):
            where = edge.Filter(
                must=[
                    edge.FieldCondition(
                        "tenant", match=edge.MatchValue(f"viewer:{rng.randrange(args.tenants)}")
                    ),
                    edge.IsEmptyCondition("superseded_by"),
                ]
            )
            dense = edge.Query.Nearest([rng.random() - 0.5 for _ in range(384)], using="dense")
            words = edge.SparseVector(sorted(rng.sample(range(5000), 3)), [1.0] * 3)
            sparse = edge.Prefetch(
                20, query=edge.Query.Nearest(words, using="lexical"), filter=where
            )
            request = edge.QueryRequest(
                limit=20,
                prefetches=[edge.Prefetch(20, query=dense, filter=where), sparse, sparse],
                query=edge.Fusion.Rrf(k=2),
                with_payload=True,
            )
            started = time.perf_counter()
            shard.query(request)
            times.append((time.perf_counter() - started) * 1000)
        times.sort()
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"query p50 {statistics.median(times):.2f} ms, p95 {times[int(len(times) * 0.95)]:.2f}"
            f" ms, max {times[-1]:.2f} ms; peak RSS {rss:.0f} MB"
        )
        shard.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
