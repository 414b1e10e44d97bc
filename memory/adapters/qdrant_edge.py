"""Embedded Qdrant on Qdrant Edge (issue 21): the server's engine in-process, a shard per collection.

``EdgeClient`` is an ``AsyncQdrantClient`` whose calls go to ``EdgeEngine`` instead of a server, so
``QdrantSpaces``, ``Collections`` and ``Reembedder`` run unchanged on it: one implementation of the
memory rules over the server and the embedded store, which cannot drift apart. ``EdgeEngine`` keeps
a Qdrant Edge shard (``qdrant_edge.EdgeShard``: segments, HNSW, payload indexes, a write-ahead log)
per collection in ``<root>/<collection>/``, with ``collection.json`` beside the segments holding what
Edge does not: the collection's metadata (the embedder record), its vector schema and its payload
indexes. ``edge_models`` translates qdrant-client's models to Edge's and back.

* **Off the event loop.** Edge has no async API, so shard calls run in ``asyncio.to_thread`` (the
  house rule against ``to_thread`` targets sync twins of async clients; here there is no async
  twin). A fused query of 10,000 points takes 0.4-1 ms, one of 100,000 1-2.5 ms, an optimize or a
  first load tens of ms: on the loop they would hold up chat and the per-source timeout.
* **Durability.** Every update is in the WAL when ``update`` returns (a ``kill -9`` loses nothing:
  the WAL replays on ``load``); segments are flushed on ``close`` and after a vacuum.
* **One process.** A root lock (``<root>/.lock``) refuses a second process with one line, and so
  does a shard's WAL lock if it is met anyway. Shards are closed on every exit path (``close``).
* **Vacuum.** A deleted point's bytes stay in the WAL until it rotates, so ``vacuum`` rebuilds a
  shard from its live points (a new shard, swapped in by renames; an interrupted swap is finished
  when the engine opens).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import shutil
from typing import IO, TYPE_CHECKING, Any

import qdrant_edge as edge
from qdrant_client import AsyncQdrantClient
from qdrant_client import models as qm
from qdrant_client.http import models as rest

from memory import errors
from memory.adapters import edge_models

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator
    from pathlib import Path

logger = logging.getLogger(__name__)

SIDE_FILE = "collection.json"
_VACUUM, _OLD = ".vacuum", ".old"
_PAGE = 512


class EdgeClient(AsyncQdrantClient):
    """``AsyncQdrantClient`` over :class:`EdgeEngine` (embedded Qdrant Edge, a shard per collection)."""

    def __init__(self, root: Path) -> None:
        super().__init__(location=":memory:")  # replaced below: only the client's API is kept
        self.engine = EdgeEngine(root)
        self._client = self.engine  # type: ignore[assignment]


def in_use(root: Path) -> errors.StoreUnavailable:
    return errors.StoreUnavailable(
        f"the embedded Qdrant in {root} is in use by another process (a running bot or worker?): "
        "stop it first, or set QDRANT_URL to share a Qdrant server"
    )


class EdgeEngine:
    """The Edge shards of one root; plays qdrant-client's ``_client`` role for ``EdgeClient``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock_file: IO[str] | None = _lock_root(root)
        self._shards: dict[str, edge.EdgeShard] = {}
        self._sides: dict[str, dict[str, Any]] = {}
        self._opening = asyncio.Lock()
        try:
            _finish_swaps(root)
        except BaseException:
            self._unlock()
            raise

    # -- collections ---------------------------------------------------------------------------

    def names(self) -> list[str]:
        return sorted(
            e.name for e in os.scandir(self.root) if e.is_dir() and self._side_path(e.name).exists()
        )

    async def get_collections(self, **kwargs: Any) -> qm.CollectionsResponse:
        return qm.CollectionsResponse(
            collections=[qm.CollectionDescription(name=name) for name in self.names()]
        )

    async def collection_exists(self, collection_name: str, **kwargs: Any) -> bool:
        return collection_name in self._shards or self._side_path(collection_name).is_file()

    async def get_collection(self, collection_name: str, **kwargs: Any) -> Any:
        return edge_models.collection_info(self._side(collection_name))

    async def create_collection(
        self,
        collection_name: str,
        vectors_config: Any = None,
        sparse_vectors_config: Any = None,
        metadata: Any = None,
        **kwargs: Any,
    ) -> bool:
        if await self.collection_exists(collection_name):
            raise ValueError(f"Collection {collection_name} already exists")
        side = edge_models.side_record(vectors_config, sparse_vectors_config, metadata)
        folder = self._folder(collection_name)
        shutil.rmtree(folder, ignore_errors=True)  # a creation cut short before its side file
        async with self._opening:
            shard = await asyncio.to_thread(_create, folder, side)
            self._shards[collection_name] = shard
        _write_side(folder, side)
        self._sides[collection_name] = side
        return True

    async def update_collection(
        self, collection_name: str, metadata: Any = None, **kwargs: Any
    ) -> bool:
        side = self._side(collection_name)
        side["metadata"] = {**side["metadata"], **(metadata or {})}
        _write_side(self._folder(collection_name), side)
        return True

    async def delete_collection(self, collection_name: str, **kwargs: Any) -> bool:
        if not await self.collection_exists(collection_name):
            return False
        shard = self._shards.pop(collection_name, None)
        self._sides.pop(collection_name, None)
        if shard is not None:
            await asyncio.to_thread(shard.close)
        await asyncio.to_thread(shutil.rmtree, self._folder(collection_name), True)
        return True

    async def create_payload_index(
        self, collection_name: str, field_name: str, field_schema: Any = None, **kwargs: Any
    ) -> qm.UpdateResult:
        side = self._side(collection_name)
        side["indexes"][field_name] = edge_models.index_record(field_schema)
        await self._update(collection_name, edge_models.index_operation(field_name, side))
        _write_side(self._folder(collection_name), side)
        return _done()

    # -- points --------------------------------------------------------------------------------

    async def upsert(self, collection_name: str, points: Any, **kwargs: Any) -> qm.UpdateResult:
        converted = [edge_models.point(p) for p in points]
        await self._update(collection_name, edge.UpdateOperation.upsert_points(converted))
        return _done()

    async def set_payload(
        self, collection_name: str, payload: Any, points: Any, **kwargs: Any
    ) -> qm.UpdateResult:
        ids = edge_models.ids(points)
        await self._update(collection_name, edge.UpdateOperation.set_payload(ids, dict(payload)))
        return _done()

    async def delete(
        self, collection_name: str, points_selector: Any, **kwargs: Any
    ) -> qm.UpdateResult:
        await self._update(collection_name, edge_models.delete_operation(points_selector))
        return _done()

    async def retrieve(
        self,
        collection_name: str,
        ids: Any,
        with_payload: Any = True,
        with_vectors: Any = False,
        **kwargs: Any,
    ) -> list[qm.Record]:
        shard = await self._shard(collection_name)
        wanted = edge_models.ids(ids)
        found = await asyncio.to_thread(shard.retrieve, wanted, bool(with_payload), with_vectors)
        return [edge_models.record(r) for r in found]

    async def count(
        self, collection_name: str, count_filter: Any = None, exact: bool = True, **kwargs: Any
    ) -> qm.CountResult:
        shard = await self._shard(collection_name)
        request = edge.CountRequest(exact=True, filter=edge_models.filter_(count_filter))
        return qm.CountResult(count=await asyncio.to_thread(shard.count, request))

    async def scroll(
        self,
        collection_name: str,
        scroll_filter: Any = None,
        limit: int = 10,
        offset: Any = None,
        with_payload: Any = True,
        with_vectors: Any = False,
        **kwargs: Any,
    ) -> tuple[list[qm.Record], Any]:
        shard = await self._shard(collection_name)
        request = edge.ScrollRequest(
            offset=str(offset) if offset is not None else None,
            limit=limit,
            filter=edge_models.filter_(scroll_filter),
            with_payload=bool(with_payload),
            with_vector=with_vectors,
        )
        found, after = await asyncio.to_thread(shard.scroll, request)
        return [edge_models.record(r) for r in found], (None if after is None else str(after))

    async def facet(
        self,
        collection_name: str,
        key: str,
        facet_filter: Any = None,
        limit: int = 10,
        **kwargs: Any,
    ) -> qm.FacetResponse:
        shard = await self._shard(collection_name)
        request = edge.FacetRequest(
            key=key, limit=limit, exact=True, filter=edge_models.filter_(facet_filter)
        )
        response = await asyncio.to_thread(shard.facet, request)
        return qm.FacetResponse(
            hits=[qm.FacetValueHit(value=h.value, count=h.count) for h in response.hits]
        )

    async def query_points(
        self, collection_name: str, limit: int = 10, **kwargs: Any
    ) -> rest.QueryResponse:
        shard = await self._shard(collection_name)
        request = edge_models.query_request(limit=limit, **kwargs)
        found = await asyncio.to_thread(shard.query, request)
        return rest.QueryResponse(points=[edge_models.scored(p) for p in found])

    # -- engine --------------------------------------------------------------------------------

    async def warm(self, names: Collection[str]) -> int:
        """Load the stored shards of ``names`` not loaded yet; returns how many it loaded."""
        wanted = [n for n in dict.fromkeys(names) if n not in self._shards]
        wanted = [n for n in wanted if self._side_path(n).is_file()]
        for name in wanted:
            await self._shard(name)
        return len(wanted)

    async def vacuum(self, collection_name: str) -> int:
        """Rebuild a shard from its live points, so the bytes of deleted and replaced points
        (segments and WAL) are gone; returns 1 when a shard was rebuilt."""
        if not await self.collection_exists(collection_name):
            return 0
        shard = await self._shard(collection_name)
        side = self._side(collection_name)
        folder = self._folder(collection_name)
        async with self._opening:
            await asyncio.to_thread(_rebuild, shard, folder, side)
            self._shards.pop(collection_name, None)
            await asyncio.to_thread(_swap, folder)
            self._shards[collection_name] = await asyncio.to_thread(_load, folder, self.root)
        return 1

    async def close(self, **kwargs: Any) -> None:
        """Flush and close every shard, then release the root."""
        try:
            while self._shards:
                _, shard = self._shards.popitem()
                await asyncio.to_thread(_close, shard)
        finally:
            self._unlock()

    async def _update(self, name: str, operation: edge.UpdateOperation) -> None:
        shard = await self._shard(name)
        with _translated(self.root):
            await asyncio.to_thread(shard.update, operation)

    async def _shard(self, name: str) -> edge.EdgeShard:
        shard = self._shards.get(name)
        if shard is not None:
            return shard
        async with self._opening:
            if name not in self._shards:
                if not self._side_path(name).is_file():
                    raise ValueError(f"Collection {name} not found")
                self._shards[name] = await asyncio.to_thread(_load, self._folder(name), self.root)
            return self._shards[name]

    def _side(self, name: str) -> dict[str, Any]:
        if name not in self._sides:
            try:
                self._sides[name] = json.loads(self._side_path(name).read_text(encoding="utf-8"))
            except FileNotFoundError:
                raise ValueError(f"Collection {name} not found") from None
        return self._sides[name]

    def _folder(self, name: str) -> Path:
        if not name or "/" in name or name.startswith(".") or name.endswith((_VACUUM, _OLD)):
            raise ValueError(f"invalid collection name {name!r}")
        return self.root / name

    def _side_path(self, name: str) -> Path:
        return self._folder(name) / SIDE_FILE

    def _unlock(self) -> None:
        if self._lock_file is not None:
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)
            self._lock_file.close()
            self._lock_file = None


