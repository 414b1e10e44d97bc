"""Benchmarks (figures, not tests): memory search latency vs size for both Qdrant layouts,
consolidation throughput, and replay throughput of the busiest IRC hours.

All on embedded defaults (Qdrant local mode in a temporary folder, embedded Postgres) with the
offline embedder. Sizes are capped so a full run stays around 20 minutes on 2 cores; what is skipped
is listed with the reason.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from memory import identity, models
from memory.adapters import qdrant
from memory.eval import harness, irc, metrics, synthetic, vocab
from memory.spaces import records

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

logger = logging.getLogger(__name__)

MEMORIES = (1_000, 10_000, 100_000)
VIEWERS = (10, 1_000, 10_000)
QUICK_MEMORIES = (1_000, 10_000)
QUICK_VIEWERS = (10, 1_000)
LAYOUTS = ("per_space", "shared")
#: viewers searched together in one simulated memory stage (the planner's default)
FAN_OUT = 3
UPSERT_BATCH = 512
#: Qdrant local mode held in memory: the same search code as on-disk local mode (which loads every
#: point into memory too) without the write persistence that makes loading 100k points take an hour
IN_MEMORY = ":memory:"


def skip_reason(layout: str, memories: int, viewers: int) -> str | None:
    if viewers > memories:
        return "more viewers than memories"
    if layout == "per_space" and viewers >= 10_000:
        return ("10,000 collections: local mode opens every collection in-process (and Qdrant "
                "advises against thousands of collections); the shared layout is the answer here")  # fmt: skip
    if layout == "shared" and memories >= 100_000 and viewers >= 10_000:
        return "local mode scans the filter in Python (~1 s a search at 100k points): measured at 10 and 1,000 viewers only"
    return None


_VALUES: dict[str, tuple[str, ...]] = {
    "job": vocab.JOBS, "city": vocab.CITIES, "pet": vocab.PETS, "hobby": vocab.HOBBIES,
}  # fmt: skip


def _texts(rng: random.Random, count: int) -> list[str]:
    out = []
    for _ in range(count):
        attr = rng.choice(vocab.ATTRIBUTES)
        template = rng.choice(vocab.STATEMENTS["en"][attr])
        value = rng.choice(_VALUES[attr])
        out.append(
            template.format(
                value=value, article=vocab.article(value), pet_name=rng.choice(vocab.PET_NAMES)
            )
        )
    return out


async def search_latency(
    layout: str,
    memories: int,
    viewers: int,
    *,
    queries: int = 50,
    seed: int = 0,
    location: str | None = IN_MEMORY,
) -> dict[str, Any]:
    """Fill ``memories`` personal memories over ``viewers`` viewers, then time memory stages: the
    personal spaces of ``FAN_OUT`` random viewers searched concurrently (what the retriever does)."""
    from memory.spaces import embedders

    rng = random.Random(seed)
    embedder = embedders.OfflineHashEmbedder()
    row: dict[str, Any] = {"layout": layout, "memories": memories, "viewers": viewers}
    with harness.temporary_data_dir("livememory-bench-") as tmp:
        settings = harness.eval_settings(tmp, overrides={"qdrant": {"layout": layout}})
        store = await qdrant.open_spaces(
            settings, embedder, location=location or str(tmp / "qdrant")
        )
        try:
            started = time.perf_counter()
            texts = _texts(rng, memories)
            now = datetime.now(UTC)
            for start in range(0, memories, UPSERT_BATCH):
                records = [
                    records.MemoryRecord(
                        id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                        space=identity.personal_key(str(10_000_000 + i % viewers)),
                        kind=records.MemoryKind.PERSONAL,
                        text=texts[i],
                        user_id=str(10_000_000 + i % viewers),
                        origin_message_ids=(f"bench-{i}",),
                        first_ts=now,
                        last_ts=now,
                    )
                    for i in range(start, min(start + UPSERT_BATCH, memories))
                ]
                await store.upsert(records)
            row["load_s"] = time.perf_counter() - started
            stage: list[float] = []
            for query in _texts(rng, queries):
                users = [str(10_000_000 + rng.randrange(viewers)) for _ in range(FAN_OUT)]
                began = time.perf_counter()
                await asyncio.gather(
                    *(store.search(identity.personal_key(u), query, limit=5) for u in users)
                )
                stage.append((time.perf_counter() - began) * 1000)
        finally:
            await store.close()
    summary = metrics.latency(stage)
    row.update(mean_ms=summary.mean, p50_ms=summary.p50, p95_ms=summary.p95, queries=len(stage))
    return row


async def latency_matrix(*, quick: bool, queries: int = 50) -> list[dict[str, Any]]:
    rows = []
    for memories in QUICK_MEMORIES if quick else MEMORIES:
        for viewers in QUICK_VIEWERS if quick else VIEWERS:
            for layout in LAYOUTS:
                reason = skip_reason(layout, memories, viewers)
                if reason:
                    rows.append(
                        {
                            "layout": layout,
                            "memories": memories,
                            "viewers": viewers,
                            "skipped": reason,
                        }
                    )
                    continue
                n = queries if memories < 100_000 else max(10, queries // 5)
                logger.info("bench: %s, %d memories, %d viewers", layout, memories, viewers)
                rows.append(await search_latency(layout, memories, viewers, queries=n))
    return rows


async def consolidation_throughput(
    *,
    viewers: int = 20,
    filler: int = 300,
    embedder: str = harness.DEFAULT_EMBEDDER,
    concurrency: int = 1,
) -> dict[str, Any]:
    """Replay a synthetic stream without consolidating, then time the consolidation of every turn
    (``concurrency`` jobs at a time, as that many workers would)."""
    from memory import runtime as services_module
    from memory import session

    stream = synthetic.generate(seed=3, viewers=viewers, filler=filler)
    chat = [e for e in stream.events if not e.text.startswith("!")]
    with harness.temporary_data_dir("livememory-bench-") as tmp:
        overrides = {"worker": {"concurrency": concurrency}}
        settings = harness.eval_settings(tmp, overrides=overrides, embedder=embedder)

        async def deliver(report: models.TurnReport) -> None:
            return None

        async with services_module.lifespan(settings, no_llm=True) as services:
            runner = session.Replay(services, deliver, commands=services.commands)
            for event in chat:  # no "!commands": they consolidate the turns before them
                await runner.feed(event)
            await runner.finish()
            started = time.perf_counter()
            await runner.consolidate_now()
            seconds = time.perf_counter() - started
    return {
        "messages": len(chat),
        "seconds": seconds,
        "messages_per_s": len(chat) / seconds if seconds else None,
    }


async def replay_throughput(
    data_dir: Path,
    *,
    hours: int = 1,
    speedup: float = 10.0,
    limit: int | None = None,
    embedder: str = harness.DEFAULT_EMBEDDER,
    workers: int = 0,
) -> list[dict[str, Any]]:
    """Replay the busiest IRC hours paced at ``speedup`` × real time; per-stage timings and lag.
    ``workers`` 0: each turn is consolidated before the next message (one job at a time, in the
    replay's own loop); N: a background worker runs N jobs at a time while the chat goes on, as a
    deployed bot's worker does, and the queue's backlog is sampled (``_backlog``)."""
    nicks = irc.Nicks()
    streams = irc.load(data_dir, split="dev", nicks=nicks) + irc.load(
        data_dir, split="test", nicks=nicks
    )
    by_stream = {events[0].stream: events for events in streams if events}
    out = []
    for hour in irc.busiest_hours(streams, hours):
        events = irc.window(by_stream[hour.stream], hour.start)[:limit]
        out.append(
            await _paced(events, speedup, embedder, workers)
            | {"stream": hour.stream, "start": hour.start.isoformat()}
        )
    return out


#: in a replay with background workers, the queue's backlog is read every this many messages
BACKLOG_EVERY = 20


async def _backlog(services: Any, elapsed: float) -> dict[str, float]:
    """The consolidation jobs waiting or running, and the age of the oldest waiting one."""
    from memory.consolidate import queue_status

    status = await queue_status.status(services.db)
    return {
        "t_s": elapsed,
        "jobs": status.counts.get("todo", 0) + status.counts.get("doing", 0),
        "oldest_s": status.oldest_todo_seconds or 0.0,
    }


async def _paced(
    events: Sequence[models.ChatEvent],
    speedup: float,
    embedder: str = harness.DEFAULT_EMBEDDER,
    workers: int = 0,
) -> dict[str, Any]:
    from memory import runtime as services_module
    from memory import session

    stages: dict[str, list[float]] = {
        "ingest": [],
        "memory": [],
        "consolidation": [],
        "event_total": [],
    }

    class Timed(session.Replay):
        async def store(self, event: models.ChatEvent) -> bool:
            began = time.perf_counter()
            try:
                return await super().store(event)
            finally:
                stages["ingest"].append((time.perf_counter() - began) * 1000)

        async def consolidate_now(self) -> None:
            began = time.perf_counter()
            await super().consolidate_now()
            stages["consolidation"].append((time.perf_counter() - began) * 1000)

    async def deliver(report: models.TurnReport) -> None:
        if "memory_total" in report.timings_ms:
            stages["memory"].append(report.timings_ms["memory_total"])

    lags: list[float] = []
    backlog: list[dict[str, float]] = []
    drain_s: float | None = None
    by_worker = 0
    left = 0.0
    overrides = {"worker": {"concurrency": workers}} if workers else None
    with harness.temporary_data_dir("livememory-bench-") as tmp:
        settings = harness.eval_settings(tmp, overrides=overrides, embedder=embedder)
        async with services_module.lifespan(settings, no_llm=True) as services:
            runner = Timed(services, deliver, commands=services.commands)
            stop = asyncio.Event()
            worker = asyncio.create_task(services.worker.run(stop)) if workers else None
            first, wall = events[0].ts, time.perf_counter()
            try:
                for index, event in enumerate(events):
                    due = wall + (event.ts - first) / timedelta(seconds=1) / speedup
                    if (ahead := due - time.perf_counter()) > 0:
                        await asyncio.sleep(ahead)  # pacing the chat, not waiting for work
                    began = time.perf_counter()
                    await runner.feed(event)
                    if worker is None:
                        await runner.consolidate_now()
                    elif index % BACKLOG_EVERY == 0:
                        backlog.append(await _backlog(services, time.perf_counter() - wall))
                    stages["event_total"].append((time.perf_counter() - began) * 1000)
                    lags.append(max(0.0, time.perf_counter() - due))
                await runner.finish()
                total = time.perf_counter() - wall
            finally:
                stop.set()  # the worker finishes its jobs and gives the rest back
                if worker is not None:
                    await worker
            if worker is not None:
                by_worker = sum(services.worker.counts.values())
                await runner.consolidate_now()  # what the worker left when told to stop
                drain_s = time.perf_counter() - wall - total
                left = (await _backlog(services, drain_s))["jobs"]
    span = (events[-1].ts - first) / timedelta(seconds=1)
    queue: dict[str, Any] = {}
    if workers:
        queue = {
            "workers": workers,
            "backlog": backlog,
            "max_backlog_jobs": max((b["jobs"] for b in backlog), default=0),
            "max_oldest_job_s": max((b["oldest_s"] for b in backlog), default=0.0),
            "drain_s": drain_s,
            "jobs_by_worker": by_worker,
            "jobs_left": left,
        }
    return queue | {
        "messages": len(events),
        "span_s": span,
        "speedup": speedup,
        "wall_s": total,
        "max_lag_s": max(lags, default=0.0),
        "kept_up": max(lags, default=0.0) < 2.0,
        "stages_ms": {name: metrics.latency(values).to_json() for name, values in stages.items()},
    }


def text_report(bench: dict[str, Any]) -> str:
    """Markdown tables of a bench run."""
    from memory.eval import report

    parts = []
    if bench.get("latency"):
        rows = [[r["layout"], r["memories"], r["viewers"], r.get("load_s"), r.get("p50_ms"), r.get("p95_ms"),
                 r.get("skipped", "")] for r in bench["latency"]]  # fmt: skip
        parts += ["Memory stage (3 personal spaces searched concurrently, limit 5):", "",
                  report.table(["layout", "memories", "viewers", "load s", "p50 ms", "p95 ms", "skipped"], rows), ""]  # fmt: skip
    if bench.get("consolidation"):
        c = bench["consolidation"]
        parts += [f"Consolidation: {c['messages']} messages in {report.fmt(c['seconds'])} s = "
                  f"{report.fmt(c['messages_per_s'], 1)} messages/s (offline embedder).", ""]  # fmt: skip
    for r in bench.get("replay", []):
        stage_rows = [
            [name, s["count"], s["mean"], s["p50"], s["p95"]] for name, s in r["stages_ms"].items()
        ]
        parts += [f"Replay of {r['stream']} from {r['start']} ({r['messages']} messages over {r['span_s']:.0f} s) "
                  f"at {r['speedup']:.0f}× real time: wall {r['wall_s']:.1f} s, max lag {r['max_lag_s']:.2f} s, "
                  f"kept up: {'yes' if r['kept_up'] else 'no'}.", "",
                  report.table(["stage", "count", "mean ms", "p50 ms", "p95 ms"], stage_rows), ""]  # fmt: skip
    return "\n".join(parts)


async def run(data_dir: Path, *, quick: bool) -> dict[str, Any]:
    bench: dict[str, Any] = {
        "latency": await latency_matrix(quick=quick, queries=20 if quick else 50)
    }
    bench["consolidation"] = await consolidation_throughput(
        viewers=12 if quick else 30, filler=100 if quick else 400
    )
    if irc.files(data_dir, "dev"):
        bench["replay"] = await replay_throughput(
            data_dir, hours=1 if quick else 2, limit=120 if quick else None
        )
    else:
        bench["replay_skipped"] = f"no IRC data in {data_dir}"
    return bench
