"""Qdrant Edge as the embedded store: what only it does (vacuum, swaps, its one-process rule)."""

from __future__ import annotations

import asyncio
import json
import shutil
import uuid
from typing import TYPE_CHECKING, Any

import pytest
import qdrant_edge as edge

from memory import errors, identity
from memory.adapters import edge_models, edge_shards, qdrant, qdrant_edge
from memory.spaces import embedders
from tests import scan
from tests.test_spaces import T0, edge_spaces, record, settings

if TYPE_CHECKING:
    from pathlib import Path

ALICE, BOB = identity.personal_key("1001"), identity.personal_key("1002")
STREAM = identity.episodic_key("s1")


@pytest.mark.parametrize("layout", ["per_space", "shared"])
async def test_vacuum_leaves_no_byte_of_a_deleted_memory_in_segments_or_wal(
    tmp_path: Path, layout: str
) -> None:
    secret = f"zq{uuid.uuid4().hex[:12]}"
    async with edge_spaces(tmp_path, layout) as spaces:
        gone = record(ALICE, f"my secret word is {secret}")
        kept = record(BOB, "I live in Turin")
        await spaces.upsert([gone, kept])
        assert await spaces.delete(ALICE, [gone.id]) == 1
        assert scan.file_hits(tmp_path / "edge", secret)  # the WAL still holds the upsert
        assert await spaces.vacuum([ALICE]) == 1
        assert scan.file_hits(tmp_path / "edge", secret) == []
        assert [h.record.id for h in await spaces.search(BOB, "Turin")] == [kept.id]
    async with edge_spaces(tmp_path, layout) as spaces:  # and the rebuilt shard reopens
        assert await spaces.get(BOB, [kept.id]) == [kept]
        assert await spaces.count(ALICE) == 0
    assert scan.file_hits(tmp_path / "edge", secret) == []


async def test_writes_and_reads_during_a_vacuum_are_kept(tmp_path: Path) -> None:
    async with edge_spaces(tmp_path, "shared") as spaces:
        await spaces.upsert([record(ALICE, f"memory {i} about Turin") for i in range(300)])
        late = [record(BOB, f"late memory {i}") for i in range(20)]
        searches = [spaces.search(ALICE, "Turin") for _ in range(20)]
        vacuumed, *results = await asyncio.gather(
            spaces.vacuum([ALICE]), *(spaces.upsert([r]) for r in late), *searches
        )
        assert vacuumed == 1
        assert [len(hits) for hits in results[len(late) :] if isinstance(hits, list)] == [5] * 20
        assert await spaces.count(BOB) == len(late)
        assert await spaces.count(ALICE) == 300


async def test_an_interrupted_vacuum_swap_is_finished_when_the_store_opens(tmp_path: Path) -> None:
    memory = record(ALICE, "I live in Turin")
    async with edge_spaces(tmp_path, "shared") as spaces:
        await spaces.upsert([memory])
        name = spaces.collection(ALICE)
    shard = tmp_path / "edge" / name
    shutil.copytree(shard, shard.with_name(name + ".vacuum"))  # rebuilt, then cut before the swap
    shard.rename(shard.with_name(name + ".old"))
    async with edge_spaces(tmp_path, "shared") as spaces:
        assert await spaces.get(ALICE, [memory.id]) == [memory]
    assert sorted(p.name for p in (tmp_path / "edge").iterdir() if name in p.name) == [name]
    shutil.copytree(shard, shard.with_name(name + ".vacuum"))  # a rebuild cut short: dropped
    async with edge_spaces(tmp_path, "shared") as spaces:
        assert await spaces.count(ALICE) == 1
    assert not shard.with_name(name + ".vacuum").exists()


async def test_a_shard_held_elsewhere_is_the_one_line_in_use_error(tmp_path: Path) -> None:
    async with edge_spaces(tmp_path, "shared") as spaces:
        await spaces.upsert([record(ALICE, "I live in Turin")])
        name = spaces.collection(ALICE)
    held = edge.EdgeShard.load(str(tmp_path / "edge" / name))  # the WAL lock, not the root's
    try:
        with pytest.raises(errors.StoreUnavailable, match="in use by another process"):
            async with edge_spaces(tmp_path, "shared") as spaces:
                await spaces.count(ALICE)
    finally:
        held.close()
    with pytest.raises(errors.StoreUnavailable, match="in use by another process"):
        async with edge_spaces(tmp_path, "shared"):
            qdrant_edge.EdgeClient(tmp_path / "edge")  # the root lock
    cfg = settings(tmp_path)
    async with await qdrant.open_spaces(cfg, embedders.OfflineHashEmbedder()) as opened:
        assert isinstance(opened.client, qdrant_edge.EdgeClient) and opened.layout == "shared"


