"""Benchmark of the memory stage (planner → parallel retrieval → assembly) on embedded defaults.

    python -m memory.eval.bench_retrieval [--sizes 1000 10000] [--turns 200] [--layout per_space shared]

Stores N memories in embedded Qdrant (local mode; in memory, or ``--on-disk`` in a temporary
folder: the same search engine, persistence only slows loading) with the offline embedder: 60% personal statements over N/50 viewers, 30% episodic turns of one stream, 10% lore.
Then it runs synthetic chat batches through the real ``Planner`` and ``Retriever`` and prints the
p50/p95/max of ``memory_total`` with a cold cache (a fresh cache every turn) and a warm one (the same
turns again, everything cached), and the share of turns over the budget.

Profiles come from an in-process reader built with ``profile.facts_from_memory`` (the Postgres read
is one indexed query; this measures the Qdrant side). Not a test: it prints figures.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from config import settings as settings_module
from memory import identity, models
from memory.adapters import qdrant
from memory.consolidate import profile
from memory.recall import cache, planner, retrieval
from memory.spaces import embedders
from memory.spaces import records as memory_records

if TYPE_CHECKING:
    from collections.abc import Sequence

STREAM = "bench"
T0 = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)
TOPICS = (
    "pizza", "guitar", "Turin", "Rome", "cats", "dogs", "chess", "Elden Ring", "Minecraft",
    "painting", "running", "physics", "coffee", "anime", "jazz", "Naples", "climbing", "sushi",
)  # fmt: skip
STATEMENTS = (
    "I work as a {t} teacher", "I love {t} so much", "I moved to {t} last year",
    "my favourite thing is {t}", "I have been into {t} since school", "lavoro con {t} da anni",
)  # fmt: skip
ASKS = (
    "do you remember what I told you about {t}?", "@livememory what do you think about {t}?",
    "what happened before with {t}?", "ti ricordi di me?", "who made you? is Captain Nebula real?",
    "hey {v} did you try {t}?", "I just started {t} today, any tips?",
)  # fmt: skip


class MemoryProfiles:
    """Profiles derived in process from the personal records (stand-in for the Postgres store)."""

    def __init__(self, records: Sequence[memory_records.MemoryRecord]) -> None:
        self._facts: dict[str, list[profile.ProfileFact]] = {}
        for record in records:
            if record.user_id and record.kind is memory_records.MemoryKind.PERSONAL:
                self._facts.setdefault(record.user_id, []).extend(profile.facts_from_memory(record))

    async def get(self, user_id: str) -> profile.Profile | None:
        facts = self._facts.get(user_id)
        return profile.Profile(user_id=user_id, facts=tuple(facts[-6:])) if facts else None


def _id(*parts: object) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "/".join(map(str, parts))))


def make_records(size: int, rng: random.Random) -> list[memory_records.MemoryRecord]:
    viewers = max(1, size // 50)
    records: list[memory_records.MemoryRecord] = []
    for n in range(size):
        topic, ts = rng.choice(TOPICS), T0 - timedelta(minutes=size - n)
        share = n % 10
        if share < 6:
            v = n % viewers
            records.append(
                memory_records.MemoryRecord(
                    id=_id("p", n), space=identity.personal_key(f"u{v}"),
                    kind=memory_records.MemoryKind.PERSONAL, text=rng.choice(STATEMENTS).format(t=topic),
                    user_id=f"u{v}", login=f"viewer{v}", stream=STREAM, turn_id=f"t{n}",
                    origin_message_ids=(f"m{n}",), first_ts=ts, last_ts=ts,
                )
            )  # fmt: skip
        elif share < 9:
            records.append(
                memory_records.MemoryRecord(
                    id=_id("e", n), space=identity.episodic_key(STREAM),
                    kind=memory_records.MemoryKind.EPISODIC, stream=STREAM, turn_id=f"t{n}",
                    text=f"viewer{n % viewers}: what about {topic}? | bot: {topic} is great",
                    origin_message_ids=(f"m{n}",), first_ts=ts, last_ts=ts,
                )
            )  # fmt: skip
        else:
            records.append(
                memory_records.MemoryRecord(
                    id=_id("l", n), space=identity.LORE_KEY, kind=memory_records.MemoryKind.LORE,
                    text=f"Captain Nebula once visited {topic} (canon entry {n})",
                )
            )  # fmt: skip
    return records


def make_batches(turns: int, viewers: int, rng: random.Random) -> list[models.Batch]:
    batches = []
    for turn in range(turns):
        events = []
        for k in range(rng.randint(1, 4)):
            v = rng.randrange(viewers)
            text = rng.choice(ASKS).format(t=rng.choice(TOPICS), v=f"@viewer{(v + 1) % viewers}")
            events.append(
                models.ChatEvent(
                    id=f"b{turn}-{k}", stream=STREAM, user_id=f"u{v}", login=f"viewer{v}",
                    text=text, ts=T0 + timedelta(seconds=turn * 10 + k),
                )
            )  # fmt: skip
        batches.append(models.Batch(stream=STREAM, events=tuple(events)))
    return batches


def _pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class LoopStall:
    """The longest time the event loop could not run a ready task (blocking work inside ``async``)."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        while True:
            before = time.perf_counter()
            await asyncio.sleep(0)
            self.worst = max(self.worst, (time.perf_counter() - before) * 1000)

    def __enter__(self) -> LoopStall:
        self._task = asyncio.create_task(self._tick(), name="bench:loop-stall")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()


