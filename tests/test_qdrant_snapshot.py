"""Embedded Qdrant folders open from a snapshot of their loaded state (issue 15)."""

from __future__ import annotations

import copy
import dataclasses
import logging
import pickle
from typing import TYPE_CHECKING, Any

import numpy as np
from qdrant_client import AsyncQdrantClient
from qdrant_client import models as qm
from qdrant_client.local import async_qdrant_local

from memory import identity
from memory.adapters import qdrant_snapshot
from tests.test_qdrant_folders import memory, open_spaces, router

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

    from memory.adapters import qdrant

USER = "4100"
SPACE = identity.personal_key(USER)


def same(a: Any, b: Any) -> bool:
    """Deep equality over what a loaded collection holds (arrays compared by dtype and values)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and np.array_equal(a, b)
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def folder_of(spaces: qdrant.QdrantSpaces) -> Path:
    return router(spaces).folders / spaces.collection(SPACE)


async def texts(spaces: qdrant.QdrantSpaces) -> list[str]:
    return sorted(r.text for r in await spaces.list(SPACE))


async def fill(tmp_path: Path) -> None:
    """A space whose history has every kind of write: upserts, a correction, a deletion."""
    async with await open_spaces(tmp_path) as spaces:
        first = [memory(USER, f"I have {n} cats") for n in range(5)]
        await spaces.upsert(first)
        fix = dataclasses.replace(
            memory(USER, "I have 7 cats"), corrects=first[0].id
        )  # sets corrected_by on the first
        await spaces.upsert([fix, memory(USER, "I play the cello")])
        await spaces.delete(SPACE, [first[1].id])


async def test_a_folder_opens_from_its_snapshot_exactly_as_it_would_load(tmp_path: Path) -> None:
    await fill(tmp_path)
    async with await open_spaces(tmp_path) as spaces:
        folders, folder, name = router(spaces), folder_of(spaces), spaces.collection(SPACE)
        assert qdrant_snapshot.path_of(folder).is_file()  # rebuilt when the writer closed it
        assert await spaces.warm([SPACE]) == 1
        assert folders.from_snapshot == 2  # the manifest's folder and this one
        # its state before any search (a cosine search normalizes the vectors in place)
        fast = copy.deepcopy(
            {k: v for k, v in vars(folders._open[name].collections[name]).items() if k != "storage"}
        )
        hits = await spaces.search(SPACE, "how many cats", limit=3)
    plain = async_qdrant_local.AsyncQdrantLocal(str(folder))  # the usual load, bot closed
    try:
        slow = plain.collections[name]
        assert same({k: v for k, v in vars(slow).items() if k != "storage"}, fast)
    finally:
        await plain.close()
    qdrant_snapshot.remove(folder)
    async with await open_spaces(tmp_path) as spaces:  # the same search, the usual way
        assert await spaces.search(SPACE, "how many cats", limit=3) == hits
        assert router(spaces).from_snapshot == 1
    assert "I have 1 cats" not in [h.record.text for h in hits]  # the deleted one


async def test_a_write_removes_the_snapshot_and_closing_rebuilds_it(tmp_path: Path) -> None:
    secret = "zqsnapshotsecret17"
    async with await open_spaces(tmp_path) as spaces:
        doomed = memory(USER, f"my password is {secret}")
        await spaces.upsert([doomed, memory(USER, "I like tea")])
    async with await open_spaces(tmp_path) as spaces:
        snapshot = qdrant_snapshot.path_of(folder_of(spaces))
        assert secret.encode() in snapshot.read_bytes()
        await spaces.delete(SPACE, [doomed.id])
        assert not snapshot.exists()  # removed before the deletion ran
        await spaces.vacuum([SPACE])
    assert secret.encode() not in snapshot.read_bytes()
    async with await open_spaces(tmp_path) as spaces:
        assert await texts(spaces) == ["I like tea"]
        assert router(spaces).from_snapshot == 2


async def test_a_folder_changed_behind_its_snapshot_opens_the_usual_way(tmp_path: Path) -> None:
    await fill(tmp_path)
    async with await open_spaces(tmp_path) as spaces:
        folder, name = folder_of(spaces), spaces.collection(SPACE)
    # another writer (an older livememory, say) adds a point and leaves the snapshot as it was
    other = AsyncQdrantClient(path=str(folder))
    [kept] = (await other.scroll(name, limit=1, with_payload=True, with_vectors=True))[0]
    added = qm.PointStruct(
        id="00000000-0000-4000-8000-000000000001",
        vector=kept.vector,
        payload={**(kept.payload or {}), "id": "00000000-0000-4000-8000-000000000001",
                 "text": "I moved to Oslo"},
    )  # fmt: skip
    await other.upsert(name, points=[added])
    await other.close()
    async with await open_spaces(tmp_path) as spaces:
        assert "I moved to Oslo" in await texts(spaces)
        assert router(spaces).from_snapshot == 1  # the manifest only: this folder loaded
    async with await open_spaces(tmp_path) as spaces:  # and the load wrote a current snapshot
        assert "I moved to Oslo" in await texts(spaces)
        assert router(spaces).from_snapshot == 2


async def test_a_damaged_or_foreign_snapshot_is_not_used(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    await fill(tmp_path)
    async with await open_spaces(tmp_path) as spaces:
        snapshot = qdrant_snapshot.path_of(folder_of(spaces))
        expected = await texts(spaces)
    with snapshot.open("rb") as handle:
        header, state = pickle.load(handle), pickle.load(handle)
    snapshot.write_bytes(
        pickle.dumps({**header, "qdrant_client": "0.0.1"}) + pickle.dumps(state)
    )  # another qdrant-client version's internals
    async with await open_spaces(tmp_path) as spaces:
        assert await texts(spaces) == expected
        assert router(spaces).from_snapshot == 1
    snapshot.write_bytes(b"not a pickle at all")
    with caplog.at_level(logging.WARNING, logger="memory.adapters.qdrant_snapshot"):
        async with await open_spaces(tmp_path) as spaces:
            assert await texts(spaces) == expected
            assert router(spaces).from_snapshot == 1
    assert any("opening the folder the usual way" in r.getMessage() for r in caplog.records)


async def test_an_evicted_folder_reopens_after_its_snapshot_is_rebuilt(tmp_path: Path) -> None:
    async with await open_spaces(tmp_path, max_open=2) as spaces:
        folders = router(spaces)
        users = [str(4200 + i) for i in range(4)]
        for user in users:  # each write, then eviction: a rebuild each
            await spaces.upsert([memory(user, f"my number is {user}")])
        for user in users:  # reopening waits for the rebuild, then opens from it
            [hit] = await spaces.search(identity.personal_key(user), user, limit=1)
            assert hit.record.text == f"my number is {user}"
        assert folders.from_snapshot >= 3


async def test_a_write_ahead_log_or_a_half_written_copy_never_serves_old_memories(
    tmp_path: Path,
) -> None:
    secret = "zqhalfwrittencopy23"
    async with await open_spaces(tmp_path) as spaces:
        doomed = memory(USER, f"my code is {secret}")
        await spaces.upsert([doomed, memory(USER, "I like tea")])
        folder, name = folder_of(spaces), spaces.collection(SPACE)
    # a crash while writing a snapshot leaves its temporary copy; the next write takes it away
    leftover = folder / f".{qdrant_snapshot.SNAPSHOT}.0123abcd"
    leftover.write_bytes(qdrant_snapshot.path_of(folder).read_bytes())
    async with await open_spaces(tmp_path) as spaces:
        await spaces.delete(SPACE, [doomed.id])
        assert not leftover.exists()
    # writes SQLite has in a write-ahead log are not in the file the stamp reads: no snapshot then
    wal = folder / "collection" / name / "storage.sqlite-wal"
    wal.touch()
    async with await open_spaces(tmp_path) as spaces:
        assert await texts(spaces) == ["I like tea"]
        assert router(spaces).from_snapshot == 1
    copies = [p for p in folder.iterdir() if qdrant_snapshot.SNAPSHOT in p.name]
    assert not any(secret.encode() in p.read_bytes() for p in copies)  # (SQLite: vacuum's test)
