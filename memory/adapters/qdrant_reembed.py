"""Re-embedding memory collections with the configured embedder (``python -m memory.admin reembed``).

A collection is rebuilt, never edited in place, because its vector schema changes with the embedder
(another dim) and with hybrid search (named dense + sparse ``lexical`` vectors instead of one unnamed
vector). For collection ``C`` (a space in the per-space layout, a kind in the shared one):

1. **build** — ``C__reembed`` (``store.staging_collection``) is created in the current schema,
   marked ``complete: false`` in its metadata; ``C``'s points are read page by page, their texts
   embedded and upserted there with the *same ids and payloads* (ids are stable UUIDs derived from
   turn, author and kind, so an upsert repeated after a crash overwrites, never duplicates). Then
   the staging collection is marked ``complete: true``.
2. **swap** — ``C`` is dropped if it is in the old schema, created again in the current one, the
   staging points copied in (vectors included: nothing is embedded again) and ``C__reembed`` dropped.
   ``C`` is only dropped once the staging collection holds every memory of it.

Resuming needs no progress table: the state is in Qdrant, next to the data it describes. A staging
collection not complete means "build again from ``C``, skipping the ids already staged" (a lookup by
id per page: re-running embeds only what is missing); complete means "swap again" (dropping a
half-filled ``C`` and copying again is idempotent). While any staging collection exists the bot
refuses to start (``Collections.check_no_staging``). When every memory collection is current, the
manifest is rewritten for the configured embedder, and the bot starts with it.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory import errors
from memory.adapters import qdrant_bm25, qdrant_collections, qdrant_hybrid
from memory.adapters import qdrant_models as qm
from memory.spaces import lexical, recency
from memory.spaces import store as spaces_module

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Sequence

    from config.settings import Settings
    from memory import ports
    from memory.adapters.qdrant_collections import Client

logger = logging.getLogger(__name__)

META_KEY = qdrant_collections.META_KEY
#: memories embedded and written per page
BATCH = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class Task:
    """One collection to rebuild."""

    collection: str
    staging: str
    #: the embedder that made the collection's vectors (None: unknown)
    made_by: str | None
    #: ``embedder`` (another embedder made it), ``dense-only`` (predates hybrid search),
    #: ``forced`` (``--force``) or ``unfinished`` (an interrupted run left its staging collection)
    reason: str
    #: memories the collection holds
    memories: int
    #: of those, already embedded by an interrupted run
    done: int
    #: the staging collection is complete: only the swap is left
    swapping: bool

    @property
    def remaining(self) -> int:
        return 0 if self.swapping else max(self.memories - self.done, 0)

    def to_json(self) -> dict[str, Any]:
        return {
            "collection": self.collection,
            "made_by": self.made_by,
            "reason": self.reason,
            "memories": self.memories,
            "done": self.done,
            "remaining": self.remaining,
            "swapping": self.swapping,
        }


class Reembedder:
    """Plans and runs the rebuild of the memory collections of one prefix and layout."""

    def __init__(
        self,
        client: Client,
        embedder: ports.Embedder,
        *,
        layout: str,
        prefix: str,
        batch: int = BATCH,
        sparse: ports.SparseEncoder = lexical.ENCODER,
    ) -> None:
        self.client = client
        self.embedder = embedder
        #: ``sparse``: a new store's scheme; an existing store keeps its own (``open_reembedder``)
        self.collections = qdrant_collections.Collections(
            client, embedder, layout=layout, prefix=prefix, sparse=sparse
        )
        self.prefix = prefix
        self.shared = layout == "shared"
        self.layout = layout
        self.batch = max(1, batch)

    # -- what there is -------------------------------------------------------------------------

    async def metadata(self, name: str) -> dict[str, Any] | None:
        """The livememory metadata of collection ``name``; None when it does not exist."""
        with qdrant_collections.wrap_errors("read collection"):
            if not await self.client.collection_exists(name):
                return None
            info = await self.client.get_collection(name)
        return dict((info.config.metadata or {}).get(META_KEY) or {})

    def current(self, meta: dict[str, Any]) -> bool:
        """Whether a collection's vectors are the configured embedder's, in the current schema."""
        return (
            meta.get("embedder") == self.embedder.name
            and meta.get("dim") == self.embedder.dim
            and meta.get("lexical") == self.collections.sparse.version
        )

    async def count(self, name: str) -> int:
        with qdrant_collections.wrap_errors("count"):
            return (await self.client.count(name, exact=True)).count

    async def names(self, spaces: Sequence[str] | None) -> list[str]:
        """The memory collections holding ``spaces`` (None: all of this prefix and layout),
        including those only an interrupted run's staging collection holds now."""
        if spaces is not None:
            return list(dict.fromkeys(self.collections.name(space) for space in spaces))
        with qdrant_collections.wrap_errors("list collections"):
            listed = await self.client.get_collections()
        start = f"{self.prefix}_shared_" if self.shared else f"{self.prefix}_"
        found: dict[str, None] = {}
        for description in sorted(listed.collections, key=lambda c: c.name):
            name = description.name.removesuffix(spaces_module.STAGING_SUFFIX)
            if not name.startswith(start) or name == spaces_module.manifest_collection(self.prefix):
                continue
            if not self.shared and name.startswith(f"{self.prefix}_shared_"):
                continue
            meta = await self.metadata(description.name)
            if meta is not None and meta.get("layout", self.layout) == self.layout:
                found[name] = None
        return list(found)

    async def plan(self, spaces: Sequence[str] | None, *, force: bool = False) -> list[Task]:
        """What a run would rebuild, in collection order."""
        tasks = []
        for name in await self.names(spaces):
            task = await self._task(name, force=force)
            if task is not None:
                tasks.append(task)
        return tasks

    async def _task(self, name: str, *, force: bool) -> Task | None:
        staging = spaces_module.staging_collection(name)
        source, staged = await self.metadata(name), await self.metadata(staging)
        if staged is not None and not self.current(staged):
            if staged.get("complete"):  # the only full copy of the collection may be there
                raise errors.EmbedderMismatch(
                    f"{staging} holds a finished re-embedding with {staged.get('embedder')} that "
                    f"was interrupted while swapping it in: set LIVEMEMORY_MEMORY__EMBEDDER back "
                    f"to that embedder and run reembed again to finish it, then switch",
                    recorded=staged.get("embedder"),
                    configured=self.embedder.name,
                )
            with qdrant_collections.wrap_errors("drop staging"):  # an older run's, for another
                await self.client.delete_collection(staging)  # embedder: the source is intact
            staged = None
        made_by = (source or {}).get("embedder")
        if staged is not None:
            complete = bool(staged.get("complete"))
            held = await self.count(staging)
            memories = held if complete or source is None else await self.count(name)
            return Task(
                collection=name,
                staging=staging,
                made_by=made_by,
                reason="unfinished",
                memories=memories,
                done=held,
                swapping=complete,
            )
        if source is None:
            return None
        if self.current(source) and not force:
            return None
        if made_by != self.embedder.name or source.get("dim") != self.embedder.dim:
            reason = "embedder"
        elif source.get("lexical") != self.collections.sparse.version:
            reason = "dense-only"
        else:
            reason = "forced"
        return Task(
            collection=name,
            staging=staging,
            made_by=made_by,
            reason=reason,
            memories=await self.count(name),
            done=0,
            swapping=False,
        )

    # -- the work ------------------------------------------------------------------------------

    async def run(
        self,
        task: Task,
        *,
        on_batch: Callable[[str, int], None] | None = None,
        budget: int | None = None,
    ) -> tuple[int, bool]:
        """Rebuild ``task``'s collection; (memories embedded, finished). With ``budget``, embed at
        most that many memories and stop (not finished: a later run continues). ``on_batch`` is
        called after each page written, with the phase (``embed`` or ``swap``) and its size."""
        hook = on_batch or (lambda phase, count: None)
        embedded = 0
        if not task.swapping:
            with qdrant_collections.wrap_errors("re-embed"):
                embedded, built = await self._build(task, hook, budget)
            if not built:
                return embedded, False
        with qdrant_collections.wrap_errors("swap"):
            await self._swap(task, hook)
        return embedded, True

    async def _build(
        self, task: Task, hook: Callable[[str, int], None], budget: int | None
    ) -> tuple[int, bool]:
        name, staging = task.collection, task.staging
        source = await self.metadata(name) or {}
        if await self.metadata(staging) is None:
            more = {"reembed_of": name, "complete": False}
            space = source.get("space") or await self._space_of(name)
            await self.collections.create_memory(staging, space=space, more=more)
        embedded = 0
        offset: Any = None
        while True:
            points, offset = await self.client.scroll(
                name, limit=self.batch, offset=offset, with_payload=True, with_vectors=False
            )
            staged = (
                await self.client.retrieve(
                    staging, ids=[p.id for p in points], with_payload=False, with_vectors=False
                )
                if points
                else []
            )
            have = {str(p.id) for p in staged}
            todo = [p for p in points if str(p.id) not in have]
            allowed = todo if budget is None else todo[: max(budget - embedded, 0)]
            if allowed:
                await self._write(staging, allowed)
                embedded += len(allowed)
                hook("embed", len(allowed))
            if len(allowed) < len(todo):
                return embedded, False
            if offset is None:
                break
        meta = await self.metadata(staging) or {}
        await self.client.update_collection(
            staging, metadata={META_KEY: {**meta, "complete": True}}
        )
        return embedded, True

    async def _space_of(self, name: str) -> str:
        """The space a per-space collection holds, from a point (old metadata may lack it)."""
        points, _ = await self.client.scroll(name, limit=1, with_payload=True, with_vectors=False)
        return str((points[0].payload or {}).get("space", "")) if points else ""

    async def _write(self, staging: str, points: Sequence[qm.Record]) -> None:
        payloads = [dict(p.payload or {}) for p in points]
        memories = [spaces_module.from_payload(p) for p in payloads]
        vectors = await self.embedder.embed([m.dense_text for m in memories])
        sparse = self.collections.sparse
        structs = []
        for point, payload, record, dense in zip(points, payloads, memories, vectors, strict=True):
            # the terms in this scheme (the collection re-embedded may have had another)
            payload[spaces_module.TERMS_KEY] = recency.stored_terms(record, sparse)
            vector = qdrant_hybrid.point_vector(sparse, record, dense)
            stored = spaces_module.stored_payload(payload)
            structs.append(qm.PointStruct(id=point.id, vector=vector, payload=stored))
        await self.client.upsert(staging, points=structs, wait=True)

    async def _swap(self, task: Task, hook: Callable[[str, int], None]) -> None:
        name, staging = task.collection, task.staging
        staged = await self.metadata(staging) or {}
        source = await self.metadata(name)
        if source is not None and not self.current(source):
            await self.client.delete_collection(name)
            source = None
        if source is None:
            await self.collections.create_memory(name, space=staged.get("space", ""), more={})
        offset: Any = None
        while True:
            points, offset = await self.client.scroll(
                staging, limit=self.batch * 4, offset=offset, with_payload=True, with_vectors=True
            )
            if points:
                structs = [
                    qm.PointStruct(id=p.id, vector=p.vector or {}, payload=p.payload)
                    for p in points
                ]
                await self.client.upsert(name, points=structs, wait=True)
                hook("swap", len(points))
            if offset is None:
                break
        await self.client.delete_collection(staging)
        logger.info(
            "re-embedded %s with %s",
            name,
            self.embedder.name,
            extra={"action": "collection_reembedded"},
        )

    async def finish(self) -> list[str]:
        """The memory collections still not current (stale, or half-way); when there are none,
        the manifest is made to record the configured embedder, so the bot starts with it."""
        pending = []
        for name in await self.names(None):
            source = await self.metadata(name)
            staged = await self.metadata(spaces_module.staging_collection(name))
            if staged is not None or source is None or not self.current(source):
                pending.append(name)
        if pending:
            return pending
        manifest = spaces_module.manifest_collection(self.prefix)
        recorded = await self.metadata(manifest)
        with qdrant_collections.wrap_errors("manifest"):
            if recorded is not None and (
                recorded.get("embedder") != self.embedder.name
                or recorded.get("dim") != self.embedder.dim
            ):
                await self.client.delete_collection(manifest)
                logger.info("manifest %s now records %s", manifest, self.embedder.name)
            await self.collections.ensure(manifest, space=None, create=True, vector_size=1)
        return []


@contextlib.asynccontextmanager
async def open_reembedder(
    settings: Settings, embedder: ports.Embedder
) -> AsyncIterator[Reembedder]:
    """A ``Reembedder`` on the configured Qdrant (server, or the embedded folder: whose lock
    means the bot and the worker must be stopped). Opening does not check the manifest."""
    if not embedder.dim:  # an Ollama embedder that has not embedded anything yet
        await embedder.embed(["dimension probe"])
    client = qdrant_collections.make_client(settings, None)
    try:
        job = Reembedder(
            client,
            embedder,
            layout=qdrant_collections.layout(settings, client),
            prefix=settings.qdrant.collection_prefix,
            sparse=qdrant_bm25.encoder(settings.memory.sparse_scheme),
        )
        manifest = await job.metadata(spaces_module.manifest_collection(job.prefix))
        if manifest is not None:  # the store keeps its sparse scheme
            job.collections.adopt_scheme(manifest)
        yield job
    finally:
        await client.close()
