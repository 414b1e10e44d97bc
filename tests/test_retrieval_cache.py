"""The memory stage's caches: TTL per kind, invalidation (in flight, across processes through Redis),
single-flight, and a cache outage that is a miss, not a failure."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry

from memory import metrics, models
from memory.adapters import redis as redis_adapter
from memory.recall import cache as cache_module
from memory.recall import retrieval, sources
from tests import retrieval_support as support
from tests.fakes import spaces as fake_spaces

if TYPE_CHECKING:
    from collections.abc import Sequence


async def test_cache_ttl_per_kind_and_invalidation() -> None:
    now = [0.0]
    cache = cache_module.InProcessCache(clock=lambda: now[0])
    fetchers = {k: support.Fetcher(k) for k in ("profile", "recall", "lore")}
    registry = CollectorRegistry()
    memory_metrics = metrics.MemoryMetrics(registry)
    retriever = support.make_retriever(fetchers, cache=cache, registry_metrics=memory_metrics)
    plan = models.Plan(
        sources=(
            support.source("profile", "alice"),
            support.source("recall", "alice"),
            support.source("profile", "bob"),
            support.source("lore"),
        )
    )

    async def calls_after_retrieve(advance: float) -> dict[str, int]:
        now[0] += advance
        await retriever.retrieve(plan, support.one_batch(), [])
        return {k: f.calls for k, f in fetchers.items()}

    assert await calls_after_retrieve(0) == {"profile": 2, "recall": 1, "lore": 1}
    assert await calls_after_retrieve(1) == {"profile": 2, "recall": 1, "lore": 1}  # all cached
    assert await calls_after_retrieve(60) == {"profile": 2, "recall": 2, "lore": 1}  # recall 60 s
    assert await calls_after_retrieve(540) == {
        "profile": 4,
        "recall": 3,
        "lore": 1,
    }  # profile 600 s
    assert await calls_after_retrieve(3000) == {"profile": 6, "recall": 4, "lore": 2}  # lore 3600 s
    # forget / correct: one viewer's entries go, the others stay
    assert await retriever.invalidate_viewer(support.IDS["alice"]) == 2
    assert await calls_after_retrieve(0) == {"profile": 7, "recall": 5, "lore": 2}
    hits = registry.get_sample_value(
        "livememory_memory_cache_total", {"source": "profile", "result": "hit"}
    )
    assert hits == 5.0  # t=1: 2, t=61: 2, after invalidation: bob 1


async def test_invalidate_everywhere_and_state() -> None:
    cache = cache_module.InProcessCache()
    settings = support.plain_settings()
    registry = sources.SourceRegistry()
    episodic, state = support.Fetcher("episodic"), support.Fetcher("state")
    registry.register("episodic", episodic, ttl_seconds=60, scope="stream")
    registry.register("state", state, ttl_seconds=30, scope="stream")
    retriever = retrieval.Retriever(settings, registry=registry, cache=cache)
    plan = models.Plan(sources=(support.source("episodic"), support.source("state")))
    await retriever.retrieve(plan, support.one_batch(), [])
    await retriever.retrieve(plan, support.one_batch(), [])
    assert (episodic.calls, state.calls) == (1, 1)
    assert await retriever.invalidate_state() == 1
    assert await retriever.invalidate_viewer(support.IDS["alice"], everywhere=True) == 1
    await retriever.retrieve(plan, support.one_batch(), [])
    assert (episodic.calls, state.calls) == (2, 2)


async def test_identical_in_flight_requests_share_one_call() -> None:
    release = asyncio.Event()
    lore = support.Fetcher("lore", wait=release)
    retriever = support.make_retriever({"lore": lore}, source_timeout_ms=5000, budget_ms=5000)
    plan = models.Plan(sources=(support.source("lore", query="who made you?"),))
    same_query_other_batch = models.Plan(sources=(support.source("lore", query="Who made you"),))
    turns = [
        asyncio.create_task(retriever.retrieve(plan, support.one_batch(), [])),
        asyncio.create_task(retriever.retrieve(same_query_other_batch, support.one_batch(), [])),
    ]
    await lore.started.wait()
    await asyncio.sleep(0)
    release.set()
    first, second = await asyncio.gather(*turns)
    assert lore.calls == 1
    assert first.items == second.items != []


class ForgettableStore:
    """A one-memory store: the fetch reads it, then (first call only) waits until released."""

    def __init__(self) -> None:
        self.text: str | None = "I live in Rome"
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.calls = 0

    async def __call__(
        self, planned: models.PlannedSource, batch: models.Batch
    ) -> list[models.RecallItem]:
        self.calls += 1
        text = self.text
        if self.calls == 1:
            self.started.set()
            await self.release.wait()
        if text is None:
            return []
        return [
            models.RecallItem(
                source="recall", space="viewer-alice", viewer="alice", memory_id="m", text=text
            )
        ]


def forgettable_retriever(store: ForgettableStore) -> retrieval.Retriever:
    registry = sources.SourceRegistry()
    registry.register("recall", store, ttl_seconds=60, scope="viewer")
    settings = support.plain_settings(source_timeout_ms=5000, budget_ms=5000)
    return retrieval.Retriever(settings, registry=registry, cache=cache_module.InProcessCache())


async def test_a_fetch_in_flight_during_an_invalidation_does_not_refill_the_cache() -> None:
    store = ForgettableStore()
    retriever = forgettable_retriever(store)
    plan = models.Plan(sources=(support.source("recall", "alice", query="where do I live?"),))
    before = asyncio.create_task(retriever.retrieve(plan, support.one_batch(), []))
    await store.started.wait()
    store.text = None  # the memory is forgotten while the fetch holds the old text
    await retriever.invalidate_viewer(support.IDS["alice"])
    store.release.set()
    await before
    after = await retriever.retrieve(plan, support.one_batch(), [])
    assert after.items == []
    assert store.calls == 2


async def test_a_request_after_an_invalidation_does_not_join_the_stale_call() -> None:
    store = ForgettableStore()
    retriever = forgettable_retriever(store)
    plan = models.Plan(sources=(support.source("recall", "alice", query="where do I live?"),))
    stale = asyncio.create_task(retriever.retrieve(plan, support.one_batch(), []))
    await store.started.wait()
    store.text = None
    await retriever.invalidate_viewer(support.IDS["alice"])
    fresh = await retriever.retrieve(plan, support.one_batch(), [])  # starts its own fetch
    assert fresh.items == [] and store.calls == 2
    store.release.set()
    assert [i.text for i in (await stale).items] == ["I live in Rome"]  # asked before the forget
    assert (await retriever.retrieve(plan, support.one_batch(), [])).items == []


async def test_the_state_cache_is_keyed_by_the_batchs_viewers() -> None:
    settings = support.plain_settings()
    calls: list[list[str]] = []

    async def state(planned: models.PlannedSource, batch: models.Batch) -> list[models.RecallItem]:
        users = sorted({e.user_id for e in batch.chat})
        calls.append(users)
        return [
            models.RecallItem(
                source="state",
                space="state",
                viewer=None,
                memory_id=f"state:{users}",
                text=f"rows about {users}",
            )
        ]

    registry = sources.default_registry(
        settings, spaces=fake_spaces.InMemorySpaces(), profiles=support.NoProfiles(), state=state
    )
    retriever = retrieval.Retriever(
        settings, registry=registry, cache=cache_module.InProcessCache()
    )
    plan = models.Plan(sources=(support.source("state", query="who are my siblings?"),))
    alice = await retriever.retrieve(
        plan, support.one_batch(support.event("alice", "who are my siblings?")), []
    )
    bob = await retriever.retrieve(
        plan, support.one_batch(support.event("bob", "who are my siblings?")), []
    )
    again = await retriever.retrieve(
        plan, support.one_batch(support.event("alice", "who are my siblings", 2)), []
    )
    assert [i.text for i in alice.items] == ["rows about ['1001']"]
    assert [i.text for i in bob.items] == ["rows about ['1002']"]
    assert again.items == alice.items and calls == [["1001"], ["1002"]]
    assert await retriever.invalidate_state() == 2


async def test_a_cache_outage_is_a_miss_not_a_failure() -> None:
    class BrokenCache:
        async def get(self, key: str) -> str | None:
            raise ConnectionError("down")

        async def get_many(self, keys: Sequence[str]) -> list[str | None]:
            raise ConnectionError("down")

        async def set(self, key: str, value: str, ttl_seconds: float) -> None:
            raise ConnectionError("down")

        async def delete_prefix(self, prefix: str) -> int:
            return 0

    recall = support.Fetcher("recall")
    retriever = support.make_retriever({"recall": recall}, cache=BrokenCache())
    result = await retriever.retrieve(
        models.Plan(sources=(support.source("recall", "alice"),)), support.one_batch(), []
    )
    assert result.degraded == [] and len(result.items) == 1


async def test_redis_cache_serves_a_second_retriever(redis_url: str) -> None:
    """Two bot processes share the Redis cache; invalidation reaches both."""
    prefix = f"lmtest:{uuid.uuid4().hex}:"
    shared = redis_adapter.RedisCache.from_url(redis_url, prefix=prefix)
    try:
        first, second = support.Fetcher("recall"), support.Fetcher("recall")
        plan = models.Plan(sources=(support.source("recall", "alice"),))
        await support.make_retriever({"recall": first}, cache=shared).retrieve(
            plan, support.one_batch(), []
        )
        other = support.make_retriever({"recall": second}, cache=shared)
        result = await other.retrieve(plan, support.one_batch(), [])
        assert (first.calls, second.calls) == (1, 0)
        assert result.items[0].origin_message_ids == ("o1",)
        assert await other.invalidate_viewer(support.IDS["alice"]) == 1
        await other.retrieve(plan, support.one_batch(), [])
        assert second.calls == 1
    finally:
        await shared.delete_prefix("")
        await shared.aclose()


async def test_an_invalidation_by_another_process_stops_the_refill(redis_url: str) -> None:
    """The admin CLI forgets through the shared cache while the bot's fetch is running."""
    shared = redis_adapter.RedisCache.from_url(redis_url, prefix=f"lmtest:{uuid.uuid4().hex}:")
    try:
        store = ForgettableStore()
        registry = sources.SourceRegistry()
        registry.register("recall", store, ttl_seconds=60, scope="viewer")
        settings = support.plain_settings(source_timeout_ms=5000, budget_ms=5000)
        bot = retrieval.Retriever(settings, registry=registry, cache=shared)
        admin = retrieval.Retriever(settings, registry=registry, cache=shared)
        plan = models.Plan(sources=(support.source("recall", "alice", query="where do I live?"),))
        before = asyncio.create_task(bot.retrieve(plan, support.one_batch(), []))
        await store.started.wait()
        store.text = None
        await admin.invalidate_viewer(support.IDS["alice"])
        store.release.set()
        await before
        assert (await bot.retrieve(plan, support.one_batch(), [])).items == []
    finally:
        await shared.delete_prefix("")
        await shared.aclose()


