"""Upgrading the embedded store: qdrant-client local-mode folders of earlier releases into Qdrant Edge.

``tests/data/qdrant-local-mode-0595cdf.tar.gz`` is ``<data_dir>/qdrant`` as the release at commit
0595cdf wrote it (``qdrant_local.FolderClient``, the per-space layout: a local-mode folder per
collection; its pickled snapshots left out): three viewers with three memories each (one of alice's
superseded), an episode, a lore entry. The single-folder layout of the releases before is written
here with qdrant-client's local mode, which reads and writes that format unchanged.
"""

from __future__ import annotations

import fcntl
import io
import tarfile
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from qdrant_client import AsyncQdrantClient

from memory import errors, identity
from memory.adapters import qdrant, qdrant_migrate
from memory.ops import admin
from memory.spaces import embedders, lexical, records
from tests.conftest import IsolatedSettings
from tests.test_spaces import record

if TYPE_CHECKING:
    from config.settings import Settings
    from tests.conftest import SettingsFactory

FIXTURE = Path(__file__).parent / "data" / "qdrant-local-mode-0595cdf.tar.gz"
ALICE = identity.personal_key("1001")


def unpack(data_dir: Path) -> None:
    data_dir.mkdir(parents=True)
    with tarfile.open(FIXTURE) as archive:
        archive.extractall(data_dir, filter="data")


async def everything(settings: Settings) -> dict[str, set[str]]:
    async with await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder()) as opened:
        return {s: {r.text for r in await opened.list(s)} for s in await opened.spaces()}


async def test_the_first_start_migrates_a_folder_of_the_previous_release(tmp_path: Path) -> None:
    settings = IsolatedSettings(data_dir=tmp_path / "data")
    unpack(settings.data_dir)
    held = await everything(settings)  # opening the spaces migrates
    assert sorted(held) == [
        "lore", "stream:s1", "viewer:1001", "viewer:1002", "viewer:1003"
    ]  # fmt: skip
    assert held[ALICE] == {
        "alice: I moved to Turin last year", "alice: my cat is called Miso0", "alice: I play the bass"
    }  # fmt: skip
    assert not (settings.data_dir / "qdrant").exists()
    assert not (settings.data_dir / qdrant_migrate.MIGRATING).exists()
    async with await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder()) as opened:
        assert opened.layout == "shared"  # the embedded default now
        assert opened.sparse is lexical.ENCODER  # its vectors' scheme, kept (default: Bm25)
        hits = await opened.search(ALICE, "where did alice move to? Turin", limit=5)
        texts = [h.record.text for h in hits]  # the superseded memory stays out of recall
        assert "alice: I moved to Turin last year" not in texts and texts
        past = await opened.search(ALICE, "Turin", limit=5, include_superseded=True)
        assert past[0].record.text == "alice: I moved to Turin last year"
        assert past[0].record.superseded_by is not None


async def test_an_interrupted_migration_continues_and_keeps_the_old_store_until_verified(
    tmp_path: Path,
) -> None:
    settings = IsolatedSettings(data_dir=tmp_path / "data")
    unpack(settings.data_dir)
    old = settings.data_dir / "qdrant"
    # a migration stopped half-way: the folder renamed, one viewer's folder copied already
    migrating = old.rename(settings.data_dir / qdrant_migrate.MIGRATING)
    partial = tmp_path / "partial"
    partial.mkdir()
    (migrating / "spaces" / "lm_viewer_1002").rename(partial / "lm_viewer_1002")
    report = await qdrant_migrate.migrate(settings.model_copy(update={"data_dir": tmp_path / "x"}))
    assert report is None  # nothing to migrate there
    (partial / "lm_viewer_1002").rename(migrating / "spaces" / "lm_viewer_1002")
    bar = io.StringIO()
    report = await qdrant_migrate.migrate(settings, keep_old=True, progress=bar)
    assert report is not None and report.memories == 11 and report.copied == 11
    assert (settings.data_dir / qdrant_migrate.KEPT / "spaces").is_dir()
    # run again over the kept copy: every id is there already, nothing is written twice
    (settings.data_dir / qdrant_migrate.KEPT).rename(migrating)
    again = await qdrant_migrate.migrate(settings)
    assert again is not None and (again.memories, again.copied) == (11, 0)
    assert len((await everything(settings))[ALICE]) == 3


async def test_the_single_folder_layout_in_the_shared_layout_is_migrated(tmp_path: Path) -> None:
    settings = IsolatedSettings(data_dir=tmp_path / "data", qdrant={"layout": "shared"})
    client = AsyncQdrantClient(path=str(settings.data_dir / "qdrant"))
    memories = [record(identity.personal_key(str(i)), f"viewer {i} likes Turin") for i in range(4)]
    async with await qdrant.open_spaces(
        settings, embedders.OfflineHashEmbedder(), client=client
    ) as old:
        await old.upsert(memories)
    await client.close()
    assert (settings.data_dir / "qdrant" / "meta.json").is_file()
    per_space = IsolatedSettings(data_dir=settings.data_dir, qdrant={"layout": "per_space"})
    held = await everything(per_space)  # and the layout changed on the way
    assert held == {m.space: {m.text} for m in memories}


async def test_the_admin_command_migrates_and_a_store_in_use_is_refused(
    tmp_path: Path, make_settings: SettingsFactory
) -> None:
    settings = make_settings()
    unpack(settings.data_dir)
    out, err = io.StringIO(), io.StringIO()
    argv = ["migrate-qdrant", "--json"]
    code = await admin.run(argv, settings=settings, stdin=io.StringIO(), stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    assert '"memories": 11' in out.getvalue()
    again = IsolatedSettings(data_dir=tmp_path / "again")
    unpack(again.data_dir)
    # a process of the previous release holds the old store
    with (again.data_dir / "qdrant" / ".lock").open("a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(errors.StoreUnavailable, match="in use by another process"):
            await qdrant_migrate.migrate(again)
    assert (again.data_dir / "qdrant" / "spaces").is_dir()  # untouched


async def test_memories_stored_before_said_at_are_found_by_a_time_window(tmp_path: Path) -> None:
    settings = IsolatedSettings(data_dir=tmp_path / "data", qdrant={"layout": "shared"})
    client = AsyncQdrantClient(path=str(settings.data_dir / "qdrant"))
    memory = record(ALICE, "alice: I baked bread")
    async with await qdrant.open_spaces(
        settings, embedders.OfflineHashEmbedder(), client=client
    ) as old:
        await old.upsert([memory])
        name = old.collection(ALICE)
    await client.delete_payload(name, keys=["said_at"], points=[memory.id])  # as releases before
    await client.close()
    window = records.TimeWindow(since=memory.said_at, until=memory.said_at + timedelta(days=1))
    async with await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder()) as opened:
        hits = await opened.search(ALICE, "what did I bake", limit=5, window=window)
    assert [h.record.id for h in hits] == [memory.id]
