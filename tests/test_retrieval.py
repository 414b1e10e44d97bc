"""The memory stage: concurrency, timeouts, budget, degraded sources, metrics, and the whole path
(planner → embedded Qdrant + Postgres profiles → block) on real stores."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from typing import TYPE_CHECKING, Any

import pytest
from prometheus_client import CollectorRegistry

from memory import identity, metrics, models
from memory.adapters import qdrant
from memory.consolidate import profile
from memory.recall import asked, planner, retrieval, sources
from memory.recall import cache as cache_module
from memory.spaces import embedders, records
from tests import retrieval_support as support
from tests.fakes import spaces as fake_spaces

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from memory.adapters import postgres
    from tests.conftest import SettingsFactory


async def test_sources_run_concurrently() -> None:
    barrier = asyncio.Barrier(3)

    class Meeting(support.Fetcher):
        async def __call__(
            self, planned: models.PlannedSource, batch: models.Batch
        ) -> list[models.RecallItem]:
            await barrier.wait()  # only passes when all three sources run at once
            return await super().__call__(planned, batch)

    fetchers = {k: Meeting(k) for k in ("profile", "recall", "lore")}
    retriever = support.make_retriever(fetchers, source_timeout_ms=5000, budget_ms=5000)
    plan = models.Plan(
        sources=(
            support.source("profile", "alice"),
            support.source("recall", "alice"),
            support.source("lore"),
        )
    )
    result = await retriever.retrieve(plan, support.one_batch(), [])
    assert result.degraded == []
    assert {i.source for i in result.items} == {"profile", "recall", "lore"}
    assert set(result.timings_ms) == {"profile:alice", "recall:alice", "lore", "memory_total"}


async def test_a_source_sleeping_past_its_timeout_is_cancelled_and_admitted() -> None:
    never = asyncio.Event()
    sleeper = support.Fetcher("recall", wait=never)
    fetchers = {"profile": support.Fetcher("profile"), "recall": sleeper}
    retriever = support.make_retriever(fetchers, source_timeout_ms=50, budget_ms=1000)
    plan = models.Plan(
        sources=(
            support.source("profile", "bob"),
            support.source("recall", "alice", explicit=True),
        )
    )
    async with asyncio.timeout(5):  # a hang fails the test instead of the suite
        result = await retriever.retrieve(plan, support.one_batch(), [])
    assert result.degraded == [models.Degraded(source="recall:alice", reason="timeout")]
    assert sleeper.cancelled
    assert "recall:alice" in result.timings_ms and "memory_total" in result.timings_ms
    assert [i.viewer for i in result.items] == ["bob"]  # the turn went on with what arrived
    [notice] = [line for line in result.block.splitlines() if line.startswith("- [alice]")]
    assert "unavailable" in notice


async def test_sources_still_running_at_the_budget_are_cancelled() -> None:
    never = asyncio.Event()
    slow_lore, slow_recall = (
        support.Fetcher("lore", wait=never),
        support.Fetcher("recall", wait=never),
    )
    fetchers = {"profile": support.Fetcher("profile"), "lore": slow_lore, "recall": slow_recall}
    retriever = support.make_retriever(fetchers, source_timeout_ms=60_000, budget_ms=50)
    plan = models.Plan(
        sources=(
            support.source("profile", "alice"),
            support.source("lore"),
            support.source("recall", "alice"),
        )
    )
    async with asyncio.timeout(5):
        result = await retriever.retrieve(plan, support.one_batch(), [])
    assert result.degraded == [
        models.Degraded(source="lore", reason="budget"),
        models.Degraded(source="recall:alice", reason="budget"),
    ]
    assert slow_lore.cancelled and slow_recall.cancelled
    assert [i.source for i in result.items] == ["profile"]


async def test_failing_and_unknown_sources_are_degraded_errors() -> None:
    fetchers = {
        "profile": support.Fetcher("profile"),
        "recall": support.Fetcher("recall", fail=True),
    }
    retriever = support.make_retriever(fetchers)
    plan = models.Plan(
        sources=(
            support.source("profile", "alice"),
            support.source("recall", "alice"),
            support.source("state"),
        )
    )
    result = await retriever.retrieve(plan, support.one_batch(), [])
    assert result.degraded == [
        models.Degraded(source="recall:alice", reason="error"),
        models.Degraded(source="state", reason="error"),
    ]
    assert [i.source for i in result.items] == ["profile"]
    assert result.block  # the failure of an unasked support.source is silent, the profile is there


async def test_empty_plan() -> None:
    result = await support.make_retriever({}).retrieve(models.Plan(), support.one_batch(), [])
    assert (result.items, result.degraded, result.block) == ([], [], "")
    assert set(result.timings_ms) == {"memory_total"}


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
        space=identity.personal_key(support.IDS[login]),
        kind=records.MemoryKind.PERSONAL,
        text=text,
        user_id=support.IDS[login],
        login=login,
        stream="s0",
        turn_id=turn,
        origin_message_ids=(message_id,),
        first_ts=support.T0,
        last_ts=support.T0,
    )


@pytest.fixture
async def qdrant_spaces(tmp_path: Any) -> AsyncIterator[Any]:
    opened = await qdrant.open_spaces(
        support.plain_settings(), embedders.OfflineHashEmbedder(), location=":memory:"
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
    asks = support.one_batch(support.event("alice", "what do you remember about me?", 10))
    recall = await retriever.retrieve(plans.plan(asks, []), asks, [])
    assert recall.degraded == []
    assert {i.space for i in recall.items} == {"viewer-alice"}
    assert {m for i in recall.items for m in i.origin_message_ids} <= {"a1", "a2"}
    assert "- [alice · earlier today] I work as a graphic designer" in recall.block
    assert "Rome" not in recall.block

    # Carol asks where Alice lives: Bob's claim never surfaces as Alice's fact
    asks = support.one_batch(support.event("carol", "where does Alice live?", 11))
    history = [models.HistoryItem.from_event(support.event("alice", "hello all", 5), "t5")]
    recall = await retriever.retrieve(plans.plan(asks, history), asks, history)
    assert all("Rome" not in i.text for i in recall.items if i.viewer == "alice")
    assert "Alice lives in Rome" not in recall.block
    assert all(i.space == f"viewer-{i.viewer}" for i in recall.items)

    # a viewer with nothing stored who asks explicitly is told so
    asks = support.one_batch(support.event("carol", "ti ricordi di me?", 12))
    recall = await retriever.retrieve(plans.plan(asks, []), asks, [])
    assert "Nothing is stored about carol" in recall.block


@pytest.mark.parametrize("store", ["qdrant", "fake"])
async def test_a_slot_question_brings_the_statement_that_shares_none_of_its_words(
    store: str, qdrant_spaces: Any
) -> None:
    spaces = qdrant_spaces if store == "qdrant" else fake_spaces.InMemorySpaces()
    said = [
        "ho visto il nuovo film di Nolan ieri sera",
        "la pizza di ieri era buonissima",
        "domani ho un esame di chimica",
        "la macchina del caffè in ufficio è rotta di nuovo",  # a slot's word, no statement of it
        "non guido, vado ovunque in bici",
        "stasera gioco a Elden Ring",
        "ho la febbre, resto a casa",
        "la mia pianta di basilico è morta",
        "ho comprato una tastiera nuova",
    ]
    await spaces.upsert([personal("alice", text, f"a{n}", f"t{n}") for n, text in enumerate(said)])
    registry = sources.default_registry(
        support.plain_settings(recall_limit=2), spaces=spaces, profiles=support.NoProfiles()
    )
    recall = registry.get("recall").fetch
    question = support.source("recall", "alice", query="ha la patente")
    plain = [i.text for i in await recall(question, support.one_batch())]
    assert len(plain) == 2 and "non guido, vado ovunque in bici" not in plain

    asking = dataclasses.replace(question, asks=asked.slots("ha la patente"))
    words = asked.search_words(asking.asks)
    space = identity.personal_key(support.IDS["alice"])
    # the slot's words find the statement, and the coffee machine, which shares one ("macchina")
    # but says nothing of alice's driving
    hits = {hit.record.text for hit in await spaces.search(space, words, limit=2)}
    assert hits == {said[3], said[4]}
    found = [i.text for i in await recall(asking, support.one_batch())]
    # what the question found, then the viewer's statement of the slot it asks for
    assert found == [*plain, "non guido, vado ovunque in bici"]

    # an open question about alice asks for everything: no slot search
    broad = dataclasses.replace(asking, broad=True)
    assert [i.text for i in await recall(broad, support.one_batch())] == plain


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
    items = await lore(support.source("lore", query="what's the Lag Goblin?"), support.one_batch())
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
    own, shared = identity.personal_key(support.IDS["alice"]), identity.SHARED_PERSONAL_KEY
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
        support.plain_settings(attribution_split=split), spaces=store, profiles=support.NoProfiles()
    )
    recall = registry.get("recall").fetch
    items = await recall(
        support.source("recall", "alice", query="what is my work?"), support.one_batch()
    )
    assert {i.viewer for i in items} == {"alice"}
    origins = {m for i in items for m in i.origin_message_ids}
    assert origins == ({"a1"} if split else {"a1", "b1"})


@pytest.mark.parametrize("dedupe", [True, False])
async def test_the_retriever_honours_the_dedupe_setting(dedupe: bool) -> None:
    recall = support.Fetcher("recall")
    retriever = support.make_retriever({"recall": recall}, dedupe=dedupe)
    plan = models.Plan(sources=(support.source("recall", "alice"),))
    shown = models.HistoryItem.from_event(
        support.event("alice", "recall fact about alice #1", 5), "t5"
    )
    result = await retriever.retrieve(plan, support.one_batch(), [shown])
    assert len(result.items) == (0 if dedupe else 1)