async def test_a_shared_cache_is_read_in_one_round_trip_before_a_fetch() -> None:
    """The cached value and the invalidation marker come in one request (Redis)."""

    class Counting(cache_module.InProcessCache):
        def __init__(self) -> None:
            super().__init__()
            self.requests: list[str] = []

        async def get(self, key: str) -> str | None:
            self.requests.append("get")
            return await super().get(key)

        async def get_many(self, keys: Sequence[str]) -> list[str | None]:
            self.requests.append(f"get_many:{len(keys)}")
            return [await super(Counting, self).get(key) for key in keys]

        async def set(self, key: str, value: str, ttl_seconds: float) -> None:
            self.requests.append("set")
            await super().set(key, value, ttl_seconds)

    shared = Counting()
    retriever = support.make_retriever({"recall": support.Fetcher("recall")}, cache=shared)
    retriever._shared = True  # as for Redis: invalidation markers are read from the cache
    plan = models.Plan(sources=(support.source("recall", "alice"),))
    await retriever.retrieve(plan, support.one_batch(), [])
    assert shared.requests == ["get_many:2", "get", "set"]  # miss: read, marker check, fill
    shared.requests.clear()
    await retriever.retrieve(plan, support.one_batch(), [])
    assert shared.requests == ["get_many:2"]  # hit