def _done() -> qm.UpdateResult:
    return qm.UpdateResult(operation_id=None, status=qm.UpdateStatus.COMPLETED)


@contextlib.contextmanager
def _translated(root: Path) -> Iterator[None]:
    """Edge's errors: a WAL lock held elsewhere is the one-process rule; others stay errors."""
    try:
        yield
    except Exception as exc:
        if "WouldBlock" in str(exc):
            raise in_use(root) from exc
        if type(exc) is Exception:  # Edge's own error (service / storage)
            raise errors.StoreUnavailable(f"embedded Qdrant (Edge): {exc}") from exc
        raise


def _lock_root(root: Path) -> IO[str]:
    """One process at a time holds the embedded Qdrant."""
    root.mkdir(parents=True, exist_ok=True)
    handle = (root / ".lock").open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        handle.close()
        raise in_use(root) from exc
    return handle


def _create(folder: Path, side: dict[str, Any]) -> edge.EdgeShard:
    with _translated(folder.parent):
        return edge.EdgeShard.create(str(folder), edge_models.config(side))


def _load(folder: Path, root: Path) -> edge.EdgeShard:
    with _translated(root):
        return edge.EdgeShard.load(str(folder))


def _close(shard: edge.EdgeShard) -> None:
    try:
        shard.flush()
    finally:
        shard.close()