async def _pass(
    retriever_for: Any, plans: planner.Planner, batches: Sequence[models.Batch]
) -> dict[str, Any]:
    totals, slowest_source, stalls, degraded, sources = [], [], [], 0, 0
    for batch in batches:
        retriever = retriever_for()
        plan = plans.plan(batch, [])
        with LoopStall() as stall:
            await asyncio.sleep(0)  # let the ticker start
            result = await retriever.retrieve(plan, batch, [])
        totals.append(result.timings_ms["memory_total"])
        per_source = [v for k, v in result.timings_ms.items() if k != "memory_total"]
        slowest_source.append(max(per_source, default=0.0))
        stalls.append(stall.worst)
        degraded += len(result.degraded)
        sources += len(plan.sources)
    return {
        "totals": totals,
        "slowest": slowest_source,
        "stalls": stalls,
        "degraded": degraded,
        "sources": sources,
    }


async def run(size: int, turns: int, layout: str, seed: int, on_disk: bool) -> None:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="lm-bench-") as folder:
        settings = settings_module.Settings(
            data_dir=folder, memory={"embedder": "offline"}, qdrant={"layout": layout}
        )
        records = make_records(size, rng)
        started = time.perf_counter()
        location = f"{folder}/qdrant" if on_disk else ":memory:"
        store = await qdrant.open_spaces(
            settings, embedders.OfflineHashEmbedder(), location=location
        )
        async with store:
            for i in range(0, len(records), 500):
                await store.upsert(records[i : i + 500])
            load_s = time.perf_counter() - started
            profiles = MemoryProfiles(records)
            plans = planner.Planner(settings, lore_entities=["Captain Nebula"])
            batches = make_batches(turns, max(1, size // 50), rng)
            warm_cache = cache.InProcessCache()

            def cold() -> retrieval.Retriever:
                return retrieval.build_retriever(
                    settings, spaces=store, profiles=profiles, cache=cache.InProcessCache()
                )

            warm_retriever = retrieval.build_retriever(
                settings, spaces=store, profiles=profiles, cache=warm_cache
            )
            cold_figures = await _pass(cold, plans, batches)
            await _pass(lambda: warm_retriever, plans, batches)  # fill the cache
            warm_figures = await _pass(lambda: warm_retriever, plans, batches)
    budget = settings.memory.budget_ms
    where = "on disk" if on_disk else "in memory"
    print(f"\n{size} memories, layout={layout}, {where}, {turns} turns (load {load_s:.1f} s)")
    for name, figures in (("cold", cold_figures), ("warm", warm_figures)):
        totals = figures["totals"]
        over = sum(t > budget for t in totals)
        print(
            f"  {name}: memory_total p50 {statistics.median(totals):7.2f} ms  "
            f"p95 {_pct(totals, 0.95):7.2f} ms  max {max(totals):7.2f} ms  | "
            f"slowest source p95 {_pct(figures['slowest'], 0.95):7.2f} ms  "
            f"loop stall p95 {_pct(figures['stalls'], 0.95):6.2f} ms  | "
            f"sources/turn {figures['sources'] / len(totals):.1f}  degraded {figures['degraded']}  "
            f"over budget ({budget} ms) {over}/{len(totals)}"
        )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument(
        "--layout", nargs="+", default=["per_space"], choices=["per_space", "shared"]
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--on-disk", action="store_true", help="embedded Qdrant in a folder (slow to load)"
    )
    args = parser.parse_args(argv)
    for layout in args.layout:
        for size in args.sizes:
            asyncio.run(run(size, args.turns, layout, args.seed, args.on_disk))


if __name__ == "__main__":
    main()
