"""Embedded Qdrant on Qdrant Edge: the server's engine in-process, a shard per collection.

``EdgeClient`` answers the calls of qdrant-client's API (its method and argument names, with the
models of ``qdrant_models``) from Edge shards, as ``qdrant_server.ServerClient`` answers them from a
server, so ``QdrantSpaces``, ``Collections`` and ``Reembedder`` run unchanged on either: one
implementation of the memory rules over the server and the embedded store, which cannot drift
apart; and the embedded default never imports qdrant-client. ``EdgeEngine`` keeps
a Qdrant Edge shard (``qdrant_edge.EdgeShard``: segments, HNSW, payload indexes, a write-ahead log)
per collection in ``<root>/<collection>/``, with ``collection.json`` beside the segments holding what
Edge does not: the collection's metadata (the embedder record), its vector schema and its payload
indexes. ``edge_models`` translates ``qdrant_models`` to Edge's and back; ``edge_shards`` holds
the blocking file work (locks, loading, side files, vacuum swaps).

* **Reads on the event loop, the rest in worker threads.** Edge has no async API, and its Python
  binding (0.9) holds the GIL for the whole of every call (measured: a ticker
  on the loop stalled for the whole of an 84 ms query, a 200 ms count, a 607 ms facet run through
  ``asyncio.to_thread``). A worker thread therefore buys a read no concurrency: the loop waits for
  it either way, and the thread added its hop and the GIL's hand-over (up to the 5 ms switch
  interval while the loop runs other sources: 4 ms of a cold memory stage's 8 ms median, loaded
  machine). So reads (query, retrieve, count, scroll, facet: 0.4-2 ms for a viewer's search) run
  inline, and neither the source timeout nor the budget can interrupt one (as with local mode;
  ``memory.recall.retrieval``). Writes, loads, optimizes and closes, which touch the disk, stay
  in ``asyncio.to_thread`` (the house rule against ``to_thread`` targets sync twins of async
  clients; here there is no async twin): when a later binding releases the GIL, they are ready.
* **Durability.** Every update is in the WAL when ``update`` returns (a ``kill -9`` loses nothing:
  the WAL replays on ``load``); segments are flushed on ``close`` (of a shard written since it
  loaded), after a vacuum, and by a write ``FLUSH_SECONDS`` after the shard's last flush (so the
  WAL a crash leaves to replay stays short).
* **One process.** A root lock (``<root>/.lock``) refuses a second process with one line, and so
  does a shard's WAL lock if it is met anyway. Shards are closed on every exit path (``close``).
* **Vacuum.** A deleted point's bytes stay in the WAL until it rotates, so ``vacuum`` rebuilds a
  shard from its live points (a new shard, swapped in by renames; an interrupted swap is finished
  when the engine opens). Writes to the shard wait for it; reads go on in the old shard, which is
  closed once none is in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import shutil
import time
from typing import IO, TYPE_CHECKING, Any

import qdrant_edge as edge

from memory.adapters import edge_models, edge_shards
from memory.adapters import qdrant_models as qm
from memory.spaces import store as spaces_module

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Collection, Sequence
    from pathlib import Path

logger = logging.getLogger(__name__)

#: a shard written to is flushed (segments to disk) at most this often, on a write
FLUSH_SECONDS = 30.0


class EdgeEngine:
    """The Edge shards of one root, behind the client API the adapters call (qdrant-client's
    names and arguments, in ``qdrant_models``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock_file: IO[str] | None = edge_shards.lock_root(root)
        self._shards: dict[str, edge.EdgeShard] = {}
        self._sides: dict[str, dict[str, Any]] = {}
        #: when each shard was last flushed (monotonic seconds)
        self._flushed: dict[str, float] = {}
        #: shards written since they were loaded: ``close`` settles them (``edge_shards.settle``)
        self._written: set[str] = set()
        #: shards known to have their payload indexes (``edge_shards.fit_indexes``)
        self._indexed: set[str] = set()
        self._write_locks: dict[str, asyncio.Lock] = {}
        #: calls in flight per shard, and the condition a vacuum waits on for them to end
        self._inflight: dict[str, int] = {}
        self._quiet = asyncio.Condition()
        self._opening = asyncio.Lock()
        try:
            edge_shards.finish_swaps(root)
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
            shard = await asyncio.to_thread(edge_shards.create, folder, side)
            self._shards[collection_name] = shard
        edge_shards.write_side(folder, side)
        self._sides[collection_name] = side
        return True

    async def update_collection(
        self, collection_name: str, metadata: Any = None, **kwargs: Any
    ) -> bool:
        side = self._side(collection_name)
        side["metadata"] = {**side["metadata"], **(metadata or {})}
        edge_shards.write_side(self._folder(collection_name), side)
        return True

    async def delete_collection(self, collection_name: str, **kwargs: Any) -> bool:
        if not await self.collection_exists(collection_name):
            return False
        shard = self._shards.pop(collection_name, None)
        self._sides.pop(collection_name, None)
        self._indexed.discard(collection_name)
        if shard is not None:
            await asyncio.to_thread(shard.close)
        await asyncio.to_thread(shutil.rmtree, self._folder(collection_name), True)
        return True

    async def create_payload_index(
        self, collection_name: str, field_name: str, field_schema: Any = None, **kwargs: Any
    ) -> qm.UpdateResult:
        """Recorded in the side file; built in Edge once the shard is big enough to need it
        (``edge_models.INDEX_AT``)."""
        side = self._side(collection_name)
        side["indexes"][field_name] = edge_models.index_record(field_schema)
        edge_shards.write_side(self._folder(collection_name), side)
        async with self._writes(collection_name), self._using(collection_name) as shard:
            with edge_shards.translated(self.root):
                if await asyncio.to_thread(edge_shards.fit_indexes, shard, side):
                    self._indexed.add(collection_name)
        self._written.add(collection_name)
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
        wanted = edge_models.ids(ids)
        async with self._using(collection_name) as shard:
            found = shard.retrieve(wanted, bool(with_payload), with_vectors)  # on the loop: GIL
        return [edge_models.record(r) for r in found]

    async def count(
        self, collection_name: str, count_filter: Any = None, exact: bool = True, **kwargs: Any
    ) -> qm.CountResult:
        request = edge.CountRequest(exact=True, filter=edge_models.filter_(count_filter))
        async with self._using(collection_name) as shard:
            return qm.CountResult(count=shard.count(request))

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
        request = edge.ScrollRequest(
            offset=str(offset) if offset is not None else None,
            limit=limit,
            filter=edge_models.filter_(scroll_filter),
            with_payload=bool(with_payload),
            with_vector=with_vectors,
        )
        async with self._using(collection_name) as shard:
            found, after = shard.scroll(request)
        return [edge_models.record(r) for r in found], (None if after is None else str(after))

    async def facet(
        self,
        collection_name: str,
        key: str,
        facet_filter: Any = None,
        limit: int = 10,
        **kwargs: Any,
    ) -> qm.FacetResponse:
        request = edge.FacetRequest(
            key=key, limit=limit, exact=True, filter=edge_models.filter_(facet_filter)
        )
        async with self._using(collection_name) as shard:
            counted = edge_shards.facet(shard, request, key, limit)
        return qm.FacetResponse(
            hits=[qm.FacetValueHit(value=value, count=count) for value, count in counted]
        )

    async def query_points(
        self, collection_name: str, limit: int = 10, **kwargs: Any
    ) -> qm.QueryResponse:
        request = edge_models.query_request(limit=limit, **kwargs)
        async with self._using(collection_name) as shard:
            found = shard.query(request)  # on the loop: Edge holds the GIL (module docstring)
        return qm.QueryResponse(points=[edge_models.scored(p) for p in found])

    async def query_candidates(
        self,
        collection_name: str,
        limit: int = 10,
        similarity_to: Sequence[float] | None = None,
        **kwargs: Any,
    ) -> list[spaces_module.Candidate]:
        """``query_points``' points as ranking candidates (``qdrant_hybrid.search``), made from
        Edge's points without the scored points in between (their ids, versions and vectors are
        not read: ~5 µs a point, a fifth of a viewer's search)."""
        request = edge_models.query_request(limit=limit, **kwargs)
        async with self._using(collection_name) as shard:
            found = shard.query(request)  # on the loop, as ``query_points``
        if similarity_to is None:
            return [spaces_module.candidate(p.payload or {}, p.score) for p in found]
        return [
            spaces_module.candidate(
                p.payload or {}, p.score, spaces_module.similarity(similarity_to, p.vector)
            )
            for p in found
        ]

    async def touch(self, collection_name: str, where: Any) -> int:
        """Read the points ``where`` selects once (``edge_models.touch_request``), so that the
        pages of their vectors and payloads are in memory when a search of them comes: a first
        search of a viewer whose pages the OS no longer holds waits for ~16 reads from disk
        (3-4 ms). Returns how many points it read."""
        request = edge_models.touch_request(self._side(collection_name), where)
        async with self._using(collection_name) as shard:
            return len(shard.query(request))

    # -- engine --------------------------------------------------------------------------------

    async def warm(self, names: Collection[str]) -> int:
        """Load the stored shards of ``names`` not loaded yet, side by side in worker threads;
        returns how many it loaded."""
        async with self._opening:
            wanted = [n for n in dict.fromkeys(names) if n not in self._shards]
            wanted = [n for n in wanted if self._side_path(n).is_file()]
            loads = [
                asyncio.to_thread(edge_shards.load, self._folder(n), self.root, self._side(n))
                for n in wanted
            ]
            loaded = await asyncio.gather(*loads, return_exceptions=True)
            for name, shard in zip(wanted, loaded, strict=True):
                if isinstance(shard, edge.EdgeShard):
                    self._shards[name] = shard
            for failed in loaded:
                if isinstance(failed, BaseException):
                    raise failed
        return len(wanted)

    def open_names(self) -> list[str]:
        return list(self._shards)

    async def vacuum(self, collection_name: str) -> int:
        """Rebuild a shard from its live points, so the bytes of deleted and replaced points
        (segments and WAL) are gone; returns 1 when a shard was rebuilt."""
        if not await self.collection_exists(collection_name):
            return 0
        side = self._side(collection_name)
        folder = self._folder(collection_name)
        async with self._writes(collection_name):  # no write may land in the old shard now
            shard = await self._shard(collection_name)
            await asyncio.to_thread(
                edge_shards.rebuild, shard, folder, side
            )  # reads go on meanwhile
            async with self._opening:
                self._shards.pop(collection_name, None)  # new calls wait for the new shard
                async with self._quiet:
                    await self._quiet.wait_for(lambda: not self._inflight.get(collection_name))
                await asyncio.to_thread(shard.close)
                await asyncio.to_thread(edge_shards.swap, folder)
                self._shards[collection_name] = await asyncio.to_thread(
                    edge_shards.load, folder, self.root, side
                )
                self._written.add(collection_name)  # optimized at close
        return 1

    async def close(self, **kwargs: Any) -> None:
        """Settle and flush the shards written to (or of the previous release), close every
        shard (side by side), then release the root."""
        try:
            shards, self._shards = self._shards, {}
            closed = await asyncio.gather(
                *(self._close(name, shard) for name, shard in shards.items()),
                return_exceptions=True,
            )
            for failed in closed:
                if isinstance(failed, BaseException):
                    raise failed
        finally:
            self._unlock()

    async def _close(self, name: str, shard: edge.EdgeShard) -> None:
        # a shard not written since it loaded, nor settled now, has nothing to flush (6-19 ms
        # of every exit); the shard of an older release is settled (its indexes re-created)
        changed = name in self._written
        try:
            side = self._side(name)
            changed = changed or side.get("placement") != edge_models.PLACEMENT
            if side.get("placement") != edge_models.PLACEMENT:
                logger.info(
                    "embedded Qdrant: moving %s to this release's on-disk layout, once "
                    "(about 1.5 min per 1,000,000 memories)",
                    name,
                )
            if changed:
                began = time.monotonic()
                folder = self._folder(name)
                if await asyncio.to_thread(edge_shards.settle, shard, folder, side):
                    logger.info(
                        "embedded Qdrant: segments of %s optimized in %.1f s",
                        name,
                        time.monotonic() - began,
                    )
        finally:
            await asyncio.to_thread(edge_shards.close, shard, flush=changed)

    async def _update(self, name: str, operation: edge.UpdateOperation) -> None:
        self._written.add(name)
        now = time.monotonic()
        flush = now - self._flushed.setdefault(name, now) >= FLUSH_SECONDS
        if flush:
            self._flushed[name] = now
        unindexed = None if name in self._indexed else self._side(name)
        async with self._writes(name), self._using(name) as shard:
            with edge_shards.translated(self.root):
                if await asyncio.to_thread(edge_shards.apply, shard, operation, flush, unindexed):
                    self._indexed.add(name)

    def _writes(self, name: str) -> asyncio.Lock:
        """Held by each write to shard ``name`` and by its vacuum (which must see them all)."""
        return self._write_locks.setdefault(name, asyncio.Lock())

    @contextlib.asynccontextmanager
    async def _using(self, name: str) -> AsyncIterator[edge.EdgeShard]:
        """Shard ``name`` for one call; a vacuum closes the old shard only once none is in flight."""
        shard = await self._shard(name)
        self._inflight[name] = self._inflight.get(name, 0) + 1
        try:
            yield shard
        finally:
            self._inflight[name] -= 1
            async with self._quiet:
                self._quiet.notify_all()

    async def _shard(self, name: str) -> edge.EdgeShard:
        shard = self._shards.get(name)
        if shard is not None:
            return shard
        async with self._opening:
            if name not in self._shards:
                if not self._side_path(name).is_file():
                    raise ValueError(f"Collection {name} not found")
                self._shards[name] = await asyncio.to_thread(
                    edge_shards.load, self._folder(name), self.root, self._side(name)
                )
            return self._shards[name]

    def _side(self, name: str) -> dict[str, Any]:
        if name not in self._sides:
            try:
                self._sides[name] = json.loads(self._side_path(name).read_text(encoding="utf-8"))
            except FileNotFoundError:
                raise ValueError(f"Collection {name} not found") from None
        return self._sides[name]

    def _folder(self, name: str) -> Path:
        if (
            not name
            or "/" in name
            or name.startswith(".")
            or name.endswith((edge_shards.VACUUM, edge_shards.OLD))
        ):
            raise ValueError(f"invalid collection name {name!r}")
        return self.root / name

    def _side_path(self, name: str) -> Path:
        return self._folder(name) / edge_shards.SIDE_FILE

    def _unlock(self) -> None:
        if self._lock_file is not None:
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)
            self._lock_file.close()
            self._lock_file = None


def _done() -> qm.UpdateResult:
    return qm.UpdateResult(operation_id=None, status=qm.UpdateStatus.COMPLETED)


class EdgeClient(EdgeEngine):
    """The client the adapters hold for embedded Qdrant Edge: the engine itself."""

    @property
    def engine(self) -> EdgeEngine:
        return self