def _write_side(folder: Path, side: dict[str, Any]) -> None:
    temporary = folder / f".{SIDE_FILE}.tmp"
    temporary.write_text(json.dumps(side), encoding="utf-8")
    os.replace(temporary, folder / SIDE_FILE)


def _rebuild(shard: edge.EdgeShard, folder: Path, side: dict[str, Any]) -> None:
    """Copy the live points of ``shard`` into a new shard beside it, then close both."""
    target = folder.with_name(folder.name + _VACUUM)
    shutil.rmtree(target, ignore_errors=True)
    fresh = edge.EdgeShard.create(str(target), edge_models.config(side))
    try:
        for field in side["indexes"]:
            fresh.update(edge_models.index_operation(field, side))
        offset: Any = None
        while True:
            request = edge.ScrollRequest(
                offset=offset, limit=_PAGE, with_payload=True, with_vector=True
            )
            found, offset = shard.scroll(request)
            if found:
                points = [edge.Point(r.id, r.vector or [], r.payload) for r in found]
                fresh.update(edge.UpdateOperation.upsert_points(points))
            if offset is None:
                break
        _write_side(target, side)
    finally:
        _close(fresh)
    shard.close()


def _swap(folder: Path) -> None:
    """Put ``<folder>.vacuum`` in the place of ``folder`` (the old one removed)."""
    old = folder.with_name(folder.name + _OLD)
    folder.rename(old)
    folder.with_name(folder.name + _VACUUM).rename(folder)
    shutil.rmtree(old)


def _finish_swaps(root: Path) -> None:
    """Finish a vacuum swap a crash interrupted; drop a rebuild cut short (the original is intact)."""
    for entry in sorted(root.iterdir()):
        if entry.name.endswith(_OLD):
            current = entry.with_name(entry.name.removesuffix(_OLD))
            rebuilt = current.with_name(current.name + _VACUUM)
            if not current.exists():
                if (rebuilt / SIDE_FILE).is_file():
                    rebuilt.rename(current)
                else:
                    entry.rename(current)
                    continue
            shutil.rmtree(entry)
    for entry in sorted(root.iterdir()):
        if entry.name.endswith(_VACUUM):
            shutil.rmtree(entry)
