"""A local-mode folder's loaded state, kept so that opening it skips the load (issue 15).

Opening a local-mode folder loads every point the slow way: each one is unpickled (a ``PointStruct``
with its vector as a list of floats), its payload copied through JSON, and the vectors stacked into
an array: 5–7 ms for a viewer's 100 memories (12–23 ms p50 from disk). A cold memory stage that
opens three viewers' folders spent most of its time there. A snapshot is the collection as a fresh
load leaves it (vector arrays, payloads, ids, sparse-vector IDF counts), pickled into one file next
to the folder's ``meta.json``; opening from it takes 1.1–1.7 ms (2 ms from disk):
``memory.eval.scale.folder_opening``, figures in ``docs/evaluation.md``.

A snapshot is a copy, never the record:

* it is used only when everything it was read from is unchanged: the qdrant-client version that
  wrote it (the state is that version's internals), the folder's ``meta.json`` and
  the SQLite file of the points (size, modification time, inode and SQLite's change counter);
  anything else, or a file that does not unpickle, and the folder opens the usual way;
* a write to the folder removes it first (``FolderRouter``), so a forgotten text never outlives its
  point in a snapshot; closing a folder that was written to builds a new one in a worker thread from
  what SQLite holds (``rebuild``); the usual way of opening writes one too;
* it is written under a temporary name and renamed into place.

``SnapshotLocal`` is qdrant-client's ``AsyncQdrantLocal`` with that first step. A folder opened
from a snapshot does not take the folder's own lock file: the root lock of ``qdrant_local`` already
keeps every other process out. Folders with aliases or text indexes (livememory makes neither)
always open the usual way. Disk: a snapshot is about the size of the SQLite file it copies (~360 KB
for 100 memories with 384-dimension vectors).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import pickle
import uuid
from importlib import metadata
from pathlib import Path
from typing import Any

from qdrant_client.http import models as rest_models
from qdrant_client.local import async_qdrant_local, local_collection, persistence

logger = logging.getLogger(__name__)

SNAPSHOT = "snapshot.pickle"
FORMAT = 1
META = async_qdrant_local.META_INFO_FILENAME
#: the attributes of a loaded ``LocalCollection`` a snapshot does not hold: its SQLite connection
NOT_STATE = frozenset({"storage"})


Stamp = tuple[int, int, int, bytes]


class SnapshotLocal(async_qdrant_local.AsyncQdrantLocal):
    """``AsyncQdrantLocal`` over one folder that opens from its snapshot when it is current."""

    from_snapshot = False  #: whether this instance skipped the load (tests, benchmarks)

    def _load(self) -> None:
        loaded = read(Path(self.location), self.force_disable_check_same_thread)
        if loaded is None:
            super()._load()
            if len(self.collections) == 1 and not self.aliases:
                [(name, collection)] = self.collections.items()
                write(Path(self.location), name, collection)
            return
        name, collection = loaded
        self.collections = {name: collection}
        self.from_snapshot = True


def open_folder(folder: Path, *, snapshot: bool = True) -> async_qdrant_local.AsyncQdrantLocal:
    """A local-mode client over one folder: from its snapshot when current (``snapshot``), else,
    or with ``snapshot=False``, loaded the usual way (benchmarks compare the two)."""
    opener = SnapshotLocal if snapshot else async_qdrant_local.AsyncQdrantLocal
    return opener(str(folder))


def path_of(folder: Path) -> Path:
    return folder / SNAPSHOT


def remove(folder: Path) -> None:
    """Drop the snapshot of ``folder`` (before a write: it would be out of date, and may hold the
    text being deleted), and any temporary copy a crash left half-written."""
    path_of(folder).unlink(missing_ok=True)
    for temporary in folder.glob(f".{SNAPSHOT}.*"):
        temporary.unlink(missing_ok=True)


def read(folder: Path, force_disable_check_same_thread: bool = False) -> tuple[str, Any] | None:
    """The collection of ``folder`` built from its snapshot, or None to open it the usual way."""
    path = path_of(folder)
    try:
        with path.open("rb") as handle:
            header = pickle.load(handle)
            if not _current(folder, header):
                return None
            state = pickle.load(handle)
        name = header["name"]
        collection = local_collection.LocalCollection.__new__(local_collection.LocalCollection)
        collection.__dict__.update(state)
        collection.storage = persistence.CollectionPersistence(
            str(_collection_dir(folder, name)), force_disable_check_same_thread
        )
    except FileNotFoundError:
        return None
    except Exception as exc:  # a damaged or foreign file: the usual load is always there
        logger.warning(
            "embedded Qdrant: not using %s (%s); opening the folder the usual way", path, exc
        )
        return None
    return name, collection


def write(folder: Path, name: str, collection: Any) -> bool:
    """Save ``collection`` (just loaded from ``folder``'s SQLite, nothing changed since) as the
    folder's snapshot; False when this folder cannot have one."""
    storage = collection.storage
    meta_text = _meta_text(folder)
    if storage is None or storage._legacy_keys or meta_text is None:
        return False
    meta = json.loads(meta_text)
    if (
        list(meta.get("collections", {})) != [name]
        or meta.get("aliases")
        or meta.get("text_indexes")
    ):
        return False
    try:
        stamp = _stamp(_collection_dir(folder, name))
    except OSError:
        return False
    header = {
        "format": FORMAT,
        "qdrant_client": _version(),
        "name": name,
        "meta": meta_text,
        "stamp": stamp,
    }
    state = {key: value for key, value in vars(collection).items() if key not in NOT_STATE}
    temporary = folder / f".{SNAPSHOT}.{uuid.uuid4().hex}"
    try:
        with temporary.open("wb") as handle:
            pickle.dump(header, handle, protocol=pickle.HIGHEST_PROTOCOL)
            pickle.dump(state, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, path_of(folder))
    except Exception as exc:  # a full disk, a read-only folder: opening stays the usual way
        temporary.unlink(missing_ok=True)
        logger.warning("embedded Qdrant: cannot write %s: %s", path_of(folder), exc)
        return False
    return True


def rebuild(folder: Path) -> bool:
    """Load ``folder``'s collection from SQLite and save it as the snapshot (a closed folder: a
    worker thread runs this after a folder that was written to is closed)."""
    meta_text = _meta_text(folder)
    if meta_text is None:
        return False
    collections = json.loads(meta_text).get("collections", {})
    if len(collections) != 1:
        return False
    [(name, config)] = collections.items()
    collection = local_collection.LocalCollection(
        rest_models.CreateCollection(**config), str(_collection_dir(folder, name))
    )
    try:
        return write(folder, name, collection)
    finally:
        collection.close()


def _current(folder: Path, header: dict[str, Any]) -> bool:
    if header.get("format") != FORMAT or header.get("qdrant_client") != _version():
        return False
    if header.get("meta") != _meta_text(folder):
        return False
    try:
        return header.get("stamp") == _stamp(_collection_dir(folder, header["name"]))
    except OSError:
        return False


def _stamp(collection_dir: Path) -> Stamp:
    """What changes whenever SQLite writes the file: its size, times and inode, and the change
    counter of its header (bytes 24–27, bumped by every committed write transaction in the
    rollback-journal mode qdrant-client uses). A write-ahead log beside it would hold writes the
    file does not show yet: then there is no stamp (``OSError``), and no snapshot."""
    path = collection_dir / persistence.STORAGE_FILE_NAME
    if path.with_name(f"{path.name}-wal").exists():
        raise OSError(f"{path} has a write-ahead log")
    with path.open("rb") as handle:
        counter = handle.read(28)[24:28]
        stat = os.fstat(handle.fileno())
    return stat.st_size, stat.st_mtime_ns, stat.st_ino, counter


def _meta_text(folder: Path) -> str | None:
    try:
        return (folder / META).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _collection_dir(folder: Path, name: str) -> Path:
    return folder / "collection" / name


@functools.cache
def _version() -> str:
    """The installed qdrant-client: a snapshot holds this version's internals (another version
    opens the folder the usual way)."""
    return metadata.version("qdrant-client")
