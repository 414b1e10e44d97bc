"""The memory stage: concurrency, timeouts, budget, degraded sources, caches, single-flight, metrics,
and the whole path (planner → embedded Qdrant + Postgres profiles → block) on real stores."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from prometheus_client import CollectorRegistry

from config import settings as settings_module
from memory import identity, metrics, models
from memory.adapters import qdrant
from memory.adapters import redis as redis_adapter
from memory.consolidate import profile
from memory.recall import cache as cache_module
from memory.recall import planner, retrieval, sources
from memory.spaces import embedders, records
from tests.fakes import spaces as fake_spaces

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

    from memory.adapters import postgres
    from tests.conftest import SettingsFactory

T0 = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)
IDS = {"alice": "1001", "bob": "1002", "carol": "1003"}


class IsolatedSettings(settings_module.Settings):
    @classmethod
    def settings_customise_sources(
        cls, settings_cls: Any, init_settings: Any, *args: Any, **kwargs: Any
    ) -> tuple[Any, ...]:
        return (init_settings,)


def plain_settings(**memory: Any) -> settings_module.Settings:
    return IsolatedSettings(bot_name="livememory", memory={"embedder": "offline", **memory})


def event(login: str, text: str, n: int = 1) -> models.ChatEvent:
    return models.ChatEvent(
        id=f"{login}-m{n}",
        stream="s1",
        user_id=IDS[login],
        login=login,
        text=text,
        ts=T0 + timedelta(seconds=n),
    )


def one_batch(*events: models.ChatEvent) -> models.Batch:
    return models.Batch(stream="s1", events=events or (event("alice", "hi"),))


def source(kind: str, viewer: str | None = None, **kw: Any) -> models.PlannedSource:
    return models.PlannedSource(
        kind=kind, viewer=viewer, user_id=IDS.get(viewer or ""), query=kw.pop("query", "q"), **kw
    )


class Fetcher:
    """A registered test fetcher: counts calls, returns one item, or waits / fails when told."""

    def __init__(self, kind: str, *, wait: asyncio.Event | None = None, fail: bool = False) -> None:
        self.kind, self.wait, self.fail = kind, wait, fail
        self.calls = 0
        self.started = asyncio.Event()
        self.cancelled = False

    async def __call__(
        self, planned: models.PlannedSource, batch: models.Batch
    ) -> list[models.RecallItem]:
        self.calls += 1
        self.started.set()
        if self.wait is not None:
            try:
                await self.wait.wait()
            except asyncio.CancelledError:
                self.cancelled = True
                raise
        if self.fail:
            raise RuntimeError("source broke")
        return [
            models.RecallItem(
                source=self.kind,
                space=identity.viewer_space(planned.viewer) if planned.viewer else self.kind,
                viewer=planned.viewer,
                memory_id=f"{self.kind}-{planned.viewer}-{self.calls}",
                text=f"{self.kind} fact about {planned.viewer or 'the stream'} #{self.calls}",
                origin_message_ids=("o1",),
                score=0.9,
            )
        ]


def make_retriever(
    fetchers: Mapping[str, Fetcher],
    *,
    cache: Any = None,
    registry_metrics: metrics.MemoryMetrics | None = None,
    **memory: Any,
) -> retrieval.Retriever:
    settings = plain_settings(**memory)
    ttl = {
        "profile": settings.memory.profile_ttl_seconds,
        "recall": settings.memory.recall_ttl_seconds,
        "episodic": settings.memory.episodic_ttl_seconds,
        "lore": settings.memory.lore_ttl_seconds,
    }
    registry = sources.SourceRegistry()
    for kind, fetcher in fetchers.items():
        scope: sources.Scope = "viewer" if kind in ("profile", "recall") else "global"
        registry.register(kind, fetcher, ttl_seconds=ttl.get(kind, 0), scope=scope)
    return retrieval.Retriever(
        settings,
        registry=registry,
        cache=cache if cache is not None else cache_module.InProcessCache(),
        metrics=registry_metrics,
    )


async def test_sources_run_concurrently() -> None:
    barrier = asyncio.Barrier(3)

    class Meeting(Fetcher):
        async def __call__(
            self, planned: models.PlannedSource, batch: models.Batch
        ) -> list[models.RecallItem]:
            await barrier.wait()  # only passes when all three sources run at once
            return await super().__call__(planned, batch)

    fetchers = {k: Meeting(k) for k in ("profile", "recall", "lore")}
    retriever = make_retriever(fetchers, source_timeout_ms=5000, budget_ms=5000)
    plan = models.Plan(
        sources=(source("profile", "alice"), source("recall", "alice"), source("lore"))
    )
    result = await retriever.retrieve(plan, one_batch(), [])
    assert result.degraded == []
    assert {i.source for i in result.items} == {"profile", "recall", "lore"}
    assert set(result.timings_ms) == {"profile:alice", "recall:alice", "lore", "memory_total"}


async def test_a_source_sleeping_past_its_timeout_is_cancelled_and_admitted() -> None:
    never = asyncio.Event()
    sleeper = Fetcher("recall", wait=never)
    fetchers = {"profile": Fetcher("profile"), "recall": sleeper}
    retriever = make_retriever(fetchers, source_timeout_ms=50, budget_ms=1000)
    plan = models.Plan(
        sources=(
            source("profile", "bob"),
            source("recall", "alice", explicit=True),
        )
    )
    async with asyncio.timeout(5):  # a hang fails the test instead of the suite
        result = await retriever.retrieve(plan, one_batch(), [])
    assert result.degraded == [models.Degraded(source="recall:alice", reason="timeout")]
    assert sleeper.cancelled
    assert "recall:alice" in result.timings_ms and "memory_total" in result.timings_ms
    assert [i.viewer for i in result.items] == ["bob"]  # the turn went on with what arrived
    [notice] = [line for line in result.block.splitlines() if line.startswith("- [alice]")]
    assert "unavailable" in notice


async def test_sources_still_running_at_the_budget_are_cancelled() -> None:
    never = asyncio.Event()
    slow_lore, slow_recall = Fetcher("lore", wait=never), Fetcher("recall", wait=never)
    fetchers = {"profile": Fetcher("profile"), "lore": slow_lore, "recall": slow_recall}
    retriever = make_retriever(fetchers, source_timeout_ms=60_000, budget_ms=50)
    plan = models.Plan(
        sources=(source("profile", "alice"), source("lore"), source("recall", "alice"))
    )
    async with asyncio.timeout(5):
        result = await retriever.retrieve(plan, one_batch(), [])
    assert result.degraded == [
        models.Degraded(source="lore", reason="budget"),
        models.Degraded(source="recall:alice", reason="budget"),
    ]
    assert slow_lore.cancelled and slow_recall.cancelled
    assert [i.source for i in result.items] == ["profile"]


async def test_failing_and_unknown_sources_are_degraded_errors() -> None:
    fetchers = {"profile": Fetcher("profile"), "recall": Fetcher("recall", fail=True)}
    retriever = make_retriever(fetchers)
    plan = models.Plan(
        sources=(source("profile", "alice"), source("recall", "alice"), source("state"))
    )
    result = await retriever.retrieve(plan, one_batch(), [])
    assert result.degraded == [
        models.Degraded(source="recall:alice", reason="error"),
        models.Degraded(source="state", reason="error"),
    ]
    assert [i.source for i in result.items] == ["profile"]
    assert result.block  # the failure of an unasked source is silent, the profile is there


async def test_empty_plan() -> None:
    result = await make_retriever({}).retrieve(models.Plan(), one_batch(), [])
    assert (result.items, result.degraded, result.block) == ([], [], "")
    assert set(result.timings_ms) == {"memory_total"}


async def test_cache_ttl_per_kind_and_invalidation() -> None:
    now = [0.0]
    cache = cache_module.InProcessCache(clock=lambda: now[0])
    fetchers = {k: Fetcher(k) for k in ("profile", "recall", "lore")}
    registry = CollectorRegistry()
    memory_metrics = metrics.MemoryMetrics(registry)
    retriever = make_retriever(fetchers, cache=cache, registry_metrics=memory_metrics)
    plan = models.Plan(
        sources=(
            source("profile", "alice"),
            source("recall", "alice"),
            source("profile", "bob"),
            source("lore"),
        )
    )

    async def calls_after_retrieve(advance: float) -> dict[str, int]:
        now[0] += advance
        await retriever.retrieve(plan, one_batch(), [])
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
    assert await retriever.invalidate_viewer(IDS["alice"]) == 2
    assert await calls_after_retrieve(0) == {"profile": 7, "recall": 5, "lore": 2}
    hits = registry.get_sample_value(
        "livememory_memory_cache_total", {"source": "profile", "result": "hit"}
    )
    assert hits == 5.0  # t=1: 2, t=61: 2, after invalidation: bob 1


async def test_invalidate_everywhere_and_state() -> None:
    cache = cache_module.InProcessCache()
    settings = plain_settings()
    registry = sources.SourceRegistry()
    episodic, state = Fetcher("episodic"), Fetcher("state")
    registry.register("episodic", episodic, ttl_seconds=60, scope="stream")
    registry.register("state", state, ttl_seconds=30, scope="stream")
    retriever = retrieval.Retriever(settings, registry=registry, cache=cache)
    plan = models.Plan(sources=(source("episodic"), source("state")))
    await retriever.retrieve(plan, one_batch(), [])
    await retriever.retrieve(plan, one_batch(), [])
    assert (episodic.calls, state.calls) == (1, 1)
    assert await retriever.invalidate_state() == 1
    assert await retriever.invalidate_viewer(IDS["alice"], everywhere=True) == 1
    await retriever.retrieve(plan, one_batch(), [])
    assert (episodic.calls, state.calls) == (2, 2)


async def test_identical_in_flight_requests_share_one_call() -> None:
    release = asyncio.Event()
    lore = Fetcher("lore", wait=release)
    retriever = make_retriever({"lore": lore}, source_timeout_ms=5000, budget_ms=5000)
    plan = models.Plan(sources=(source("lore", query="who made you?"),))
    same_query_other_batch = models.Plan(sources=(source("lore", query="Who made you"),))
    turns = [
        asyncio.create_task(retriever.retrieve(plan, one_batch(), [])),
        asyncio.create_task(retriever.retrieve(same_query_other_batch, one_batch(), [])),
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
    settings = plain_settings(source_timeout_ms=5000, budget_ms=5000)
    return retrieval.Retriever(settings, registry=registry, cache=cache_module.InProcessCache())


async def test_a_fetch_in_flight_during_an_invalidation_does_not_refill_the_cache() -> None:
    store = ForgettableStore()
    retriever = forgettable_retriever(store)
    plan = models.Plan(sources=(source("recall", "alice", query="where do I live?"),))
    before = asyncio.create_task(retriever.retrieve(plan, one_batch(), []))
    await store.started.wait()
    store.text = None  # the memory is forgotten while the fetch holds the old text
    await retriever.invalidate_viewer(IDS["alice"])
    store.release.set()
    await before
    after = await retriever.retrieve(plan, one_batch(), [])
    assert after.items == []
    assert store.calls == 2


async def test_a_request_after_an_invalidation_does_not_join_the_stale_call() -> None:
    store = ForgettableStore()
    retriever = forgettable_retriever(store)
    plan = models.Plan(sources=(source("recall", "alice", query="where do I live?"),))
    stale = asyncio.create_task(retriever.retrieve(plan, one_batch(), []))
    await store.started.wait()
    store.text = None
    await retriever.invalidate_viewer(IDS["alice"])
    fresh = await retriever.retrieve(plan, one_batch(), [])  # starts its own fetch
    assert fresh.items == [] and store.calls == 2
    store.release.set()
    assert [i.text for i in (await stale).items] == ["I live in Rome"]  # asked before the forget
    assert (await retriever.retrieve(plan, one_batch(), [])).items == []


async def test_the_state_cache_is_keyed_by_the_batchs_viewers() -> None:
    settings = plain_settings()
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
        settings, spaces=fake_spaces.InMemorySpaces(), profiles=NoProfiles(), state=state
    )
    retriever = retrieval.Retriever(
        settings, registry=registry, cache=cache_module.InProcessCache()
    )
    plan = models.Plan(sources=(source("state", query="who are my siblings?"),))
    alice = await retriever.retrieve(plan, one_batch(event("alice", "who are my siblings?")), [])
    bob = await retriever.retrieve(plan, one_batch(event("bob", "who are my siblings?")), [])
    again = await retriever.retrieve(plan, one_batch(event("alice", "who are my siblings", 2)), [])
    assert [i.text for i in alice.items] == ["rows about ['1001']"]
    assert [i.text for i in bob.items] == ["rows about ['1002']"]
    assert again.items == alice.items and calls == [["1001"], ["1002"]]
    assert await retriever.invalidate_state() == 2


class NoProfiles:
    async def get(self, user_id: str) -> None:
        return None


async def test_a_cache_outage_is_a_miss_not_a_failure() -> None:
    class BrokenCache:
        async def get(self, key: str) -> str | None:
            raise ConnectionError("down")

        async def set(self, key: str, value: str, ttl_seconds: float) -> None:
            raise ConnectionError("down")

        async def delete_prefix(self, prefix: str) -> int:
            return 0

    recall = Fetcher("recall")
    retriever = make_retriever({"recall": recall}, cache=BrokenCache())
    result = await retriever.retrieve(
        models.Plan(sources=(source("recall", "alice"),)), one_batch(), []
    )
    assert result.degraded == [] and len(result.items) == 1


async def test_redis_cache_serves_a_second_retriever(redis_url: str) -> None:
    """Two bot processes share the Redis cache; invalidation reaches both."""
    prefix = f"lmtest:{uuid.uuid4().hex}:"
    shared = redis_adapter.RedisCache.from_url(redis_url, prefix=prefix)
    try:
        first, second = Fetcher("recall"), Fetcher("recall")
        plan = models.Plan(sources=(source("recall", "alice"),))
        await make_retriever({"recall": first}, cache=shared).retrieve(plan, one_batch(), [])
        other = make_retriever({"recall": second}, cache=shared)
        result = await other.retrieve(plan, one_batch(), [])
        assert (first.calls, second.calls) == (1, 0)
        assert result.items[0].origin_message_ids == ("o1",)
        assert await other.invalidate_viewer(IDS["alice"]) == 1
        await other.retrieve(plan, one_batch(), [])
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
        settings = plain_settings(source_timeout_ms=5000, budget_ms=5000)
        bot = retrieval.Retriever(settings, registry=registry, cache=shared)
        admin = retrieval.Retriever(settings, registry=registry, cache=shared)
        plan = models.Plan(sources=(source("recall", "alice", query="where do I live?"),))
        before = asyncio.create_task(bot.retrieve(plan, one_batch(), []))
        await store.started.wait()
        store.text = None
        await admin.invalidate_viewer(IDS["alice"])
        store.release.set()
        await before
        assert (await bot.retrieve(plan, one_batch(), [])).items == []
    finally:
        await shared.delete_prefix("")
        await shared.aclose()


def test_record_turn_metrics() -> None:
    registry = CollectorRegistry()
    memory_metrics = metrics.MemoryMetrics(registry)
    report = models.TurnReport(
        turn_id="t1",
        stream="s1",
        message_ids=["m1"],
        recall=[
            models.RecallItem(
                source="recall", space="viewer-alice", viewer="alice", memory_id="x", text="t"
            )
        ],
        timings_ms={"recall:alice": 3.0, "lore": 5.0, "memory_total": 9.0, "model": 800.0},
        degraded=[models.Degraded(source="lore", reason="timeout")],
        prompt=models.PromptStats(messages_in_history=23, messages_sent=6, tokens_estimate=812),
        status=models.TurnStatus.COMPLETED,
    )
    memory_metrics.record_turn(report)
    memory_metrics.record_turn(report)

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    assert value("livememory_memory_stage_seconds_count", source="memory_total") == 2
    assert value("livememory_memory_stage_seconds_sum", source="recall") == pytest.approx(0.006)
    assert value("livememory_memory_stage_seconds_count", source="model") is None
    assert value("livememory_memory_degraded_total", source="lore", reason="timeout") == 2
    assert value("livememory_memory_recall_items_total", source="recall") == 2
    assert value("livememory_prompt_messages_in_history_sum") == 46
    assert value("livememory_prompt_messages_sent_sum") == 12
    assert value("livememory_prompt_messages_sent_count") == 2
    assert value("livememory_turns_total", status="completed") == 2


# --- the whole path on real stores ---------------------------------------------------------------


def personal(login: str, text: str, message_id: str, turn: str) -> records.MemoryRecord:
    return records.MemoryRecord(
        id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"{turn}/{login}")),
        space=identity.personal_key(IDS[login]),
        kind=records.MemoryKind.PERSONAL,
        text=text,
        user_id=IDS[login],
        login=login,
        stream="s0",
        turn_id=turn,
        origin_message_ids=(message_id,),
        first_ts=T0,
        last_ts=T0,
    )


@pytest.fixture
async def qdrant_spaces(tmp_path: Any) -> AsyncIterator[Any]:
    opened = await qdrant.open_spaces(
        plain_settings(), embedders.OfflineHashEmbedder(), location=":memory:"
    )
    async with opened:
        yield opened


@pytest.mark.parametrize("store", ["qdrant", "fake"])
async def test_attribution_end_to_end(
    store: str,
    qdrant_spaces: Any,
    db: postgres.Database,
    make_settings: SettingsFactory,
) -> None:
    settings = make_settings(bot_name="livememory")
    spaces = qdrant_spaces if store == "qdrant" else fake_spaces.InMemorySpaces()
    records = [
        personal("alice", "I work as a graphic designer", "a1", "t1"),
        personal("alice", "My cat is called Miso", "a2", "t2"),
        personal("bob", "Alice lives in Rome", "b1", "t1"),
        personal("bob", "I live in Naples", "b2", "t3"),
    ]
    await spaces.upsert(records)
    profiles = profile.ProfileStore(db)
    await profiles.apply_memories(records)
    retriever = retrieval.build_retriever(
        settings, spaces=spaces, profiles=profiles, cache=cache_module.InProcessCache()
    )
    plans = planner.Planner(settings)

    # Alice asks what the bot remembers about her: only her own statements come back
    asks = one_batch(event("alice", "what do you remember about me?", 10))
    recall = await retriever.retrieve(plans.plan(asks, []), asks, [])
    assert recall.degraded == []
    assert {i.space for i in recall.items} == {"viewer-alice"}
    assert {m for i in recall.items for m in i.origin_message_ids} <= {"a1", "a2"}
    assert "- [alice] I work as a graphic designer" in recall.block
    assert "Rome" not in recall.block

    # Carol asks where Alice lives: Bob's claim never surfaces as Alice's fact
    asks = one_batch(event("carol", "where does Alice live?", 11))
    history = [models.HistoryItem.from_event(event("alice", "hello all", 5), "t5")]
    recall = await retriever.retrieve(plans.plan(asks, history), asks, history)
    assert all("Rome" not in i.text for i in recall.items if i.viewer == "alice")
    assert "Alice lives in Rome" not in recall.block
    assert all(i.space == f"viewer-{i.viewer}" for i in recall.items)

    # a viewer with nothing stored who asks explicitly is told so
    asks = one_batch(event("carol", "ti ricordi di me?", 12))
    recall = await retriever.retrieve(plans.plan(asks, []), asks, [])
    assert "Nothing is stored about carol" in recall.block


async def test_lore_and_episodic_keep_only_hits_near_the_best() -> None:
    store = fake_spaces.InMemorySpaces()
    texts = [
        "The Lag Goblin is blamed for every dropped frame",
        "Professor Quill is the streamer's persona",
        "The Great Toaster Incident happened during the third stream",
    ]
    await store.upsert(
        [
            records.MemoryRecord(
                id=str(uuid.uuid5(uuid.NAMESPACE_URL, text)),
                space=identity.LORE_KEY,
                kind=records.MemoryKind.LORE,
                text=text,
            )
            for text in texts
        ]
    )
    lore = sources.SpaceSource(store, kind="lore", limit=5)
    items = await lore(source("lore", query="what's the Lag Goblin?"), one_batch())
    assert [i.text for i in items] == [texts[0]]
    assert all(i.space == "lore" and i.viewer is None for i in items)


# --- ablation switches (settings.memory; evaluation only) ---------------------------------------


def in_space(space: str, login: str, text: str, message_id: str) -> records.MemoryRecord:
    return dataclasses.replace(personal(login, text, message_id, message_id), space=space)


@pytest.mark.parametrize("split", [True, False])
async def test_without_attribution_split_recall_reads_the_shared_space_unfiltered(
    split: bool,
) -> None:
    """The naive design shows another viewer's statement as the planned viewer's; the split does not."""
    store = fake_spaces.InMemorySpaces()
    own, shared = identity.personal_key(IDS["alice"]), identity.SHARED_PERSONAL_KEY
    await store.upsert(
        [
            in_space(own, "alice", "I work as a graphic designer", "a1"),
            # a stray record of bob's in alice's space: the split design filters it out
            in_space(own, "bob", "I work as a baker", "b0"),
            in_space(shared, "alice", "I work as a graphic designer", "a1"),
            in_space(shared, "bob", "I work as a baker", "b1"),
        ]
    )
    registry = sources.default_registry(
        plain_settings(attribution_split=split), spaces=store, profiles=NoProfiles()
    )
    recall = registry.get("recall").fetch
    items = await recall(source("recall", "alice", query="what is my work?"), one_batch())
    assert {i.viewer for i in items} == {"alice"}
    origins = {m for i in items for m in i.origin_message_ids}
    assert origins == ({"a1"} if split else {"a1", "b1"})


@pytest.mark.parametrize("dedupe", [True, False])
async def test_the_retriever_honours_the_dedupe_setting(dedupe: bool) -> None:
    recall = Fetcher("recall")
    retriever = make_retriever({"recall": recall}, dedupe=dedupe)
    plan = models.Plan(sources=(source("recall", "alice"),))
    shown = models.HistoryItem.from_event(event("alice", "recall fact about alice #1", 5), "t5")
    result = await retriever.retrieve(plan, one_batch(), [shown])
    assert len(result.items) == (0 if dedupe else 1)
