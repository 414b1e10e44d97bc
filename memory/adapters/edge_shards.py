"""The files of ``qdrant_edge``'s shards: locks, loading and closing, side files, vacuum swaps.

Blocking calls, run by ``EdgeEngine`` in worker threads (``asyncio.to_thread``), except the root
lock and the swap recovery, which run once when the engine opens.
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import json
import os
import shutil
from typing import IO, TYPE_CHECKING, Any

import qdrant_edge as edge

from memory import errors
from memory.adapters import edge_models

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

SIDE_FILE = "collection.json"
VACUUM, OLD = ".vacuum", ".old"
_PAGE = 512
#: Edge's own record of a shard's configuration, which it reads at ``load``
EDGE_CONFIG = "edge_config.json"
#: The write-ahead log's segments: 4 MB instead of Edge's 32 MB. The WAL keeps its open segment,
#: one made ahead and one closed segment after a flush, and ``load`` reads a closed one whole:
#: 32 MB of resident memory for any shard written past its first segment (measured:
#: 31.9 of the 10,000 x 100 viewer shard's RSS). Edge 0.9 takes these options only from its
#: ``edge_config.json`` (``wal_options``, the ``wal`` crate's ``WalOptions``; not in its Python
#: API), so they are written there before ``load`` creates a shard or opens one (segments made
#: from then on have this size; an entry bigger than a segment gets a segment its size).
#: ``tests/test_edge_store.py`` checks the segments Edge makes.
WAL_OPTIONS = {"segment_capacity": 4 << 20, "segment_queue_len": 0, "retain_closed": 1}


def in_use(root: Path) -> errors.StoreUnavailable:
    return errors.StoreUnavailable(
        f"the embedded Qdrant in {root} is in use by another process (a running bot or worker?): "
        "stop it first, or set QDRANT_URL to share a Qdrant server"
    )


@contextlib.contextmanager
def translated(root: Path) -> Iterator[None]:
    """Edge's errors: a WAL lock held elsewhere is the one-process rule; others stay errors."""
    try:
        yield
    except Exception as exc:
        if "WouldBlock" in str(exc):
            raise in_use(root) from exc
        if type(exc) is Exception:  # Edge's own error (service / storage)
            raise errors.StoreUnavailable(f"embedded Qdrant (Edge): {exc}") from exc
        raise


def lock_root(root: Path) -> IO[str]:
    """One process at a time holds the embedded Qdrant."""
    root.mkdir(parents=True, exist_ok=True)
    handle = (root / ".lock").open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        handle.close()
        raise in_use(root) from exc
    return handle


def apply(
    shard: edge.EdgeShard,
    operation: edge.UpdateOperation,
    flush: bool,
    unindexed: dict[str, Any] | None = None,
) -> bool:
    """Apply ``operation``; ``unindexed``: the side record of a shard without its payload indexes,
    which are built once it has grown to ``edge_models.INDEX_AT`` points. Returns whether the
    shard has its indexes."""
    shard.update(operation)
    indexed = unindexed is None or fit_indexes(shard, unindexed)
    if flush:  # segments on disk: the WAL to replay after a crash stays short
        shard.flush()
    return indexed


def fit_indexes(shard: edge.EdgeShard, side: dict[str, Any]) -> bool:
    """The side record's payload indexes in Edge from ``edge_models.INDEX_AT`` points on, and
    below it only ``edge_models.always_indexed`` (a shard of an earlier release may have more);
    returns whether the shard has them all."""
    info = shard.info()
    present = set(info.payload_schema)
    recorded = list(side["indexes"])
    big = info.points_count >= edge_models.INDEX_AT
    wanted = recorded if big else edge_models.always_indexed(side)
    for field in sorted(present - set(wanted)):
        shard.update(edge.UpdateOperation.delete_field_index(field))
    for field in wanted:
        if field not in present:
            shard.update(edge_models.index_operation(field, side))
    return len(wanted) == len(recorded)


def _wal_options(folder: Path) -> None:
    """``WAL_OPTIONS`` in the shard's ``edge_config.json`` (written first if there is none)."""
    path = folder / EDGE_CONFIG
    recorded = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    if recorded.get("wal_options") != WAL_OPTIONS:
        recorded["wal_options"] = WAL_OPTIONS
        _write_json(folder, EDGE_CONFIG, recorded)


