"""The cost of an embedder in the running bot: start-up, RSS, consolidation and a paced IRC replay.

    .venv/bin/python scripts/bench_embedders.py --embedder offline [--json out.json]
    .venv/bin/python scripts/bench_embedders.py --embedder e5 [--json out.json]

Run once per embedder, one after the other on the same machine: each run is its own process, so
its RSS is its own. Measured, in order:

* ``startup_s``: opening every service (embedded Postgres, Qdrant Edge, the embedder with its
  first embedding) in a fresh data folder, and the process's RSS right after (``rss_start_mb``);
* ``consolidation``: a synthetic stream replayed without consolidating, then the consolidation of
  every turn with 1 and with 2 jobs at a time (``memory.eval.bench.consolidation_throughput``);
* ``replay``: the busiest IRC hour paced at ``--speedup`` × real time, consolidating as it goes
  (``memory.eval.bench.replay_throughput``, first ``--limit`` messages): the memory stage's p50 /
  p95, the largest lag behind the chat's clock and whether it kept up (lag under 2 s);
* ``replay_workers``: the same replay with a background worker running ``--workers`` jobs at a
  time while the chat goes on, as a deployed bot's worker does: the queue's backlog (jobs waiting
  or running, and the age of the oldest waiting one, every 20 messages) and ``drain_s``, how long
  the queue took to empty after the last message;
* ``rss_peak_mb``: the process's peak RSS over the whole run.

``--parts`` measures some of these only (``--parts workers``: the worker replay alone).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

from memory import stopping
from memory.eval import REPO_ROOT, bench, harness

DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data"


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def _startup(embedder: str) -> dict[str, Any]:
    from memory import runtime

    with harness.temporary_data_dir("livememory-bench-") as tmp:
        settings = harness.eval_settings(tmp, embedder=embedder)
        began = time.perf_counter()
        async with runtime.lifespan(settings, no_llm=True) as services:
            await services.embedder.embed(["hello"], kind="query")
            seconds = time.perf_counter() - began
            name = services.embedder.name
            rss = _rss_mb()
    return {"embedder_name": name, "startup_s": seconds, "rss_start_mb": rss}


#: what a run measures (``--parts``), in this order
PARTS = ("startup", "consolidation", "replay", "workers")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    parts = set(args.parts.split(","))
    out: dict[str, Any] = {"embedder": args.embedder}
    if "startup" in parts:
        out |= await _startup(args.embedder)
    if "consolidation" in parts:
        out["consolidation"] = {
            str(jobs): await bench.consolidation_throughput(
                viewers=args.viewers, filler=args.filler, embedder=args.embedder, concurrency=jobs
            )
            for jobs in (1, 2)
        }
    replay = {"data_dir": args.data_dir, "hours": 1, "speedup": args.speedup, "limit": args.limit}
    if "replay" in parts:
        out["replay"] = await bench.replay_throughput(**replay, embedder=args.embedder)
    if "workers" in parts:
        out["replay_workers"] = await bench.replay_throughput(
            **replay, embedder=args.embedder, workers=args.workers
        )
    out["rss_peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--embedder", default="offline", choices=("offline", "e5"))
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--viewers", type=int, default=20)
    parser.add_argument("--filler", type=int, default=200)
    parser.add_argument("--speedup", type=float, default=10.0)
    parser.add_argument("--limit", type=int, default=600, help="IRC messages replayed")
    parser.add_argument(
        "--workers", type=int, default=2, help="jobs at a time of the replay's background worker"
    )
    parser.add_argument(
        "--parts",
        default=",".join(PARTS),
        help=f"what to measure, of {','.join(PARTS)} (workers: the IRC replay again, consolidated "
        "by a background worker instead of turn by turn)",
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    result = stopping.run_interrupted(run(args))
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
