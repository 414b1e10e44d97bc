"""The Qdrant collections of one prefix and layout: naming, creation, embedder checks, errors.

Each collection records, in its collection metadata (``{"livememory": {...}}``, kept by local mode
too), the embedder name and dim, the layout and (per-space) the space key; a manifest collection
``<prefix>_manifest`` records the embedder for the whole prefix, checked when the spaces open, so
another embedder fails at start-up with ``errors.EmbedderMismatch`` instead of mixing vectors.
The manifest also records the sparse scheme (``lexical``, ``ports.SparseEncoder.version``) the
store was made with, and the store keeps it whatever ``memory.sparse_scheme`` says (that setting
chooses a new store's): a manifest made before the choice existed is ``lexical``'s. Each memory
collection records its scheme too and is written and searched with it (``encoder``).
``wrap_errors`` translates the client's errors at this boundary.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory import errors, outage
from memory.adapters import qdrant_bm25, qdrant_edge
from memory.adapters import qdrant_models as qm
from memory.spaces import lexical
from memory.spaces import store as spaces_module

if TYPE_CHECKING:
    from collections.abc import Iterator

    from config.settings import Settings
    from memory import ports
    from memory.adapters.qdrant_server import ServerClient

    Client = qdrant_edge.EdgeClient | ServerClient

logger = logging.getLogger(__name__)

META_KEY = "livememory"


class CollectionGone(errors.MemoryServiceError):
    """The collection was deleted (by another process) after this one saw it."""


@contextlib.contextmanager
def wrap_errors(action: str) -> Iterator[None]:
    """Translate client errors: unreachable or failing server → ``errors.StoreUnavailable``, an
    outage told once when it starts and once when it ends (``memory.outage``)."""
    with outage.watched(outage.QDRANT, "Qdrant"), _translate(action):
        yield


@contextlib.contextmanager
def _translate(action: str) -> Iterator[None]:
    try:
        yield
    except OSError as exc:  # qm.Unreachable among them
        raise errors.StoreUnavailable(f"Qdrant is unavailable ({action}): {exc}") from exc
    except ValueError as exc:  # local mode
        if "not found" in str(exc):
            raise CollectionGone(f"{action}: {exc}") from exc
        raise
    except qm.UnexpectedResponse as exc:
        if exc.status_code == 404:
            raise CollectionGone(f"{action}: {exc}") from exc
        if exc.status_code is not None and exc.status_code >= 500:
            raise errors.StoreUnavailable(f"Qdrant error ({action}): {exc}") from exc
        raise errors.MemoryServiceError(f"Qdrant refused {action}: {exc}") from exc


#: the embedded store's folder under the data folder (Qdrant Edge shards)
EMBEDDED_FOLDER = "qdrant-edge"


def embedded_root(settings: Settings) -> Path:
    return settings.data_dir / EMBEDDED_FOLDER


def layout(settings: Settings, client: Client) -> str:
    """The configured layout; unset: ``shared`` on Qdrant Edge, ``per_space`` elsewhere."""
    if settings.qdrant.layout is not None:
        return settings.qdrant.layout
    return "shared" if isinstance(client, qdrant_edge.EdgeClient) else "per_space"


def make_client(settings: Settings, location: str | None) -> Client:
    """``":memory:"`` (qdrant-client's local mode: the tests' stand-in for a server), a server
    (``QDRANT_URL``), or embedded: Qdrant Edge shards under ``location`` (default
    ``<data_dir>/qdrant-edge``)."""
    if location == ":memory:":
        from memory.adapters import qdrant_server

        return qdrant_server.make(location=":memory:")
    if location is None and settings.qdrant_url:
        from memory.adapters import qdrant_server

        api_key = settings.qdrant.api_key
        return qdrant_server.make(
            url=settings.qdrant_url,
            api_key=api_key.get_secret_value() if api_key else None,
            timeout=max(1, round(settings.qdrant.timeout_seconds)),
            check_compatibility=False,
        )
    root = Path(location) if location is not None else embedded_root(settings)
    return qdrant_edge.EdgeClient(root)


def adopt(client: Any) -> Client | None:
    """A caller's client: qdrant-client's own (``AsyncQdrantClient``) is wrapped (``qdrant_server``)."""
    if type(client).__module__.startswith("qdrant_client"):
        from memory.adapters import qdrant_server

        return qdrant_server.ServerClient(client)
    return client  # type: ignore[no-any-return]  # ours, or None


class Collections:
    """The memory collections of one prefix and layout, and the ones known to exist."""

    def __init__(
        self,
        client: Client,
        embedder: ports.Embedder,
        *,
        layout: str,
        prefix: str,
        sparse: ports.SparseEncoder = lexical.ENCODER,
    ) -> None:
        self.client = client
        #: the sparse scheme of the collections this one creates: the configured one until the
        #: store's manifest says otherwise (``adopt_scheme``)
        self.sparse = sparse
        self.embedder = embedder
        self.layout = layout
        self.shared = layout == "shared"
        self.prefix = prefix
        #: collection name → its livememory metadata, for collections known to exist
        self.known: dict[str, dict[str, Any]] = {}
        self._lock = asyncio.Lock()

    def hybrid(self, name: str) -> bool:
        """Whether collection ``name`` (known to exist) holds the sparse lexical vector too."""
        return self.encoder(name) is not None

    def encoder(self, name: str) -> ports.SparseEncoder | None:
        """The sparse scheme collection ``name`` (known to exist) records (None: dense only)."""
        return qdrant_bm25.for_version(self.known.get(name, {}).get("lexical"))

    def forget(self, name: str) -> None:
        """Collection ``name`` is gone (dropped, maybe by another process)."""
        self.known.pop(name, None)

    def name(self, space: str) -> str:
        """The collection that holds ``space``."""
        if self.shared:
            return spaces_module.shared_collection(self.prefix, space)
        return spaces_module.space_collection(self.prefix, space)

    async def check_manifest(self, settings: Settings) -> None:
        name = spaces_module.manifest_collection(self.prefix)
        attempts = 1 if settings.qdrant_url is None else settings.qdrant.connect_attempts
        for attempt in range(1, attempts + 1):
            try:
                with wrap_errors("open"):
                    await self.ensure(name, space=None, create=True, vector_size=1)
                    self.adopt_scheme(self.known[name])
                    await self.check_no_staging()
                return
            except errors.StoreUnavailable:
                if attempt == attempts:
                    raise
                logger.warning("Qdrant not reachable, %d attempt(s) left", attempts - attempt)
                await asyncio.sleep(settings.qdrant.connect_retry_seconds)

    def adopt_scheme(self, manifest: dict[str, Any]) -> None:
        """Keep the sparse scheme the store's ``manifest`` metadata records (none: ``lexical``'s,
        every store made before the choice); an unknown one refuses to open."""
        version = manifest.get("lexical", lexical.VERSION)
        recorded = qdrant_bm25.for_version(version)
        if recorded is None:
            raise errors.EmbedderMismatch(
                f"the memory store records the sparse scheme {version!r}, which this release "
                "does not know: run the release that made it",
                recorded=str(version),
                configured=self.sparse.version,
            )
        if recorded.version != self.sparse.version:
            logger.info(
                "the memory store keeps its sparse scheme %s (memory.sparse_scheme chooses a new "
                "store's: %s)",
                recorded.version,
                self.sparse.version,
                extra={"action": "sparse_scheme_kept"},
            )
        self.sparse = recorded

    async def check_no_staging(self) -> None:
        """Refuse to open while a ``memory.admin reembed`` is unfinished: the memories of a space
        being swapped may sit in its staging collection only."""

        def staged(name: str) -> bool:
            return name.startswith(f"{self.prefix}_") and spaces_module.is_staging(name)

        listed = await self.client.get_collections()
        staging = sorted(c.name for c in listed.collections if staged(c.name))
        if staging:
            raise errors.EmbedderMismatch(
                f"a re-embedding did not finish ({len(staging)} collection(s) half-way, e.g. "
                f"{staging[0]}): run `{spaces_module.REEMBED_COMMAND}` again to finish it "
                "(it continues where it stopped)",
                recorded=None,
                configured=self.embedder.name,
            )

    async def ensure(
        self, name: str, *, space: str | None, create: bool, vector_size: int | None = None
    ) -> bool:
        """Whether collection ``name`` exists (creating it when asked), its embedder checked."""
        if name in self.known:
            return True
        async with self._lock:
            if name in self.known:
                return True
            if not await self.client.collection_exists(name):
                if not create:
                    return False
                await self._create(name, space, vector_size or self.embedder.dim)
            info = await self.client.get_collection(name)
            recorded = (info.config.metadata or {}).get(META_KEY)
            spaces_module.check_embedder(recorded, self.embedder, name)
            self.known[name] = dict(recorded or {})
            if space is not None and not self.hybrid(name):
                logger.warning(
                    "Qdrant collection %s predates hybrid search: dense search only there. "
                    "Run `%s` (bot and worker stopped) to index it for lexical recall too",
                    name,
                    spaces_module.REEMBED_COMMAND,
                    extra={"action": "collection_dense_only"},
                )
        return True

    async def create_memory(self, name: str, *, space: str, more: dict[str, Any]) -> None:
        """Create memory collection ``name`` in the current schema (configured embedder, hybrid
        vectors), recording ``more`` in its metadata too (``memory.admin reembed``)."""
        await self._create(name, space, self.embedder.dim, more=more)

    async def _create(
        self, name: str, space: str | None, size: int, *, more: dict[str, Any] | None = None
    ) -> None:
        extra: dict[str, Any] = {"layout": self.layout, **(more or {})}
        if space is not None and not self.shared:
            extra["space"] = space
        dense = qm.VectorParams(size=size, distance=qm.Distance.COSINE)
        vectors: Any = dense
        sparse = None
        # the sparse scheme: a memory collection's, and on the manifest the store's
        extra["lexical"] = self.sparse.version
        if space is not None:  # a memory collection: named dense + sparse lexical vectors
            vectors = {lexical.DENSE: dense}
            sparse = {lexical.SPARSE: qm.SparseVectorParams(modifier=qm.Modifier.IDF)}
        metadata = {META_KEY: spaces_module.embedder_metadata(self.embedder, **extra)}
        try:
            await self.client.create_collection(
                name,
                vectors_config=vectors,
                sparse_vectors_config=sparse,
                metadata=metadata,
            )
        except (ValueError, qm.UnexpectedResponse) as exc:
            if not await self.client.collection_exists(name):  # not a lost creation race
                raise
            logger.debug("collection %s created concurrently (%s)", name, exc)
            return
        if space is not None:
            await self._index(name)
        logger.info("created Qdrant collection %s", name, extra={"action": "collection_created"})

    async def _index(self, name: str) -> None:
        """Payload indexes (a server's; Qdrant Edge builds them once a shard is big enough,
        ``edge_models.INDEX_AT``; local mode ignores them and warns once)."""
        fields: list[tuple[str, qm.KeywordIndexParams | qm.DatetimeIndexParams]] = [
            ("turn_id", qm.KeywordIndexParams(type=qm.KeywordIndexType.KEYWORD)),
            ("kind", qm.KeywordIndexParams(type=qm.KeywordIndexType.KEYWORD)),
            # every search's "not superseded" (an is-empty condition) reads the index, not each
            # candidate's payload (it saves 0.4-0.9 ms of a query at 100,000 points)
            ("superseded_by", qm.KeywordIndexParams(type=qm.KeywordIndexType.KEYWORD)),
            # the time window of a search (``search(window=...)``): a datetime range filter
            (
                spaces_module.SAID_AT_KEY,
                qm.DatetimeIndexParams(type=qm.DatetimeIndexType.DATETIME),
            ),
        ]
        if self.shared:
            fields.append(
                (
                    spaces_module.TENANT_KEY,
                    qm.KeywordIndexParams(type=qm.KeywordIndexType.KEYWORD, is_tenant=True),
                )
            )
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Payload indexes have no effect")
            for field, schema in fields:
                await self.client.create_payload_index(name, field, field_schema=schema)

    async def managed(self) -> list[str]:
        """Names of the existing memory collections of this prefix and layout."""
        with wrap_errors("list collections"):
            listed = await self.client.get_collections()
            names = sorted(c.name for c in listed.collections)
            start = f"{self.prefix}_shared_" if self.shared else f"{self.prefix}_"
            result = []
            for name in names:
                if (
                    not name.startswith(start)
                    or name == spaces_module.manifest_collection(self.prefix)
                    or spaces_module.is_staging(name)
                ):
                    continue
                if not self.shared and name.startswith(f"{self.prefix}_shared_"):
                    continue
                await self.ensure(name, space=None, create=False)
                if self.known.get(name, {}).get("layout") == self.layout:
                    result.append(name)
        return result
