"""Memory spaces: one contract over the in-memory fake and both Qdrant layouts, then Qdrant only."""

from __future__ import annotations

import contextlib
import uuid
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from qdrant_client import AsyncQdrantClient

from memory import errors, identity, ports
from memory.adapters import qdrant, qdrant_edge, qdrant_server
from memory.spaces import embedders, records
from memory.spaces import store as spaces
from tests.conftest import IsolatedSettings
from tests.fakes import spaces as fake_spaces

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

ALICE = identity.personal_key("1001")
BOB = identity.personal_key("1002")
STREAM = identity.episodic_key("s1")
T0 = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)
Kind = records.MemoryKind


def settings(tmp_path: Path, **overrides: Any) -> IsolatedSettings:
    return IsolatedSettings(data_dir=tmp_path / "data", **overrides)


def new_id() -> str:
    return str(uuid.uuid4())


def record(space: str, text: str, **fields: Any) -> records.MemoryRecord:
    values: dict[str, Any] = {
        "id": new_id(),
        "space": space,
        "kind": Kind.PERSONAL,
        "text": text,
        "turn_id": "turn-1",
        "created_at": T0,
    }
    values.update(fields)
    return records.MemoryRecord(**values)


@pytest.fixture(params=["fake", "per_space", "shared", "edge_per_space", "edge_shared"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if request.param == "fake":
        yield fake_spaces.InMemorySpaces()
        return
    if request.param.startswith("edge_"):  # Qdrant Edge on disk
        async with edge_spaces(tmp_path, request.param.removeprefix("edge_")) as opened:
            yield opened
        return
    # qdrant-client's local mode in memory: the stand-in for a Qdrant server
    opened = await qdrant.open_spaces(
        settings(tmp_path, qdrant={"layout": request.param}),
        embedders.OfflineHashEmbedder(),
        location=":memory:",
    )
    async with opened:
        yield opened


@contextlib.asynccontextmanager
async def edge_spaces(
    tmp_path: Path, layout: str, embedder: Any = None, sparse_scheme: str = "lexical"
) -> AsyncIterator[qdrant.QdrantSpaces]:
    """Memory spaces on Qdrant Edge in ``tmp_path / "edge"``, closed (shards included) on exit."""
    client = qdrant_edge.EdgeClient(tmp_path / "edge")
    try:
        async with await qdrant.open_spaces(
            settings(tmp_path, qdrant={"layout": layout}, memory={"sparse_scheme": sparse_scheme}),
            embedder or embedders.OfflineHashEmbedder(),
            client=client,
        ) as opened:
            yield opened
    finally:
        await client.close()


# -- contract ----------------------------------------------------------------------------------


async def test_upsert_then_get_keeps_every_field(store: ports.MemorySpaces) -> None:
    original = record(
        STREAM,
        "alice and bob talked about Turin",
        kind=Kind.EPISODIC,
        user_id=None,
        login=None,
        stream="s1",
        turn_id="turn-9",
        origin_message_ids=("m1", "m2"),
        participants=("1001", "1002"),
        first_ts=T0,
        last_ts=T0 + timedelta(seconds=5),
        created_at=T0 + timedelta(seconds=6),
        extra={"reply": "Turin is lovely", "n": 2},
    )
    corr = record(ALICE, "I live in Turin", kind=Kind.CORRECTION, corrects=new_id(), login="alice")
    answer = record(
        ALICE, "Sweden!", context_terms=(7, 9), context_message_id="m3", context_question="from?"
    )
    await store.upsert([original, corr, answer])
    assert await store.get(STREAM, [original.id]) == [original]
    assert await store.get(ALICE, [corr.id, answer.id]) == [corr, answer]
    assert store.embedder_name == "offline-hash-v1:384"


async def test_same_id_replaces(store: ports.MemorySpaces) -> None:
    first = record(ALICE, "I work as a plumber")
    await store.upsert([first])
    second = records.MemoryRecord(**{**_fields(first), "text": "I work as a graphic designer"})
    await store.upsert([second])
    assert await store.count(ALICE) == 1
    assert [r.text for r in await store.get(ALICE, [first.id])] == ["I work as a graphic designer"]


async def test_search_finds_the_relevant_memory_first(store: ports.MemorySpaces) -> None:
    texts = [
        "I work as a graphic designer",
        "I moved to Turin last year",
        "my cat is called Miso",
        "I play the bass guitar in a band",
        "pineapple on pizza is fine",
    ]
    records = [record(ALICE, t) for t in texts]
    await store.upsert(records)
    hits = await store.search(ALICE, "where did you move to? Turin?", limit=3)
    assert hits[0].record.text == "I moved to Turin last year"
    assert len(hits) == 3
    assert hits[0].score > hits[1].score >= hits[2].score
    assert (await store.search(ALICE, "designer job", limit=1))[0].record == records[0]
    assert await store.search(BOB, "Turin") == []
    assert await store.search(ALICE, "Turin", limit=0) == []


async def test_spaces_are_isolated(store: ports.MemorySpaces) -> None:
    alice = record(ALICE, "I moved to Turin")
    bob = record(BOB, "I moved to Turin too")
    await store.upsert([alice, bob])
    assert [h.record.id for h in await store.search(ALICE, "Turin")] == [alice.id]
    assert await store.get(ALICE, [bob.id]) == []
    assert await store.delete(ALICE, [bob.id]) == 0
    assert await store.count(BOB) == 1
    assert [r.id for r in await store.list(BOB)] == [bob.id]


async def test_kinds_filter(store: ports.MemorySpaces) -> None:
    raw = record(ALICE, "I moved to Turin")
    fact = record(ALICE, "Alice lives in Turin", kind=Kind.FACT)
    await store.upsert([raw, fact])
    hits = await store.search(ALICE, "Turin", kinds={Kind.FACT})
    assert [h.record.id for h in hits] == [fact.id]


async def test_kinds_filter_reaches_below_the_dense_candidates(store: ports.MemorySpaces) -> None:
    noise = [
        record(STREAM, f"Turin Turin stream chat number {i}", kind=Kind.EPISODIC) for i in range(30)
    ]
    lore = record(STREAM, "a note about the weather", kind=Kind.LORE)
    await store.upsert([*noise, lore])
    hits = await store.search(STREAM, "Turin", limit=2, kinds={Kind.LORE})
    assert [h.record.id for h in hits] == [lore.id]


async def test_correction_hides_and_outranks_the_corrected_record(
    store: ports.MemorySpaces,
) -> None:
    old = record(ALICE, "I live in Rome", origin_message_ids=("m1",))
    other = record(ALICE, "I have two cats")
    await store.upsert([old, other])
    fix = record(ALICE, "I moved to Turin, not Rome anymore", kind=Kind.CORRECTION, corrects=old.id)
    await store.upsert([fix])
    hits = await store.search(ALICE, "does she live in Rome", limit=5)
    ids = [h.record.id for h in hits]
    assert ids[0] == fix.id
    assert old.id not in ids
    # the corrected record stays stored, and comes back when its correction is deleted
    assert await store.get(ALICE, [old.id]) == [old]
    # re-upserting the corrected record (a retried job) keeps it hidden
    await store.upsert([old])
    assert old.id not in [h.record.id for h in await store.search(ALICE, "live in Rome")]
    assert await store.delete(ALICE, [fix.id]) == 1
    assert (await store.search(ALICE, "live in Rome", limit=1))[0].record.id == old.id


async def test_correction_in_the_same_batch(store: ports.MemorySpaces) -> None:
    old = record(ALICE, "my favourite game is chess")
    fix = record(ALICE, "my favourite game is go", kind=Kind.CORRECTION, corrects=old.id)
    await store.upsert([old, fix])
    hits = await store.search(ALICE, "favourite game chess")
    assert [h.record.id for h in hits] == [fix.id]


async def test_delete_by_id(store: ports.MemorySpaces) -> None:
    keep, gone = record(ALICE, "keep me"), record(ALICE, "forget me")
    await store.upsert([keep, gone])
    assert await store.delete(ALICE, [gone.id, new_id(), "not-a-uuid"]) == 1
    assert await store.get(ALICE, [keep.id, gone.id]) == [keep]
    assert await store.delete(identity.personal_key("nobody"), [keep.id]) == 0


async def test_delete_turn_across_spaces(store: ports.MemorySpaces) -> None:
    a = record(ALICE, "I moved to Turin", turn_id="t1")
    b = record(BOB, "I like jazz", turn_id="t1")
    e = record(STREAM, "turn t1 episode", kind=Kind.EPISODIC, turn_id="t1")
    other = record(ALICE, "I have a dog", turn_id="t2")
    await store.upsert([a, b, e, other])
    assert await store.delete_turn("t1") == 3
    assert await store.delete_turn("t1") == 0
    assert [r.id for r in await store.list(ALICE)] == [other.id]
    assert await store.count(BOB) == 0
    assert await store.count(STREAM) == 0


async def test_drop_count_and_spaces(store: ports.MemorySpaces) -> None:
    await store.upsert([record(ALICE, "one"), record(ALICE, "two"), record(BOB, "three")])
    await store.upsert([record(identity.LORE_KEY, "the castle is haunted", kind=Kind.LORE)])
    assert await store.spaces() == sorted([ALICE, BOB, identity.LORE_KEY])
    assert await store.count(ALICE) == 2
    assert await store.drop(ALICE) == 2
    assert await store.count(ALICE) == 0
    assert await store.search(ALICE, "one") == []
    assert await store.spaces() == sorted([BOB, identity.LORE_KEY])
    assert await store.drop(ALICE) == 0
    # a dropped space can be written again
    await store.upsert([record(ALICE, "back again")])
    assert await store.count(ALICE) == 1


async def test_find_in_any_space(store: ports.MemorySpaces) -> None:
    a, e = record(ALICE, "I moved to Turin"), record(STREAM, "episode", kind=Kind.EPISODIC)
    await store.upsert([a, e])
    assert await store.find(e.id) == e
    assert await store.find(a.id) == a
    assert await store.find(new_id()) is None
    assert await store.find("nope") is None


async def test_list_is_ordered_and_limited(store: ports.MemorySpaces) -> None:
    records = [record(ALICE, f"fact {i}", created_at=T0 + timedelta(minutes=i)) for i in range(5)]
    await store.upsert(list(reversed(records)))
    assert await store.list(ALICE) == records
    assert len(await store.list(ALICE, limit=2)) == 2


async def test_invalid_keys_and_ids_are_refused(store: ports.MemorySpaces) -> None:
    with pytest.raises(errors.InvalidMemory):
        await store.upsert([record("viewer-alice", "bad space")])
    with pytest.raises(errors.InvalidMemory):
        await store.upsert([record(ALICE, "bad id", id="m1")])
    with pytest.raises(errors.InvalidMemory):
        await store.upsert([record(ALICE, "upper-case id", id=new_id().upper())])
    with pytest.raises(errors.InvalidMemory):
        await store.search("stream:", "x")
    assert await store.count(ALICE) == 0


def _fields(r: records.MemoryRecord) -> dict[str, Any]:
    return {f: getattr(r, f) for f in records.MemoryRecord.__dataclass_fields__}


# -- Qdrant only -------------------------------------------------------------------------------


async def test_another_embedder_is_refused_when_opening(tmp_path: Path) -> None:
    client = AsyncQdrantClient(location=":memory:")
    cfg = settings(tmp_path, memory={"embedder": "offline"})
    async with await qdrant.open_spaces(cfg, embedders.OfflineHashEmbedder(), client=client) as s:
        await s.upsert([record(ALICE, "I moved to Turin")])
    with pytest.raises(errors.EmbedderMismatch) as caught:
        await qdrant.open_spaces(cfg, embedders.OfflineHashEmbedder(dim=256), client=client)
    message = str(caught.value)
    assert "offline-hash-v1:384" in message
    assert "offline-hash-v1:256" in message
    assert "LIVEMEMORY_MEMORY__EMBEDDER" in message
    # the injected client was not closed by the spaces
    assert await client.collection_exists("lm_manifest")
    await client.close()


async def test_a_collection_of_another_embedder_is_refused(tmp_path: Path) -> None:
    client = AsyncQdrantClient(location=":memory:")
    cfg = settings(tmp_path)
    async with await qdrant.open_spaces(cfg, embedders.OfflineHashEmbedder(), client=client) as s:
        await s.upsert([record(ALICE, "I moved to Turin")])
    # skipping the manifest check (constructed directly): each collection is checked on first use
    other = embedders.OfflineHashEmbedder(dim=384)
    other.name = "ollama:all-minilm:latest"
    stale = qdrant.QdrantSpaces(qdrant_server.ServerClient(client), other)
    with pytest.raises(errors.EmbedderMismatch, match="ollama:all-minilm:latest"):
        await stale.search(ALICE, "Turin")
    with pytest.raises(errors.EmbedderMismatch):
        await stale.upsert([record(ALICE, "I like jazz")])
    await client.close()


async def test_persistent_local_mode_reopens_with_data(tmp_path: Path) -> None:
    cfg = settings(tmp_path, memory={"embedder": "offline"})
    first = record(ALICE, "I moved to Turin")
    async with await qdrant.open_spaces(cfg, embedders.OfflineHashEmbedder()) as s:
        await s.upsert([first])
    assert (tmp_path / "data" / "qdrant-edge").is_dir()
    async with await qdrant.open_spaces(cfg, embedders.OfflineHashEmbedder()) as s:
        assert await s.get(ALICE, [first.id]) == [first]
        assert (await s.search(ALICE, "Turin"))[0].record == first
    with pytest.raises(errors.EmbedderMismatch):
        await qdrant.open_spaces(cfg, embedders.OfflineHashEmbedder(dim=128))
    # the failed open released the folder: it can be opened again
    async with await qdrant.open_spaces(cfg, embedders.OfflineHashEmbedder()) as s:
        assert await s.count(ALICE) == 1


async def test_collection_names_are_safe_and_distinct(tmp_path: Path) -> None:
    assert spaces.space_collection("lm", "viewer:1001") == "lm_viewer_1001"
    assert spaces.space_collection("lm", "lore") == "lm_lore"
    odd, plain = identity.personal_key("Al/ice:..\\x"), identity.personal_key("al-ice-x")
    assert spaces.space_collection("lm", odd) != spaces.space_collection("lm", plain)
    assert "/" not in spaces.space_collection("lm", odd)
    path = str(tmp_path / "q")
    async with await qdrant.open_spaces(
        settings(tmp_path), embedders.OfflineHashEmbedder(), location=path
    ) as s:
        await s.upsert([record(odd, "odd one"), record(plain, "plain one")])
        assert await s.spaces() == sorted([odd, plain])
        assert [r.text for r in await s.list(odd)] == ["odd one"]


async def test_shared_layout_partitions_by_tenant(tmp_path: Path) -> None:
    client = AsyncQdrantClient(location=":memory:")
    cfg = settings(tmp_path, qdrant={"layout": "shared", "collection_prefix": "t1"})
    async with await qdrant.open_spaces(cfg, embedders.OfflineHashEmbedder(), client=client) as s:
        for i in range(5):
            await s.upsert([record(identity.personal_key(str(i)), f"viewer {i} likes Turin")])
        await s.upsert([record(STREAM, "episode", kind=Kind.EPISODIC)])
        names = sorted(c.name for c in (await client.get_collections()).collections)
        assert names == ["t1_manifest", "t1_shared_stream", "t1_shared_viewer"]
        points, _ = await client.scroll("t1_shared_viewer", limit=10, with_payload=True)
        assert {(p.payload or {})["tenant"] for p in points} == {f"viewer:{i}" for i in range(5)}
        hits = await s.search(identity.personal_key("3"), "Turin", limit=5)
        assert [h.record.text for h in hits] == ["viewer 3 likes Turin"]
    await client.close()


@pytest.mark.parametrize("layout", ["per_space", "shared"])
async def test_a_space_dropped_by_another_process(tmp_path: Path, layout: str) -> None:
    """The admin CLI drops a space while the bot holds the collection in its cache."""
    client = AsyncQdrantClient(location=":memory:")
    cfg = settings(tmp_path, qdrant={"layout": layout})
    bot = await qdrant.open_spaces(cfg, embedders.OfflineHashEmbedder(), client=client)
    admin = await qdrant.open_spaces(cfg, embedders.OfflineHashEmbedder(), client=client)
    first = record(ALICE, "I moved to Turin")
    await bot.upsert([first])
    assert len(await bot.search(ALICE, "Turin")) == 1
    assert await admin.drop(ALICE) == 1
    assert await bot.search(ALICE, "Turin") == []
    assert await bot.count(ALICE) == 0
    assert await bot.get(ALICE, [first.id]) == []
    assert await bot.list(ALICE) == []
    assert await bot.find(first.id) is None
    await bot.upsert([record(ALICE, "I like jazz")])
    assert await admin.count(ALICE) == 1
    await client.close()


async def test_unreachable_server_is_store_unavailable(tmp_path: Path) -> None:
    cfg = settings(tmp_path, qdrant_url="http://127.0.0.1:9", qdrant={"connect_attempts": 1})
    with pytest.raises(errors.StoreUnavailable, match="Qdrant"):
        await qdrant.open_spaces(cfg, embedders.OfflineHashEmbedder())


def test_fake_and_adapter_implement_the_whole_protocol() -> None:
    attributes = {"embedder_name", "sparse"}  # not methods
    wanted = {n for n in vars(ports.MemorySpaces) if not n.startswith("_")} - attributes
    for cls in (fake_spaces.InMemorySpaces, qdrant.QdrantSpaces):
        missing = {n for n in wanted if not callable(getattr(cls, n, None))}
        assert not missing, (cls, missing)
