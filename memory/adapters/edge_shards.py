"""The files of ``qdrant_edge``'s shards: locks, loading and closing, side files, vacuum swaps.

Blocking calls, run by ``EdgeEngine`` in worker threads (``asyncio.to_thread``), except the root
lock and the swap recovery, which run once when the engine opens.
"""

from __future__ import annotations

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


def apply(shard: edge.EdgeShard, operation: edge.UpdateOperation, flush: bool) -> None:
    shard.update(operation)
    if flush:  # segments on disk: the WAL to replay after a crash stays short
        shard.flush()


def create(folder: Path, side: dict[str, Any]) -> edge.EdgeShard:
    side["placement"] = edge_models.PLACEMENT
    with translated(folder.parent):
        return edge.EdgeShard.create(str(folder), edge_models.config(side, folder.name))


def load(folder: Path, root: Path, side: dict[str, Any]) -> edge.EdgeShard:
    """Open a shard with this release's placement (``edge_models.config``): Edge records it, and
    the segments it makes from now on follow it (``settle`` moves the older ones)."""
    with translated(root):
        return edge.EdgeShard.load(str(folder), edge_models.config(side, folder.name))


def settle(shard: edge.EdgeShard, folder: Path, side: dict[str, Any]) -> bool:
    """Before a written shard closes: a shard of the previous release gets its payload indexes
    re-created on disk; then Edge's optimizers turn the segments written since into immutable
    ones (on disk, tenants together, indexes built), so the next ``load`` maps them instead of
    rebuilding their indexes in RAM. Run at close because ``optimize`` holds the GIL: a running
    bot would stop for it. Returns whether segments changed."""
    with translated(folder.parent):
        if side.get("placement") != edge_models.PLACEMENT:
            for field in side["indexes"]:
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
    temporary = folder / f".{SIDE_FILE}.tmp"
    temporary.write_text(json.dumps(side), encoding="utf-8")
    os.replace(temporary, folder / SIDE_FILE)


def rebuild(shard: edge.EdgeShard, folder: Path, side: dict[str, Any]) -> None:
    """Copy the live points of ``shard`` into a new shard beside it (closed when complete)."""
    target = folder.with_name(folder.name + VACUUM)
    shutil.rmtree(target, ignore_errors=True)
    side["placement"] = edge_models.PLACEMENT
    fresh = edge.EdgeShard.create(str(target), edge_models.config(side, folder.name))
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
