"""Embedded Qdrant that opens what it needs: one local-mode folder per collection (issue 15).

qdrant-client's local mode keeps a whole folder in one ``QdrantLocal``: opening it loads every
collection and every point (``LocalCollection.__init__``), and creating a collection rewrites the
folder's ``meta.json``, which lists every collection. With a collection per viewer both grow with
the channel's whole audience (29 s and 1.8 GiB to open 10,000 viewers × 10 memories; 0.5–1 s to
create the 10,001st viewer's space).

``FolderClient`` is an ``AsyncQdrantClient`` whose calls go to the folder of the collection they
name, ``<root>/spaces/<collection>/`` (a local-mode folder holding that collection only), opened
on first use and closed least-recently-used beyond ``max_open``. Start-up and admin commands open
the collections they touch; creating a collection writes a ``meta.json`` of one entry. The root
folder keeps one lock (one process at a time, as before). ``warm`` opens folders ahead of use (the
bot opens a chatter's folder while their batch is still open), off the event loop where SQLite
allows it. A root written by the former single-folder
layout (``<root>/meta.json``) is split into per-collection folders on first open (files moved,
nothing copied).

A folder opens from its snapshot (``qdrant_snapshot``) when it has a current one: 1.1–1.7 ms instead
of 5–7 ms for 100 memories (page cache warm; from disk 2 ms instead of 12–23 ms). A call that writes
removes the folder's snapshot first; closing a folder that was written to (evicted, or at ``close``)
rebuilds it in a worker thread, and the folder waits for that before it opens again.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import fcntl
import json
import logging
import os
import shutil
import sqlite3
from typing import TYPE_CHECKING, Any

from qdrant_client import AsyncQdrantClient
from qdrant_client.http import models as rest_models
from qdrant_client.local import async_qdrant_local, persistence

from memory import errors
from memory.adapters import qdrant_snapshot

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Collection
    from pathlib import Path
    from typing import IO

logger = logging.getLogger(__name__)

META = async_qdrant_local.META_INFO_FILENAME
STORAGE = persistence.STORAGE_FILE_NAME
SPACES = "spaces"
DEFAULT_MAX_OPEN = 128
#: a local folder opens in a worker thread only when SQLite connections may cross threads
#: (``threadsafety`` 3: serialized); otherwise on the event loop, as before
OPEN_IN_THREAD = sqlite3.threadsafety == 3
#: the per-collection calls of ``AsyncQdrantClient`` that only read; any other call writes (it
#: removes the folder's snapshot, which closing the folder rebuilds)
READS = frozenset({
    "count", "discover", "discover_batch", "facet", "get_collection", "query_batch_points",
    "query_points", "query_points_groups", "recommend", "recommend_batch", "recommend_groups",
    "retrieve", "scroll", "search", "search_batch", "search_groups", "search_matrix_offsets",
    "search_matrix_pairs",
})  # fmt: skip


class FolderRouter:
    """The per-collection folders of one root; plays qdrant-client's ``_client`` role.

    ``AsyncQdrantClient`` calls its backend with ``collection_name=…`` as a keyword; every such
    call is routed to that collection's folder, held open (a lease) for the call's duration.
    """

    def __init__(self, root: Path, *, max_open: int = DEFAULT_MAX_OPEN) -> None:
        self.root = root
        self.folders = root / SPACES
        self.max_open = max(1, max_open)
        #: collection name → its open local client, least recently used first
        self._open: collections.OrderedDict[str, async_qdrant_local.AsyncQdrantLocal] = (
            collections.OrderedDict()
        )
        self._leases: collections.Counter[str] = collections.Counter()
        #: collection name → the task opening its folder (``warm``)
        self._opening: dict[str, asyncio.Task[async_qdrant_local.AsyncQdrantLocal]] = {}
        #: open folders written to since they opened: closing one rebuilds its snapshot
        self._written: set[str] = set()
        #: collection name → the task rebuilding its snapshot (the folder is closed meanwhile)
        self._rebuilding: dict[str, asyncio.Task[bool]] = {}
        self._closed = False
        self.opened = 0  #: folders opened so far (tests, benchmarks)
        self.from_snapshot = 0  #: of those, opened from their snapshot
        self._lock_file: IO[str] | None = _lock_root(root)
        try:
            split_legacy(root)
        except BaseException:
            self._unlock()
            raise

    # -- what AsyncQdrantClient calls ------------------------------------------------------------

    async def get_collections(self, **kwargs: Any) -> rest_models.CollectionsResponse:
        return rest_models.CollectionsResponse(
            collections=[
                rest_models.CollectionDescription(name=name) for name in self.collection_names()
            ]
        )

    async def collection_exists(self, collection_name: str, **kwargs: Any) -> bool:
        return collection_name in self._open or self._stored(collection_name)

    async def create_collection(self, collection_name: str, **kwargs: Any) -> bool:
        async_qdrant_local.AsyncQdrantLocal._validate_new_collection_name(collection_name)
        if await self.collection_exists(collection_name):
            raise ValueError(f"Collection {collection_name} already exists")
        async with self._lease(collection_name, create=True) as local:
            self._written.add(collection_name)
            result: bool = await local.create_collection(collection_name, **kwargs)
            return result

    async def recreate_collection(self, collection_name: str, **kwargs: Any) -> bool:
        await self.delete_collection(collection_name)
        return await self.create_collection(collection_name, **kwargs)

    async def delete_collection(self, collection_name: str, **kwargs: Any) -> bool:
        if not await self.collection_exists(collection_name):
            return False
        await self._opened(collection_name)
        await self._rebuilt(collection_name)
        local = self._open.pop(collection_name, None)
        self._written.discard(collection_name)
        if local is not None:
            await local.close()
        shutil.rmtree(self._folder(collection_name), ignore_errors=True)
        return True

    async def vacuum(self, collection_name: str) -> int:
        """Rewrite the SQLite storage of a collection without its free pages; returns how many
        files. qdrant-client's local mode deletes and replaces points with ``DELETE`` / ``INSERT OR
        REPLACE``, which leave the old bytes (a forgotten text) in free pages; ``VACUUM`` rebuilds
        the file from the live rows only. Runs beside the open client (it holds no lock between
        calls); a missing collection has nothing to vacuum."""
        folder = self._folder(collection_name)
        if not folder.is_dir():
            return 0
        await self._rebuilt(collection_name)
        qdrant_snapshot.remove(folder)  # rebuilt from the vacuumed file when the folder closes
        if collection_name in self._open:
            self._written.add(collection_name)
        files = sorted(folder.rglob(STORAGE))
        for path in files:
            try:
                storage = sqlite3.connect(path)
                try:
                    storage.execute("VACUUM")
                finally:
                    storage.close()
            except sqlite3.Error as exc:
                raise errors.StoreUnavailable(
                    f"embedded Qdrant: cannot vacuum {path}: {exc}"
                ) from exc
        return len(files)

    async def warm(self, names: Collection[str]) -> int:
        """Open the stored folders of ``names`` that are not open yet; returns how many it opened.

        The slow part of a first search in a viewer's space is opening the folder (local mode loads
        every point: ~13 ms for 100 memories); opened here ahead of time, in a worker thread, the
        search finds the folder open. Unknown names are skipped; eviction applies as for any use.
        """
        wanted = [n for n in dict.fromkeys(names) if n not in self._open and n not in self._opening]
        wanted = [n for n in wanted if self._stored(n)]
        if self._closed or not wanted:
            return 0
        opened = 0
        for name in wanted:
            if self._closed:
                break
            if name not in self._open and name not in self._opening:
                await asyncio.shield(self._start_open(name))
                opened += 1
        await self._evict()
        return opened

    async def close(self, **kwargs: Any) -> None:
        self._closed = True
        if self._opening:  # a folder being opened ahead of use: let it finish, then close it
            await asyncio.gather(*self._opening.values(), return_exceptions=True)
        while self._open:
            name, local = self._open.popitem()
            await self._close_folder(name, local)
        if self._rebuilding:
            await asyncio.gather(*self._rebuilding.values(), return_exceptions=True)
        self._unlock()

    def __getattr__(self, method: str) -> Callable[..., Awaitable[Any]]:
        if method.startswith("_"):
            raise AttributeError(method)

        async def call(*args: Any, collection_name: str | None = None, **kwargs: Any) -> Any:
            if collection_name is None:
                raise NotImplementedError(f"{method} spans collections: not per-collection folders")
            async with self._lease(collection_name, create=False) as local:
                if method not in READS and collection_name not in self._written:
                    # the first write since the folder opened; no snapshot appears while it is open
                    self._written.add(collection_name)
                    qdrant_snapshot.remove(self._folder(collection_name))
                return await getattr(local, method)(
                    *args, collection_name=collection_name, **kwargs
                )

        return call

    # -- folders ---------------------------------------------------------------------------------

    def collection_names(self, matching: Callable[[str], bool] | None = None) -> list[str]:
        """Collections stored under the root (a directory listing: nothing is opened), those
        whose name is ``matching`` only when given (checked before the folder is: at 10,000
        viewers, looking into every folder is most of a listing's cost)."""
        if not self.folders.is_dir():
            return []
        return sorted(
            entry.name
            for entry in os.scandir(self.folders)
            if (matching is None or matching(entry.name)) and self._stored(entry.name)
        )

    def open_names(self) -> list[str]:
        return list(self._open)

    def _folder(self, name: str) -> Path:
        async_qdrant_local.AsyncQdrantLocal._validate_new_collection_name(name)
        return self.folders / name

    def _stored(self, name: str) -> bool:
        return (self._folder(name) / META).is_file()

    @contextlib.asynccontextmanager
    async def _lease(
        self, name: str, *, create: bool
    ) -> AsyncIterator[async_qdrant_local.AsyncQdrantLocal]:
        local = self._open.get(name) or await self._opened(name)
        if local is None:
            if not create and not self._stored(name):
                raise ValueError(f"Collection {name} not found")
            await self._rebuilt(name)  # then it may have been opened meanwhile
            local = (
                self._open.get(name)
                or await self._opened(name)
                or self._register(name, qdrant_snapshot.SnapshotLocal(str(self._folder(name))))
            )
        self._open.move_to_end(name)
        self._leases[name] += 1
        try:
            yield local
        finally:
            self._leases[name] -= 1
            if not self._leases[name]:
                del self._leases[name]
            await self._evict()

    def _start_open(self, name: str) -> asyncio.Task[async_qdrant_local.AsyncQdrantLocal]:
        """Open a folder in a task (in a worker thread when allowed) that registers it when done;
        a lease that needs the folder meanwhile waits for that task rather than opening it twice
        (the folder's own lock would refuse a second instance)."""
        path = str(self._folder(name))

        async def open_folder() -> async_qdrant_local.AsyncQdrantLocal:
            try:
                await self._rebuilt(name)
                if OPEN_IN_THREAD:
                    local = await asyncio.to_thread(qdrant_snapshot.SnapshotLocal, path)
                else:
                    local = qdrant_snapshot.SnapshotLocal(path)
                return self._register(name, local)
            finally:
                self._opening.pop(name, None)

        task = asyncio.create_task(open_folder(), name=f"qdrant-open:{name}")
        self._opening[name] = task
        return task

    async def _opened(self, name: str) -> async_qdrant_local.AsyncQdrantLocal | None:
        """The folder of ``name`` once a ``warm`` that is opening it is done (None: not opening)."""
        task = self._opening.get(name)
        if task is None:
            return None
        return await asyncio.shield(task)

    def _register(
        self, name: str, local: qdrant_snapshot.SnapshotLocal
    ) -> async_qdrant_local.AsyncQdrantLocal:
        self._open[name] = local
        self.opened += 1
        self.from_snapshot += local.from_snapshot
        return local

    async def _rebuilt(self, name: str) -> None:
        """Wait until the snapshot of ``name`` being rebuilt (if any) is written."""
        task = self._rebuilding.get(name)
        if task is not None:
            await asyncio.shield(task)

    async def _close_folder(self, name: str, local: async_qdrant_local.AsyncQdrantLocal) -> None:
        """Close an open folder; one written to gets its snapshot rebuilt in a worker thread."""
        await local.close()
        if name not in self._written:
            return
        self._written.discard(name)
        folder = self._folder(name)

        async def rebuild() -> bool:
            try:
                return await asyncio.to_thread(qdrant_snapshot.rebuild, folder)
            except Exception as exc:  # the folder opens the usual way instead
                logger.warning("embedded Qdrant: no snapshot of %s: %s", name, exc)
                return False
            finally:
                self._rebuilding.pop(name, None)

        self._rebuilding[name] = asyncio.create_task(rebuild(), name=f"qdrant-snapshot:{name}")

    async def _evict(self) -> None:
        """Close the least recently used folders beyond ``max_open`` (never one in use)."""
        if len(self._open) <= self.max_open:
            return
        for name in [n for n in self._open if n not in self._leases]:
            if len(self._open) <= self.max_open:
                break
            await self._close_folder(name, self._open.pop(name))

    def _unlock(self) -> None:
        if self._lock_file is not None:
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)
            self._lock_file.close()
            self._lock_file = None


