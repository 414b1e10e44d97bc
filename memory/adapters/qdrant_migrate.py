"""Moving the embedded store of earlier releases (qdrant-client's local mode) into Qdrant Edge.

Earlier releases kept embedded memories in ``<data_dir>/qdrant``: a local-mode folder per collection
(``spaces/<collection>/``) or, before that, one local-mode folder for all. On the first
start of this release (``open_spaces``), or with ``python -m memory.admin migrate-qdrant``, every
memory is copied into the Edge shards of ``<data_dir>/qdrant-edge`` in the configured layout:

1. ``qdrant`` is renamed ``qdrant.migrating`` (under its own lock: no process of the old release is
   using it), so an interrupted migration is recognised and continued, never started over on a
   half-copied store, and an old release cannot write to it meanwhile.
2. each old collection is read page by page (vectors included: nothing is embedded again; a
   dense-only collection gains its lexical vector from the stored text) and written with the same
   ids and payloads into the collection of each point's space (the tenant key added or dropped for
   the layout). The collections keep the embedder record of the old ones, so another configured
   embedder still fails at start-up with the usual ``reembed`` hint. Ids already copied are skipped.
3. verified: per space, the count and the set of ids in the new store equal the old ones. Only then
   is ``qdrant.migrating`` removed (a forgotten text must not outlive its erasure in a backup);
   ``keep_old`` renames it ``qdrant.local-mode`` instead. A failed check keeps it and says which
   space differs.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import shutil
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memory import errors
from memory.adapters import edge_shards, qdrant_collections, qdrant_edge, qdrant_hybrid
from memory.adapters import qdrant_models as qm
from memory.spaces import lexical
from memory.spaces import store as spaces_module

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path
    from typing import TextIO

    from config.settings import Settings
    from memory import ports
    from memory.adapters.qdrant_collections import Client

logger = logging.getLogger(__name__)

OLD, MIGRATING, KEPT = "qdrant", "qdrant.migrating", "qdrant.local-mode"
_META = "meta.json"
_PAGE = 256


@dataclass(slots=True)
class _Recorded:
    """Stands for the embedder an old collection records (nothing is embedded here)."""

    name: str
    dim: int

    async def embed(
        self, texts: Sequence[str], *, kind: ports.EmbedKind = "passage"
    ) -> list[list[float]]:
        raise errors.MemoryServiceError("migration copies vectors, it never embeds")


@dataclass
class Report:
    collections: int = 0
    memories: int = 0
    copied: int = 0
    #: space → ids held by the old store
    ids: dict[str, set[str]] = field(default_factory=dict)


def pending(settings: Settings) -> Path | None:
    """The old store left to migrate (an interrupted migration first); None when there is none."""
    for name in (MIGRATING, OLD):
        folder = settings.data_dir / name
        if (folder / _META).is_file() or (folder / "spaces").is_dir():
            return folder
    return None


def _sources(old: Path) -> list[Path]:
    """The local-mode folders under ``old``: one per collection, and a single-folder root."""
    folders = sorted(p.parent for p in (old / "spaces").glob(f"*/{_META}"))
    return [*folders, old] if (old / _META).is_file() else folders


async def migrate(
    settings: Settings, *, keep_old: bool = False, progress: TextIO | None = None
) -> Report | None:
    """Migrate the old embedded store of ``settings`` into Qdrant Edge (None: nothing to do)."""
    old = pending(settings)
    if old is None:
        return None
    with contextlib.ExitStack() as stack:
        if not (old / _META).is_file():  # a single folder: local mode takes this lock itself
            lock = stack.enter_context((old / ".lock").open("a+"))  # the old release's lock
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                raise edge_shards.in_use(old) from exc
        if old.name == OLD:
            old = old.rename(old.with_name(MIGRATING))
        logger.warning("migrating the embedded Qdrant store of %s into Qdrant Edge", old)
        target = qdrant_edge.EdgeClient(qdrant_collections.embedded_root(settings))
        try:
            report = await _copy(settings, old, target, progress)
            await _verify(settings, target, report)
        finally:
            await target.close()
    if keep_old:
        old.rename(old.with_name(KEPT))
    else:
        shutil.rmtree(old)
    logger.warning(
        "migrated %d memories of %d collections into Qdrant Edge (%s)",
        report.memories,
        report.collections,
        qdrant_collections.embedded_root(settings),
    )
    return report


async def _copy(settings: Settings, old: Path, target: Client, progress: TextIO | None) -> Report:
    report = Report()
    layout = qdrant_collections.layout(settings, target)
    prefix = settings.qdrant.collection_prefix
    sources = _sources(old)
    # imported here: it is ~8 ms of every start-up, and few have a store to move
    from tqdm import tqdm

    bar = tqdm(
        sources,
        unit="folder",
        desc="migrating",
        file=progress,
        disable=None if progress is not None else True,
    )
    from memory.adapters import qdrant_server  # qdrant-client: only when there is a store to move

    for folder in bar:
        try:
            source = qdrant_server.make(path=str(folder))  # local mode
        except RuntimeError as exc:  # "already accessed by another instance"
            raise edge_shards.in_use(folder) from exc
        try:
            for description in (await source.get_collections()).collections:
                name = description.name
                if not name.startswith(f"{prefix}_") or spaces_module.is_staging(name):
                    if spaces_module.is_staging(name):
                        raise errors.StoreUnavailable(
                            f"{folder} holds an unfinished re-embedding ({name}): finish it with "
                            "the previous release first (`python -m memory.admin reembed --all`)"
                        )
                    continue
                info = await source.get_collection(name)
                meta = dict((info.config.metadata or {}).get(qdrant_collections.META_KEY) or {})
                recorded = _Recorded(str(meta.get("embedder")), int(meta.get("dim") or 0))
                collections = qdrant_collections.Collections(
                    target, recorded, layout=layout, prefix=prefix
                )
                if name == spaces_module.manifest_collection(prefix):
                    await collections.ensure(name, space=None, create=True, vector_size=1)
                    continue
                report.collections += 1
                await _copy_collection(source, name, collections, report)
        finally:
            await source.close()
    return report


async def _copy_collection(
    source: Client,
    name: str,
    collections: qdrant_collections.Collections,
    report: Report,
) -> None:
    target = collections.client
    offset: Any = None
    while True:
        points, offset = await source.scroll(
            name, limit=_PAGE, offset=offset, with_payload=True, with_vectors=True
        )
        groups: dict[str, list[qm.PointStruct]] = {}
        for point in points:
            payload = dict(point.payload or {})
            space = str(payload.get("space", ""))
            report.ids.setdefault(space, set()).add(str(point.id))
            if collections.shared:
                payload[spaces_module.TENANT_KEY] = space
            else:
                payload.pop(spaces_module.TENANT_KEY, None)
            record = spaces_module.from_payload(payload)
            # an older release stored no ``said_at``: the time-window filter reads it
            payload.setdefault(spaces_module.SAID_AT_KEY, record.said_at.isoformat())
            vector: Any = point.vector
            if not isinstance(vector, dict):  # dense-only: the lexical vector from the text
                vector = qdrant_hybrid.point_vector(lexical.ENCODER, record, list(vector or []))
            groups.setdefault(collections.name(space), []).append(
                qm.PointStruct(
                    id=point.id, vector=vector, payload=spaces_module.stored_payload(payload)
                )
            )
        report.memories += len(points)
        for collection, structs in groups.items():
            space = str((structs[0].payload or {})["space"])
            if not await collections.ensure(collection, space=space, create=False):
                await collections.create_memory(collection, space=space, more={})
                await collections.ensure(collection, space=space, create=False)
            have = await target.retrieve(
                collection, ids=[s.id for s in structs], with_payload=False
            )
            done = {str(p.id) for p in have}
            todo = [s for s in structs if str(s.id) not in done]
            if todo:
                await target.upsert(collection, points=todo, wait=True)
                report.copied += len(todo)
        if offset is None:
            return


async def _verify(settings: Settings, target: Client, report: Report) -> None:
    """Every space of the old store has the same count and ids in the new one."""
    layout = qdrant_collections.layout(settings, target)
    prefix = settings.qdrant.collection_prefix
    for space, wanted in sorted(report.ids.items()):
        name = (
            spaces_module.shared_collection(prefix, space)
            if layout == "shared"
            else spaces_module.space_collection(prefix, space)
        )
        where = qm.Filter(must=[qm.FieldCondition(key="space", match=qm.MatchValue(value=space))])
        found: set[str] = set()
        offset: Any = None
        while True:
            points, offset = await target.scroll(
                name, scroll_filter=where, limit=1024, offset=offset, with_payload=False
            )
            found.update(str(p.id) for p in points)
            if offset is None:
                break
        if found != wanted:
            raise errors.StoreUnavailable(
                f"migration check failed for {space}: {len(wanted)} memories in the old store, "
                f"{len(found)} in Qdrant Edge ({len(wanted - found)} missing); the old store is "
                f"kept in {settings.data_dir / MIGRATING}: start again to retry"
            )
