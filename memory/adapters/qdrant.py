"""``ports.MemorySpaces`` on Qdrant (``AsyncQdrantClient``): a server, or embedded Qdrant Edge.

Embedded, the client is ``qdrant_edge.EdgeClient`` (Qdrant Edge shards behind the client's API),
so this one implementation serves both. Two physical layouts (``settings.qdrant.layout``; unset:
``shared`` embedded, ``per_space`` on a server), one behaviour:

* ``per_space`` — a collection per space (``lm_viewer_<user id>``, ``lm_stream_<id>``, ``lm_lore``).
  Searches need no payload filter.
* ``shared`` — one collection per kind (``lm_shared_viewer``, ``lm_shared_stream``,
  ``lm_shared_lore``) with a ``tenant`` payload key (the space key) indexed as KEYWORD with
  ``is_tenant=True``; every read and delete filters by tenant, in the engine. What Qdrant advises.

Collections (naming, creation, the embedder recorded in their metadata and in a manifest checked
when the spaces open, error translation) are managed by ``qdrant_collections.Collections``.
Memory ids must be UUID strings unique across spaces (consolidation derives them from turn, author
and kind).
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from typing import TYPE_CHECKING, Any, Self, TypeVar

from memory import errors, identity
from memory.adapters import (
    qdrant_bm25,
    qdrant_collections,
    qdrant_edge,
    qdrant_hybrid,
    qdrant_migrate,
    qdrant_multi,
)
from memory.adapters import qdrant_models as qm
from memory.spaces import embedders, lexical, recency
from memory.spaces import records as memory_records
from memory.spaces import store as spaces_module

if TYPE_CHECKING:
    import builtins
    from collections.abc import Awaitable, Callable, Collection, Iterator, Sequence
    from datetime import datetime
    from types import TracebackType

    from config.settings import Settings
    from memory import ports
    from memory.adapters.qdrant_collections import Client

logger = logging.getLogger(__name__)

_T = TypeVar("_T")
_PAGE = 256
#: a space ``warm`` read this recently is not read again (its pages are likely still in memory)
TOUCH_SECONDS = 60.0
#: how many recently read spaces ``warm`` remembers
TOUCHED_KEPT = 10_000


#: a personal space no viewer has (user ids are Twitch's digits): ``preload``'s first search
_NOBODY = identity.personal_key("preload")


def _scope(space: str, shared: bool) -> list[qm.Condition]:
    if not shared:
        return []
    return [qm.FieldCondition(key=spaces_module.TENANT_KEY, match=qm.MatchValue(value=space))]


def _filter(conditions: Sequence[qm.Condition]) -> qm.Filter | None:
    return qm.Filter(must=list(conditions)) if conditions else None


def _selector(conditions: Sequence[qm.Condition]) -> qm.FilterSelector:
    return qm.FilterSelector(filter=qm.Filter(must=list(conditions)))


class QdrantSpaces:
    """Memory spaces on Qdrant; see the module docstring for the layouts."""

    def __init__(
        self,
        client: Client,
        embedder: ports.Embedder,
        *,
        layout: str = "per_space",
        prefix: str = "lm",
        owns_client: bool = False,
        sparse: ports.SparseEncoder = lexical.ENCODER,
    ) -> None:
        self.client = client
        self.embedder = embedder
        self.embedder_name = embedder.name
        self.shared = layout == "shared"
        self.layout = layout
        self.prefix = prefix
        self._owns_client = owns_client
        #: space → when ``warm`` last read its points (monotonic seconds), oldest first
        self._touched: dict[str, float] = {}
        self._collections = qdrant_collections.Collections(
            client, embedder, layout=layout, prefix=prefix, sparse=sparse
        )

    @classmethod
    async def open(
        cls,
        settings: Settings,
        embedder: ports.Embedder,
        *,
        location: str | None = None,
        client: Any = None,
    ) -> QdrantSpaces:
        if not embedder.dim:  # an Ollama embedder that has not embedded anything yet
            await embedder.embed(["dimension probe"])
        owns = client is None
        if owns and location is None and settings.qdrant_url is None:  # an older release's store
            await qdrant_migrate.migrate(settings, progress=sys.stderr)
        client = qdrant_collections.adopt(client) or qdrant_collections.make_client(
            settings, location
        )
        self = cls(
            client,
            embedder,
            layout=qdrant_collections.layout(settings, client),
            prefix=settings.qdrant.collection_prefix,
            owns_client=owns,
            sparse=qdrant_bm25.encoder(settings.memory.sparse_scheme),
        )
        try:
            await self._collections.check_manifest(settings)
        except BaseException:
            await self.close()
            raise
        return self

    async def close(self) -> None:
        if self._owns_client:
            await self.client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def warm(self, spaces: Collection[str]) -> int:
        """Get ``spaces`` ready ahead of use (embedded Qdrant; a server needs nothing): load their
        shards (returns how many it loaded) and, in the shared layout, read the spaces' points
        once (``EdgeEngine.touch``; a space read in the last ``TOUCH_SECONDS`` is skipped)."""
        if not isinstance(self.client, qdrant_edge.EdgeClient):
            return 0
        engine = self.client.engine
        loaded = await engine.warm([self.collection(space) for space in spaces])
        if self.shared:
            now = time.monotonic()
            for space in spaces:
                name = self.collection(space)
                if now - self._touched.get(space, -TOUCH_SECONDS) < TOUCH_SECONDS:
                    continue
                if name in engine.open_names():
                    with qdrant_collections.wrap_errors("warm"):
                        await engine.touch(name, _filter(_scope(space, True)))
                    self._touched.pop(space, None)  # to the end: the newest
                    self._touched[space] = now
            while len(self._touched) > TOUCHED_KEPT:  # the oldest first
                del self._touched[next(iter(self._touched))]
        return loaded

    async def preload(self) -> int:
        """Load the stored shards of the shared layout on Qdrant Edge before chat arrives (~0.2 s
        per 30,000 memories, measured), so no viewer's first turn waits for it; 0 elsewhere
        (a server, or a shard per viewer, loaded when used)."""
        if not self.shared or not isinstance(self.client, qdrant_edge.EdgeClient):
            return 0
        names = await self._collections.managed()
        began = time.perf_counter()
        with qdrant_collections.wrap_errors("open"):
            loaded = await self.client.engine.warm(names)
        # a start's largest part after the imports: said, to be seen
        logger.info(
            "embedded Qdrant: %d shard(s) loaded in %.0f ms",
            loaded,
            (time.perf_counter() - began) * 1000,
        )
        if self.collection(_NOBODY) in names:
            # one search of nobody's memories: the first search of a process builds what the
            # rest reuse (qdrant-client's models, Edge's search threads; 15-50 ms, measured),
            # paid here instead of by the first viewer's turn
            await self.search(_NOBODY, "hello", limit=1)
        return loaded

    def collection(self, space: str) -> str:
        """The collection that holds ``space``."""
        return self._collections.name(space)

    @property
    def sparse(self) -> ports.SparseEncoder:
        """The store's sparse scheme (the one its manifest records; ``qdrant_collections``)."""
        return self._collections.sparse

    # -- writes --------------------------------------------------------------------------------

    async def upsert(self, records: Sequence[memory_records.MemoryRecord]) -> None:
        for record in records:
            spaces_module.validate_record(record)
        if not records:
            return
        vectors = await self.embedder.embed([r.dense_text for r in records])
        groups: dict[str, list[tuple[memory_records.MemoryRecord, list[float]]]] = {}
        for record, vector in zip(records, vectors, strict=True):
            groups.setdefault(record.space, []).append((record, vector))
        for space, group in groups.items():
            try:
                with qdrant_collections.wrap_errors("upsert"):
                    await self._upsert_space(space, group)
            except qdrant_collections.CollectionGone:  # dropped by another process: create it again
                self._collections.forget(self.collection(space))
                with qdrant_collections.wrap_errors("upsert"):
                    await self._upsert_space(space, group)

    async def _upsert_space(
        self, space: str, group: Sequence[tuple[memory_records.MemoryRecord, list[float]]]
    ) -> None:
        name = self.collection(space)
        await self._collections.ensure(name, space=space, create=True)
        encoder = self._collections.encoder(name)
        corrects = {r.corrects: r.id for r, _ in group if r.corrects}
        ids = {r.id for r, _ in group} | set(corrects)
        existing = {
            str(p.id): p.payload or {}
            for p in await self.client.retrieve(name, ids=sorted(ids), with_payload=True)
        }
        points = []
        for record, vector in group:
            payload = spaces_module.to_payload(record)
            old = existing.get(record.id, {})
            marker = corrects.get(record.id) or (
                old.get(spaces_module.CORRECTED_BY_KEY) if old.get("space") == space else None
            )
            payload[spaces_module.CORRECTED_BY_KEY] = marker
            if record.superseded_by is None and old.get("space") == space:  # a retry keeps it
                payload["superseded_by"] = old.get("superseded_by")
                payload["superseded_at"] = old.get("superseded_at")
            if self.shared:
                payload[spaces_module.TENANT_KEY] = space
            vectors = qdrant_hybrid.point_vector(encoder, record, vector)
            if encoder is not None:
                payload[spaces_module.TERMS_KEY] = recency.stored_terms(record, encoder)
            points.append(
                qm.PointStruct(
                    id=record.id, vector=vectors, payload=spaces_module.stored_payload(payload)
                )
            )
        await self.client.upsert(name, points=points, wait=True)
        in_group = {r.id for r, _ in group}
        for target, correction in corrects.items():
            if target not in in_group and existing.get(target, {}).get("space") == space:
                await self.client.set_payload(
                    name, payload={spaces_module.CORRECTED_BY_KEY: correction}, points=[target]
                )

    async def supersede(self, space: str, ids: Sequence[str], *, by: str, at: datetime) -> int:
        found: builtins.list[qm.ExtendedPointId] = [
            r.id for r in await self.get(space, ids) if r.id != by
        ]

        async def mark(name: str) -> int:
            payload = {"superseded_by": by, "superseded_at": at.isoformat()}
            await self.client.set_payload(name, payload=payload, points=found, wait=True)
            return len(found)

        return await self._read(space, "supersede", mark, 0) if found else 0

    async def unsupersede(self, space: str, ids: Sequence[str]) -> int:
        found: builtins.list[qm.ExtendedPointId] = [
            r.id for r in await self.get(space, ids) if r.superseded_by is not None
        ]

        async def clear(name: str) -> int:
            payload = {"superseded_by": None, "superseded_at": None}
            await self.client.set_payload(name, payload=payload, points=found, wait=True)
            return len(found)

        return await self._read(space, "unsupersede", clear, 0) if found else 0

    async def delete(self, space: str, ids: Sequence[str]) -> int:
        found = await self.get(space, ids)

        async def delete(name: str) -> int:
            selector = qm.PointIdsList(points=[r.id for r in found])
            await self.client.delete(name, points_selector=selector, wait=True)
            return len(found)

        return await self._read(space, "delete", delete, 0) if found else 0

    async def delete_turn(self, turn_id: str, *, spaces: Collection[str] | None = None) -> int:
        condition = qm.FieldCondition(key="turn_id", match=qm.MatchValue(value=turn_id))
        total = 0
        for name in await self._where(spaces):
            with self._skip_gone(name), qdrant_collections.wrap_errors("delete turn"):
                found = (await self.client.count(name, count_filter=_filter([condition]))).count
                if found:
                    await self.client.delete(name, points_selector=_selector([condition]))
                total += found
        return total

    async def drop(self, space: str) -> int:
        held = await self.count(space)
        name = self.collection(space)
        with self._skip_gone(name), qdrant_collections.wrap_errors("drop"):
            if not self.shared:
                self._collections.forget(name)
                if await self.client.collection_exists(name):
                    await self.client.delete_collection(name)
            elif held:
                await self.client.delete(
                    name, points_selector=_selector(_scope(space, True)), wait=True
                )
        return held

    async def vacuum(self, spaces: Collection[str]) -> int:
        """Embedded Qdrant (Edge) keeps the bytes of deleted and replaced points in its WAL until it
        rotates: rebuild the shards from their live points (``qdrant_edge.EdgeEngine.vacuum``). A
        Qdrant server drops them when it optimizes its segments (its vacuum thresholds)."""
        if not isinstance(self.client, qdrant_edge.EdgeClient):
            return 0
        names = dict.fromkeys(self.collection(space) for space in spaces)
        with qdrant_collections.wrap_errors("vacuum"):
            return sum([await self.client.engine.vacuum(name) for name in names])

    async def _where(self, spaces: Collection[str] | None) -> builtins.list[str]:
        """The existing collections that hold ``spaces`` (None: every memory collection)."""
        if spaces is None:
            return await self._collections.managed()
        names = dict.fromkeys(self.collection(space) for space in spaces)
        with qdrant_collections.wrap_errors("open"):
            return [n for n in names if await self._collections.ensure(n, space=None, create=False)]

    # -- reads ---------------------------------------------------------------------------------

    async def _read(
        self, space: str, action: str, read: Callable[[str], Awaitable[_T]], empty: _T
    ) -> _T:
        """``read(collection)`` with errors translated; ``empty`` when the space has none."""
        spaces_module.space_kind(space)
        name = self.collection(space)
        with qdrant_collections.wrap_errors(action):
            if not await self._collections.ensure(name, space=space, create=False):
                return empty
        try:
            with qdrant_collections.wrap_errors(action):
                return await read(name)
        except (
            qdrant_collections.CollectionGone
        ):  # dropped by another process since this one saw it
            self._collections.forget(name)
            return empty

    @contextlib.contextmanager
    def _skip_gone(self, name: str) -> Iterator[None]:
        try:
            yield
        except qdrant_collections.CollectionGone:
            self._collections.forget(name)

    async def get(
        self, space: str, ids: Sequence[str]
    ) -> builtins.list[memory_records.MemoryRecord]:
        wanted = [i for i in dict.fromkeys(ids) if spaces_module.is_memory_id(i)]

        async def get(name: str) -> builtins.list[memory_records.MemoryRecord]:
            points = await self.client.retrieve(name, ids=wanted, with_payload=True)
            by_id = {str(p.id): p.payload or {} for p in points}
            return [
                spaces_module.from_payload(by_id[i])
                for i in wanted
                if i in by_id and by_id[i].get("space") == space
            ]

        if not wanted:
            spaces_module.space_kind(space)
            return []
        return await self._read(space, "get", get, [])

    async def list(
        self, space: str, *, limit: int = 1000
    ) -> builtins.list[memory_records.MemoryRecord]:
        async def scroll(name: str) -> builtins.list[memory_records.MemoryRecord]:
            records: builtins.list[memory_records.MemoryRecord] = []
            offset: Any = None
            while len(records) < limit:
                points, offset = await self.client.scroll(
                    name,
                    scroll_filter=_filter(_scope(space, self.shared)),
                    limit=min(_PAGE, limit - len(records)),
                    offset=offset,
                    with_payload=True,
                )
                records.extend(spaces_module.from_payload(p.payload or {}) for p in points)
                if offset is None:
                    break
            return sorted(records, key=lambda r: (r.created_at, r.id))

        return await self._read(space, "list", scroll, [])

    async def find(
        self, memory_id: str, *, spaces: Collection[str] | None = None
    ) -> memory_records.MemoryRecord | None:
        if not spaces_module.is_memory_id(memory_id):
            return None
        for name in await self._where(spaces):
            with self._skip_gone(name), qdrant_collections.wrap_errors("find"):
                points = await self.client.retrieve(name, ids=[memory_id], with_payload=True)
                if points:
                    return spaces_module.from_payload(points[0].payload or {})
        return None

    async def count(self, space: str) -> int:
        async def count(name: str) -> int:
            scope = _filter(_scope(space, self.shared))
            return (await self.client.count(name, count_filter=scope, exact=True)).count

        return await self._read(space, "count", count, 0)

    async def stored(self) -> int:
        """How many points the memory collections hold (every space, superseded ones too)."""
        total = 0
        for name in await self._collections.managed():
            with self._skip_gone(name), qdrant_collections.wrap_errors("count"):
                total += (await self.client.count(name, exact=True)).count
        return total

    async def spaces(self) -> builtins.list[str]:
        found: set[str] = set()
        for name in await self._collections.managed():
            with self._skip_gone(name), qdrant_collections.wrap_errors("spaces"):
                if self.shared:
                    facets = await self.client.facet(
                        name, key=spaces_module.TENANT_KEY, limit=1_000_000, exact=True
                    )
                    found.update(str(hit.value) for hit in facets.hits if hit.count)
                elif (await self.client.count(name, exact=True)).count:
                    found.add(self._collections.known[name]["space"])
        return sorted(found)

    async def search(
        self,
        space: str,
        query: str,
        *,
        limit: int = 5,
        kinds: Collection[memory_records.MemoryKind] | None = None,
        window: memory_records.TimeWindow | None = None,
        include_superseded: bool = False,
    ) -> builtins.list[memory_records.MemoryHit]:
        """Dense search plus corrections and the lexical signal (see ``spaces.rank``).

        Only when ``kinds`` are rare among the top candidates does a kind-filtered search follow.
        """

        async def search(name: str) -> builtins.list[memory_records.MemoryHit]:
            [vector] = await self.embedder.embed([query], kind="query")
            fetch = spaces_module.fetch_size(limit)
            scope = [
                *_scope(space, self.shared),
                *qdrant_hybrid.current(window, include_superseded),
            ]
            encoder = self._collections.encoder(name)
            sparse = encoder.query(query) if encoder else None
            candidates = await self._query(name, vector, sparse, fetch, scope)
            if kinds is not None and len(candidates) == fetch:
                matching = [c for c in candidates if c.record.kind in kinds]
                if len(matching) < limit:  # rare kinds deeper down: ask the store to filter
                    kind_filter = qm.FieldCondition(
                        key="kind", match=qm.MatchAny(any=[k.value for k in kinds])
                    )
                    candidates += await self._query(
                        name, vector, sparse, fetch, [*scope, kind_filter]
                    )
            corrections = await self._corrections(name, space, candidates)
            return spaces_module.rank(
                query,
                candidates,
                corrections,
                limit=limit,
                kinds=kinds,
                sparse=encoder or self.sparse,
                query_terms=sparse[0] if sparse is not None else None,
            )

        if limit <= 0:
            spaces_module.space_kind(space)
            return []
        return await self._read(space, "search", search, [])

    async def search_spaces(
        self,
        spaces: Sequence[str],
        query: str,
        *,
        limit: int = 5,
        kinds: Collection[memory_records.MemoryKind] | None = None,
        window: memory_records.TimeWindow | None = None,
    ) -> builtins.list[memory_records.MemoryHit]:
        """One ranking over several spaces of a kind (``qdrant_multi``)."""
        return await qdrant_multi.search_spaces(
            self.client,
            self._collections,
            self.embedder,
            spaces,
            query,
            limit=limit,
            kinds=kinds,
            window=window,
        )

    async def _query(
        self,
        name: str,
        vector: builtins.list[float],
        sparse: lexical.SparseVector | None,
        fetch: int,
        conditions: Sequence[qm.Condition],
    ) -> builtins.list[spaces_module.Candidate]:
        return await qdrant_hybrid.search(
            self.client, name, vector, sparse, fetch, _filter(conditions)
        )

    async def _corrections(
        self, name: str, space: str, candidates: Sequence[spaces_module.Candidate]
    ) -> dict[str, memory_records.MemoryRecord]:
        """The corrections named by the candidates' marks that still exist in ``space``."""
        wanted = {c.corrected_by for c in candidates if c.corrected_by}
        if not wanted:
            return {}
        present = {c.record.id: c.record for c in candidates if c.record.id in wanted}
        missing = sorted(wanted - set(present))
        if missing:
            points = await self.client.retrieve(name, ids=missing, with_payload=True)
            for point in points:
                record = spaces_module.from_payload(point.payload or {})
                if record.space == space:
                    present[record.id] = record
        return present


