"""Embedded Qdrant with a folder per collection: opens what it needs (issue 15)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest
from qdrant_client import AsyncQdrantClient
from qdrant_client import models as qm

from memory import errors, identity
from memory.adapters import qdrant, qdrant_local
from memory.spaces import embedders, records
from memory.spaces import store as spaces_module
from tests.conftest import IsolatedSettings

if TYPE_CHECKING:
    from pathlib import Path

T0 = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)


def memory(user_id: str, text: str) -> records.MemoryRecord:
    return records.MemoryRecord(
        id=str(uuid.uuid4()),
        space=identity.personal_key(user_id),
        kind=records.MemoryKind.PERSONAL,
        text=text,
        turn_id=f"turn-{user_id}",
        user_id=user_id,
        created_at=T0,
    )


async def open_spaces(tmp_path: Path, max_open: int = 128) -> qdrant.QdrantSpaces:
    settings = IsolatedSettings(data_dir=tmp_path / "data", qdrant={"local_max_open": max_open})
    return await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder())


def router(spaces: qdrant.QdrantSpaces) -> qdrant_local.FolderRouter:
    assert isinstance(spaces.client, qdrant_local.FolderClient)
    return spaces.client.router


async def test_reopening_opens_no_viewer_until_one_is_read(tmp_path: Path) -> None:
    async with await open_spaces(tmp_path) as spaces:
        await spaces.upsert([memory(str(1000 + i), f"I like colour {i}") for i in range(20)])
    async with await open_spaces(tmp_path) as spaces:
        folders = router(spaces)
        assert folders.open_names() == [spaces_module.manifest_collection(spaces.prefix)]
        hits = await spaces.search(identity.personal_key("1007"), "colour 7", limit=1)
        assert [h.record.text for h in hits] == ["I like colour 7"]
        assert spaces.collection(identity.personal_key("1007")) in folders.open_names()
        assert not any(
            spaces.collection(identity.personal_key(str(1000 + i))) in folders.open_names()
            for i in range(20)
            if i != 7
        )
        assert await spaces.count(identity.personal_key("999")) == 0  # unknown: nothing opened
        assert folders.opened == 2


async def test_a_new_space_writes_a_metadata_file_of_its_own(tmp_path: Path) -> None:
    async with await open_spaces(tmp_path) as spaces:
        await spaces.upsert([memory(str(1000 + i), "hello there") for i in range(30)])
        await spaces.upsert([memory("5000", "I am new here")])
        folder = router(spaces).folders / spaces.collection(identity.personal_key("5000"))
        meta = json.loads((folder / "meta.json").read_text())
        assert list(meta["collections"]) == [spaces.collection(identity.personal_key("5000"))]


async def test_least_recently_used_folders_close_and_reopen(tmp_path: Path) -> None:
    async with await open_spaces(tmp_path, max_open=2) as spaces:
        users = [str(2000 + i) for i in range(5)]
        for user in users:
            await spaces.upsert([memory(user, f"my number is {user}")])
        assert len(router(spaces).open_names()) <= 2
        for user in users:
            [hit] = await spaces.search(identity.personal_key(user), user, limit=1)
            assert hit.record.user_id == user
        assert len(router(spaces).open_names()) <= 2
        assert await spaces.drop(identity.personal_key(users[0])) == 1
        assert await spaces.count(identity.personal_key(users[0])) == 0
        assert await spaces.count(identity.personal_key(users[1])) == 1


async def test_a_single_folder_root_is_split_into_folders(tmp_path: Path) -> None:
    root = tmp_path / "data" / "qdrant"
    legacy = AsyncQdrantClient(path=str(root))
    for name in ("alpha", "beta"):
        await legacy.create_collection(
            name, vectors_config=qm.VectorParams(size=2, distance=qm.Distance.COSINE)
        )
        await legacy.upsert(name, points=[qm.PointStruct(id=1, vector=[1.0, 0.0], payload={})])
    await legacy.close()
    client = qdrant_local.FolderClient(root)
    try:
        assert client.router.collection_names() == ["alpha", "beta"]
        assert (await client.count("beta")).count == 1
        assert not (root / "meta.json").exists()
    finally:
        await client.close()


async def test_one_process_at_a_time(tmp_path: Path) -> None:
    client = qdrant_local.FolderClient(tmp_path / "q")
    try:
        with pytest.raises(errors.StoreUnavailable, match="in use by another process"):
            qdrant_local.FolderClient(tmp_path / "q")
    finally:
        await client.close()
    await qdrant_local.FolderClient(tmp_path / "q").close()  # released on close


async def test_lookups_by_memory_id_open_only_the_spaces_named(tmp_path: Path) -> None:
    records_ = [memory(str(3000 + i), f"fact number {i}") for i in range(10)]
    async with await open_spaces(tmp_path) as spaces:
        await spaces.upsert(records_)
    target = records_[4]
    async with await open_spaces(tmp_path) as spaces:
        found = await spaces.find(target.id, spaces=[target.space])
        assert found is not None and found.text == "fact number 4"
        assert router(spaces).opened == 2  # the manifest and that viewer
        assert await spaces.delete_turn("turn-3004", spaces=[target.space]) == 1
        assert router(spaces).opened == 2
        assert await spaces.find(target.id) is None  # no hint: every space is looked at
        assert await spaces.find(records_[5].id) is not None


async def test_a_collection_in_both_layouts_is_refused_not_overwritten(tmp_path: Path) -> None:
    root = tmp_path / "q"
    await qdrant_local.FolderClient(root).close()
    for path in (root, root / "spaces" / "alpha"):  # an older version wrote alpha again
        legacy = AsyncQdrantClient(path=str(path))
        await legacy.create_collection(
            "alpha", vectors_config=qm.VectorParams(size=2, distance=qm.Distance.COSINE)
        )
        await legacy.close()
    with pytest.raises(errors.StoreUnavailable, match="alpha twice"):
        qdrant_local.FolderClient(root)
    assert (root / "meta.json").exists()  # nothing moved


async def test_vacuum_leaves_no_byte_of_a_deleted_point(tmp_path: Path) -> None:
    """Issue 10: qdrant-client's local mode deletes with SQL ``DELETE``; SQLite builds without
    ``SECURE_DELETE`` (this machine's Debian build has it, others do not) keep the bytes in free
    pages. The storage is put in that mode here, so only ``vacuum`` can remove them."""
    space = identity.personal_key("1001")
    gone = "zqdeletedpoint42"
    async with await open_spaces(tmp_path) as spaces:
        doomed, kept = memory("1001", f"my word is {gone}"), memory("1001", "I said hello")
        name = spaces.collection(space)
        await spaces.upsert([doomed, kept])
        storage = router(spaces)._open[name].collections[name].storage
        assert storage is not None
        storage.storage.execute("PRAGMA secure_delete=OFF")
        await spaces.delete(space, [doomed.id])
        files = sorted((tmp_path / "data" / "qdrant").rglob(qdrant_local.STORAGE))
        assert any(gone.encode() in path.read_bytes() for path in files)  # still on disk

        assert await spaces.vacuum([space, identity.episodic_key("never")]) == 1
        assert not any(gone.encode() in path.read_bytes() for path in files)
        # the open client goes on reading and writing the vacuumed file
        assert [r.text for r in await spaces.list(space)] == ["I said hello"]
        await spaces.upsert([dataclasses.replace(kept, text="I said nothing")])
        await spaces.upsert([memory("1001", "I like tea")])
    async with await open_spaces(tmp_path) as spaces:
        assert sorted(r.text for r in await spaces.list(space)) == ["I like tea", "I said nothing"]


async def test_warm_opens_named_folders_ahead_and_a_search_reuses_them(tmp_path: Path) -> None:
    async with await open_spaces(tmp_path) as spaces:
        await spaces.upsert([memory(str(3000 + i), f"my pet is called Rex {i}") for i in range(4)])
    async with await open_spaces(tmp_path) as spaces:
        folders = router(spaces)
        wanted = [identity.personal_key("3001"), identity.personal_key("3002")]
        unknown = identity.personal_key("9999")  # no folder: skipped, nothing created
        assert await spaces.warm([*wanted, wanted[0], unknown]) == 2
        assert sorted(folders.open_names()[1:]) == sorted(spaces.collection(k) for k in wanted)
        assert not (folders.folders / spaces.collection(unknown)).exists()
        opened = folders.opened
        hits = await spaces.search(wanted[0], "pet", limit=1)
        assert [h.record.text for h in hits] == ["my pet is called Rex 1"]
        assert folders.opened == opened  # the search found the folder open
        assert await spaces.warm(wanted) == 0  # already open: nothing to do


async def test_a_search_during_a_warm_waits_for_that_opening(tmp_path: Path) -> None:
    async with await open_spaces(tmp_path) as spaces:
        await spaces.upsert([memory("3100", "I live in Lyon")])
    async with await open_spaces(tmp_path) as spaces:
        folders = router(spaces)
        key = identity.personal_key("3100")
        warming = asyncio.create_task(spaces.warm([key]))
        await asyncio.sleep(0)  # the warm has started opening the folder
        hits = await spaces.search(key, "where do you live", limit=1)
        assert [h.record.text for h in hits] == ["I live in Lyon"]
        assert await warming == 1
        assert folders.opened == 2  # manifest + this folder, once


async def test_warm_is_bounded_by_the_open_folder_limit(tmp_path: Path) -> None:
    async with await open_spaces(tmp_path, max_open=2) as spaces:
        await spaces.upsert([memory(str(3200 + i), "hi") for i in range(4)])
    async with await open_spaces(tmp_path, max_open=2) as spaces:
        keys = [identity.personal_key(str(3200 + i)) for i in range(4)]
        assert await spaces.warm(keys) == 4
        assert len(router(spaces).open_names()) == 2