async def test_redis_get_many_answers_in_order(redis_url: str) -> None:
    shared = redis_adapter.RedisCache.from_url(redis_url, prefix=f"lmtest:{uuid.uuid4().hex}:")
    try:
        await shared.set("a", "1", 60)
        await shared.set("c", "3", 60)
        assert await shared.get_many(["a", "b", "c"]) == ["1", None, "3"]
        assert await shared.get_many([]) == []
    finally:
        await shared.delete_prefix("")
        await shared.aclose()


async def test_the_in_process_cache_keeps_the_items_and_a_shared_one_json() -> None:
    """One process: a hit is the items the miss returned, exact scores included (no JSON round
    trip, which rounded them); a cache other processes share gets JSON."""

    class Precise(support.Fetcher):
        async def __call__(
            self, planned: models.PlannedSource, batch: models.Batch
        ) -> list[models.RecallItem]:
            return [
                replace(item, score=0.123456789) for item in await super().__call__(planned, batch)
            ]

    plan = models.Plan(sources=(support.source("recall", "alice"),))
    local = cache_module.InProcessCache()
    fetcher = Precise("recall")
    retriever = support.make_retriever({"recall": fetcher}, cache=local)
    missed = (await retriever.retrieve(plan, support.one_batch(), [])).outcomes[0].items
    hit = (await retriever.retrieve(plan, support.one_batch(), [])).outcomes[0].items
    assert fetcher.calls == 1 and hit == missed and hit[0].score == 0.123456789
    [key] = list(local._entries)
    assert local.get_value(key) == missed and await local.get(key) is None  # not a string

    shared = cache_module.InProcessCache()
    other = support.make_retriever({"recall": Precise("recall")}, cache=shared)
    other._shared = True  # as for Redis
    await other.retrieve(plan, support.one_batch(), [])
    [key] = list(shared._entries)
    stored = await shared.get(key)
    assert stored is not None and retrieval._decode(stored)[0].score == 0.1235