async def open_spaces(
    settings: Settings,
    embedder: ports.Embedder,
    *,
    location: str | None = None,
    client: Any = None,
) -> QdrantSpaces:
    """Open the memory spaces on Qdrant; close them with ``await spaces.close()`` (or ``async with``).

    ``location``: ``":memory:"`` (tests: qdrant-client's local mode standing in for a server) or
    a folder for embedded Qdrant Edge; default: the server at ``settings.qdrant_url``, else
    embedded in ``<data_dir>/qdrant-edge``. ``client``: an
    ``AsyncQdrantClient`` owned by the caller (never closed here). Raises
    ``errors.EmbedderMismatch`` when the stored vectors were made by another embedder and
    ``errors.StoreUnavailable`` when the server cannot be reached. With the ``auto`` embedder, a
    store made by another local embedder opens with that one (``embedders.keep_recorded``;
    ``spaces.embedder`` says which).
    """
    try:
        return await QdrantSpaces.open(settings, embedder, location=location, client=client)
    except errors.EmbedderMismatch as mismatch:
        kept = await embedders.keep_recorded(settings, embedder, mismatch)
    spaces = await QdrantSpaces.open(settings, kept, location=location, client=client)
    embedders.upgrade_note(embedder.name, await spaces.stored())
    return spaces