async def test_the_shared_shards_load_at_start_so_no_turn_waits_for_them(tmp_path: Path) -> None:
    async with edge_spaces(tmp_path, "shared") as spaces:
        await spaces.upsert([record(ALICE, "I live in Turin"), record(STREAM, "we talked")])
    async with edge_spaces(tmp_path, "shared") as spaces:
        engine = spaces.client.engine
        assert engine.open_names() == []  # opening reads the side files only
        assert await spaces.preload() == 2
        assert sorted(engine.open_names()) == ["lm_shared_stream", "lm_shared_viewer"]
    async with edge_spaces(tmp_path / "per", "per_space") as spaces:
        await spaces.upsert([record(ALICE, "I live in Turin")])
        assert await spaces.preload() == 0  # a shard per viewer loads when used


async def test_warming_the_shared_layout_reads_a_viewers_points_at_most_once_a_minute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with edge_spaces(tmp_path, "shared") as spaces:
        await spaces.upsert([record(ALICE, f"memory {i} about Turin") for i in range(3)])
        await spaces.upsert([record(BOB, "I live in Turin")])
        engine = spaces.client.engine
        read: list[int] = []
        touch = engine.touch

        async def counted(name: str, where: Any) -> int:
            read.append(await touch(name, where))
            return read[-1]

        monkeypatch.setattr(engine, "touch", counted)
        assert await spaces.warm([ALICE, BOB]) == 0  # the shard was loaded already
        await spaces.warm([ALICE])  # read a moment ago: not again
        assert read == [3, 1]  # each viewer's own points, every one of them
        assert [h.record.text for h in await spaces.search(BOB, "Turin")] == ["I live in Turin"]