def facet(
    shard: edge.EdgeShard, request: edge.FacetRequest, key: str, limit: int
) -> list[tuple[Any, int]]:
    """The values of ``key`` and their counts, most first: Edge's facet where the field has an
    index, else counted from the payloads (a field not indexed below ``edge_models.INDEX_AT``
    points)."""
    if key in shard.info().payload_schema:
        return [(hit.value, hit.count) for hit in shard.facet(request).hits]
    counts: collections.Counter[Any] = collections.Counter()
    offset: Any = None
    while True:
        scroll = edge.ScrollRequest(
            offset=offset,
            limit=_PAGE,
            filter=request.filter,
            with_payload=edge.PayloadSelector.Include([key]),
        )
        found, offset = shard.scroll(scroll)
        counts.update(r.payload[key] for r in found if r.payload and key in r.payload)
        if offset is None:
            return counts.most_common(limit)


def create(folder: Path, side: dict[str, Any], name: str | None = None) -> edge.EdgeShard:
    """A new shard in ``folder`` (which must not hold one): Edge's ``load`` of a folder with only
    its configuration creates the shard, with the ``WAL_OPTIONS`` that ``create`` cannot take."""
    side["placement"] = edge_models.PLACEMENT
    folder.mkdir(parents=True)
    _wal_options(folder)
    with translated(folder.parent):
        return edge.EdgeShard.load(str(folder), edge_models.config(side, name or folder.name))


def load(folder: Path, root: Path, side: dict[str, Any]) -> edge.EdgeShard:
    """Open a shard with this release's placement (``edge_models.config``) and WAL segments
    (``WAL_OPTIONS``): Edge records them, and the segments it makes from now on follow them
    (``settle`` moves the older ones; a shard's older WAL segments go as the log rotates)."""
    _wal_options(folder)
    with translated(root):
        shard = edge.EdgeShard.load(str(folder), edge_models.config(side, folder.name))
        try:
            fit_indexes(shard, side)
        except BaseException:
            shard.close()
            raise
        return shard


def settle(shard: edge.EdgeShard, folder: Path, side: dict[str, Any]) -> bool:
    """Before a written shard closes: a shard of the previous release gets its payload indexes
    re-created on disk; then Edge's optimizers turn the segments written since into immutable
    ones (on disk, tenants together, indexes built), so the next ``load`` maps them instead of
    rebuilding their indexes in RAM. Run at close because ``optimize`` holds the GIL: a running
    bot would stop for it. Returns whether segments changed."""
    with translated(folder.parent):
        if side.get("placement") != edge_models.PLACEMENT:
            fit_indexes(shard, side)
            for field in shard.info().payload_schema:  # the ones it keeps, made again on disk
                shard.update(edge_models.index_operation(field, side))
        changed = shard.optimize()
    if side.get("placement") != edge_models.PLACEMENT:
        side["placement"] = edge_models.PLACEMENT
        write_side(folder, side)
    return changed


def close(shard: edge.EdgeShard, *, flush: bool = True) -> None:
    """Close ``shard``, its segments flushed first (``flush``): a shard nothing was written to
    since it loaded has them on disk already (a WAL it replayed at load replays again)."""
    try:
        if flush:
            shard.flush()
    finally:
        shard.close()


def write_side(folder: Path, side: dict[str, Any]) -> None:
    _write_json(folder, SIDE_FILE, side)


def _write_json(folder: Path, name: str, value: dict[str, Any]) -> None:
    """``folder/name`` replaced whole (a crash leaves the old file or the new one)."""
    temporary = folder / f".{name}.tmp"
    temporary.write_text(json.dumps(value), encoding="utf-8")
    os.replace(temporary, folder / name)


def rebuild(shard: edge.EdgeShard, folder: Path, side: dict[str, Any]) -> None:
    """Copy the live points of ``shard`` into a new shard beside it (closed when complete)."""
    target = folder.with_name(folder.name + VACUUM)
    shutil.rmtree(target, ignore_errors=True)
    fresh = create(target, side, folder.name)
    try:
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
        fit_indexes(fresh, side)
        write_side(target, side)
    finally:
        close(fresh)


def swap(folder: Path) -> None:
    """Put ``<folder>.vacuum`` in the place of ``folder`` (the old one removed)."""
    old = folder.with_name(folder.name + OLD)
    folder.rename(old)
    folder.with_name(folder.name + VACUUM).rename(folder)
    shutil.rmtree(old)


def finish_swaps(root: Path) -> None:
    """Finish a vacuum swap a crash interrupted; drop a rebuild cut short (the original is intact)."""
    for entry in sorted(root.iterdir()):
        if entry.name.endswith(OLD):
            current = entry.with_name(entry.name.removesuffix(OLD))
            rebuilt = current.with_name(current.name + VACUUM)
            if not current.exists():
                if (rebuilt / SIDE_FILE).is_file():
                    rebuilt.rename(current)
                else:
                    entry.rename(current)
                    continue
            shutil.rmtree(entry)
    for entry in sorted(root.iterdir()):
        if entry.name.endswith(VACUUM):
            shutil.rmtree(entry)