class FolderClient(AsyncQdrantClient):
    """``AsyncQdrantClient`` over :class:`FolderRouter` (embedded, a folder per collection)."""

    def __init__(self, root: Path, *, max_open: int = DEFAULT_MAX_OPEN) -> None:
        super().__init__(location=":memory:")  # replaced below: only the client's API is kept
        self.router = FolderRouter(root, max_open=max_open)
        self._client = self.router  # type: ignore[assignment]


def _lock_root(root: Path) -> IO[str]:
    """One process at a time holds the embedded Qdrant (the same file the single folder locked)."""
    root.mkdir(parents=True, exist_ok=True)
    handle = (root / ".lock").open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        handle.close()
        raise errors.StoreUnavailable(
            f"the embedded Qdrant in {root} is in use by another process (a running bot or "
            "worker?): stop it first, or set QDRANT_URL to share a Qdrant server"
        ) from exc
    return handle


def split_legacy(root: Path) -> int:
    """Move the collections of a single-folder root into folders of their own; returns how many."""
    meta_path = root / META
    if not meta_path.is_file():
        return 0
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    text_indexes = meta.get("text_indexes", {})
    moved = 0
    for name, config in meta.get("collections", {}).items():
        folder = root / SPACES / name
        source = root / "collection" / name
        if (folder / META).exists() and source.exists():  # an older version wrote it again
            raise errors.StoreUnavailable(
                f"the embedded Qdrant in {root} holds collection {name} twice (a folder of its "
                f"own and the single-folder layout of an older version): keep one of "
                f"{folder} and {source}, then start again"
            )
        (folder / "collection").mkdir(parents=True, exist_ok=True)
        if source.exists():
            source.rename(folder / "collection" / name)
        entry: dict[str, Any] = {"collections": {name: config}, "aliases": {}}
        if name in text_indexes:
            entry["text_indexes"] = {name: text_indexes[name]}
        (folder / META).write_text(json.dumps(entry), encoding="utf-8")
        moved += 1
    meta_path.rename(root / f"{META}.split")
    logger.info("embedded Qdrant: %d collections moved to a folder each", moved)
    return moved