async def test_reads_run_on_the_event_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Edge's binding holds the GIL for every call: a worker thread would only add its hop."""
    async with edge_spaces(tmp_path, "shared") as spaces:
        memory = record(ALICE, "I live in Turin")
        await spaces.upsert([memory])

        def no_thread(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("a read went to a worker thread")

        with monkeypatch.context() as patched:  # writes and closes still go to threads
            patched.setattr(asyncio, "to_thread", no_thread)
            assert [h.record.id for h in await spaces.search(ALICE, "Turin")] == [memory.id]
            assert await spaces.get(ALICE, [memory.id]) == [memory]
            assert await spaces.count(ALICE) == 1
            assert await spaces.list(ALICE) == [memory]
            assert await spaces.spaces() == [ALICE]


async def test_only_the_shards_written_since_they_loaded_are_flushed_at_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with edge_spaces(tmp_path, "shared") as spaces:
        await spaces.upsert([record(ALICE, "I live in Turin"), record(STREAM, "we talked")])
    close = edge_shards.close
    async with edge_spaces(tmp_path, "shared") as spaces:
        assert await spaces.preload() == 2
        await spaces.upsert([record(ALICE, "I moved to Rome")])
        flushes: list[bool] = []

        def counted(shard: edge.EdgeShard, *, flush: bool = True) -> None:
            flushes.append(flush)
            close(shard, flush=flush)

        monkeypatch.setattr(edge_shards, "close", counted)
    assert sorted(flushes) == [False, True]  # the stream shard was only read
    async with edge_spaces(tmp_path, "shared") as spaces:  # and nothing was lost
        assert await spaces.count(ALICE) == 2
        assert await spaces.count(STREAM) == 1


def _previous_release(shard: Path) -> None:
    """Put ``shard`` back the way the previous release left shards: Edge's default placement
    (vectors and payload indexes in RAM), no placement mark in its side file."""
    side = json.loads((shard / "collection.json").read_text(encoding="utf-8"))
    del side["placement"]
    (shard / "collection.json").write_text(json.dumps(side), encoding="utf-8")
    dense = edge.EdgeVectorParams(size=384, distance=edge.Distance.Cosine)
    sparse = edge.EdgeSparseVectorParams(modifier=edge.Modifier.Idf)
    old = edge.EdgeConfig(vectors={"dense": dense}, sparse_vectors={"lexical": sparse})
    loaded = edge.EdgeShard.load(str(shard), old)
    for field, index in side["indexes"].items():
        params: Any = {"keyword": edge.PayloadSchemaType.Keyword}.get(index["type"])
        if index.get("is_tenant"):
            params = edge.KeywordIndexParams(is_tenant=True)
        loaded.update(
            edge.UpdateOperation.create_field_index(
                field, params or edge.PayloadSchemaType.Datetime
            )
        )
    loaded.flush()
    loaded.close()


def _placements(shard: Path) -> set[str | None]:
    found: set[str | None] = set()
    for config in shard.glob("segments/*/payload_index/config.json"):
        fields = json.loads(config.read_text(encoding="utf-8"))["indexed_fields"]
        found |= {f.get("memory") if isinstance(f, dict) else None for f in fields.values()}
    vectors = json.loads((shard / "edge_config.json").read_text(encoding="utf-8"))["vectors"]
    return found | {vectors["dense"].get("memory")}


async def test_a_shard_of_the_previous_release_opens_and_moves_to_disk_at_close(
    tmp_path: Path,
) -> None:
    memories = [record(ALICE, "I live in Turin"), record(ALICE, "my cat is called Miso")]
    async with edge_spaces(tmp_path, "shared") as spaces:
        await spaces.upsert(memories)
        name = spaces.collection(ALICE)
    shard = tmp_path / "edge" / name
    assert _placements(shard) == {"cold"}
    _previous_release(shard)
    assert _placements(shard) == {None}
    async with edge_spaces(tmp_path, "shared") as spaces:  # read only: settled at close anyway
        assert sorted(await spaces.get(ALICE, [m.id for m in memories]), key=memories.index) == (
            memories
        )
        assert [h.record.id for h in await spaces.search(ALICE, "Turin")][:1] == [memories[0].id]
    assert _placements(shard) == {"cold"}
    side = json.loads((shard / "collection.json").read_text(encoding="utf-8"))
    assert side["placement"] == 1
    async with edge_spaces(tmp_path, "shared") as spaces:
        assert await spaces.count(ALICE) == 2


def _wal_segments(shard: Path) -> set[int]:
    return {p.stat().st_size for p in (shard / "wal").iterdir() if p.name.startswith("open-")}


async def test_a_shards_wal_segments_are_small_from_its_creation_and_after_an_upgrade(
    tmp_path: Path,
) -> None:
    """Edge takes the WAL's options only from its ``edge_config.json``: a segment of Edge's
    default 32 MB would be read whole into memory at every load once the log rotates."""
    capacity = edge_shards.WAL_OPTIONS["segment_capacity"]
    async with edge_spaces(tmp_path, "shared") as spaces:
        await spaces.upsert([record(ALICE, "I live in Turin")])
        shard = tmp_path / "edge" / spaces.collection(ALICE)
    assert _wal_segments(shard) == {capacity}
    # a shard made with Edge's defaults (an earlier release): its segments made from now on
    config = json.loads((shard / "edge_config.json").read_text(encoding="utf-8"))
    del config["wal_options"]
    (shard / "edge_config.json").write_text(json.dumps(config), encoding="utf-8")
    async with edge_spaces(tmp_path, "shared") as spaces:
        assert await spaces.count(ALICE) == 1
    recorded = json.loads((shard / "edge_config.json").read_text(encoding="utf-8"))
    assert recorded["wal_options"] == edge_shards.WAL_OPTIONS


async def test_a_shard_searches_with_one_thread_from_its_creation_and_after_an_upgrade(
    tmp_path: Path,
) -> None:
    """Edge's default search pool (a thread per CPU) made a viewer's search slower, not faster
    (``edge_models.SEARCH_THREADS``); a shard of an earlier release gets the one thread at load."""
    async with edge_spaces(tmp_path, "shared") as spaces:
        await spaces.upsert([record(ALICE, "I live in Turin")])
        shard = tmp_path / "edge" / spaces.collection(ALICE)
    config_file = shard / "edge_config.json"
    config = json.loads(config_file.read_text(encoding="utf-8"))
    assert config["max_search_threads"] == edge_models.SEARCH_THREADS == 1
    del config["max_search_threads"]
    config_file.write_text(json.dumps(config), encoding="utf-8")
    async with edge_spaces(tmp_path, "shared") as spaces:
        assert [h.record.text for h in await spaces.search(ALICE, "Turin")] == ["I live in Turin"]
    assert json.loads(config_file.read_text(encoding="utf-8"))["max_search_threads"] == 1


def _indexed(shard: Path) -> set[str]:
    loaded = edge.EdgeShard.load(str(shard), None)
    try:
        return set(loaded.info().payload_schema)
    finally:
        loaded.close()


async def test_payload_indexes_are_built_once_a_shard_is_big_enough_and_dropped_below(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each index costs a shard ~4 MB of memory however few points it holds; a small shard's
    filtered reads (lookups by turn, counts, the list of spaces) are the same without them, but
    for the ones searches filter by (``edge_models.SEARCHED``), which it has from the start."""
    monkeypatch.setattr(edge_models, "INDEX_AT", 4)
    first = [record(ALICE, "I live in Turin"), record(BOB, "I live in Rome")]
    later = [record(ALICE, "my cat is called Miso"), record(BOB, "I play chess")]
    async with edge_spaces(tmp_path, "shared") as spaces:
        await spaces.upsert(first)
        shard = tmp_path / "edge" / spaces.collection(ALICE)
        assert isinstance(spaces.client, qdrant_edge.EdgeClient)
        engine = spaces.client.engine
        searched = {"tenant", "superseded_by", "said_at", "kind"}
        assert set(engine._shards[shard.name].info().payload_schema) == searched
        assert [h.record.id for h in await spaces.search(BOB, "where do I live")] == [first[1].id]
        assert await spaces.spaces() == sorted([ALICE, BOB])
        await spaces.upsert(later)  # the fourth point: the indexes are built at once
        assert "turn_id" in engine._shards[shard.name].info().payload_schema
        assert [h.record.text for h in await spaces.search(ALICE, "my cat")][:1] == [later[0].text]
        assert await spaces.spaces() == sorted([ALICE, BOB])
        assert await spaces.count(BOB) == 2
    side = json.loads((shard / "collection.json").read_text(encoding="utf-8"))
    assert _indexed(shard) == set(side["indexes"]) == {
        "turn_id", "kind", "superseded_by", "said_at", "tenant"
    }  # fmt: skip
    async with edge_spaces(tmp_path, "shared") as spaces:
        assert await spaces.delete(BOB, [m.id for m in (first[1], later[1])]) == 2
    async with edge_spaces(tmp_path, "shared") as spaces:  # below the size at this load
        assert await spaces.spaces() == [ALICE]
        assert await spaces.count(ALICE) == 2
    assert _indexed(shard) == {"tenant", "superseded_by", "said_at", "kind"}


async def test_a_small_shard_of_the_per_space_layout_has_no_payload_index(tmp_path: Path) -> None:
    """A shard per viewer, many open at once: the searched indexes (~17 MB each shard) wait for
    its size too, as the other indexes do."""
    async with edge_spaces(tmp_path, "per_space") as spaces:
        await spaces.upsert([record(ALICE, "I live in Turin"), record(ALICE, "I play chess")])
        shard = tmp_path / "edge" / spaces.collection(ALICE)
        assert [h.record.text for h in await spaces.search(ALICE, "chess")][:1] == ["I play chess"]
    assert _indexed(shard) == set()


@pytest.mark.parametrize("layout", ["per_space", "shared"])
async def test_a_point_keeps_no_null_or_empty_payload_key_and_reads_back_whole(
    tmp_path: Path, layout: str
) -> None:
    """Edge parses every key of every candidate a search reads: a memory's empty fields are
    left out of its point (``store.stored_payload``) and read back as their defaults."""
    memory = record(ALICE, "I live in Turin", login="alice", user_id="1001")
    async with edge_spaces(tmp_path, layout) as spaces:
        await spaces.upsert([memory])
        [point] = await spaces.client.retrieve(spaces.collection(ALICE), ids=[memory.id])
        payload = point.payload or {}
        assert {k for k, v in payload.items() if v in (None, [], {})} == set()
        assert "superseded_by" not in payload and "extra" not in payload
        assert await spaces.get(ALICE, [memory.id]) == [memory]
        assert [h.record for h in await spaces.search(ALICE, "Turin")] == [memory]
        # marked superseded, then not: the mark is set, then emptied, and the filter follows
        assert await spaces.supersede(ALICE, [memory.id], by=str(uuid.uuid4()), at=T0) == 1
        assert await spaces.search(ALICE, "Turin") == []
        assert await spaces.unsupersede(ALICE, [memory.id]) == 1
        assert [h.record for h in await spaces.search(ALICE, "Turin")] == [memory]
