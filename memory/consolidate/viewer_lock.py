"""Per-viewer serialisation of memory writes: a Postgres advisory lock per user id.

Consolidation (writing a turn's memories) and forget / correct (deleting them) take the locks of the
viewers they touch, so a forget can never run between consolidation's last tombstone check and its
writes (and be undone by them). The locks are session-level advisory locks on one pooled connection,
held across the Qdrant writes and released on exit (asyncpg's pool reset also runs
``pg_advisory_unlock_all()``, so a cancelled holder never leaks one).

Several viewers (a turn with several authors) are locked in ascending key order, so two holders of
overlapping sets cannot deadlock. Keys are 64-bit hashes of ``livememory:viewer:<user id>``; a rare
collision only serialises two viewers more than needed.

Code inside the lock should run its SQL on the yielded connection where it can; a second pool
connection is only borrowed briefly. Never nest ``hold`` (the inner one would use another
connection and wait for the outer one forever).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from typing import TYPE_CHECKING

from memory import outage, sql
from memory.adapters import postgres

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable


logger = logging.getLogger(__name__)


def lock_key(user_id: str) -> int:
    """The advisory lock key of a viewer: a signed 64-bit hash of their user id."""
    digest = hashlib.blake2b(f"livememory:viewer:{user_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def lock_keys(user_ids: Iterable[str]) -> list[int]:
    """The distinct keys of ``user_ids`` in the order they are acquired (ascending)."""
    return sorted({lock_key(user_id) for user_id in user_ids if user_id})


@contextlib.asynccontextmanager
async def hold(
    db: postgres.Database, user_ids: Iterable[str]
) -> AsyncIterator[postgres.Connection]:
    """Hold the locks of ``user_ids`` (waiting for them) and yield the holding connection."""
    keys = lock_keys(user_ids)
    with postgres.wrap_errors("acquire viewer lock"):
        conn = await db.pool.acquire()
    taken: list[int] = []
    try:
        with postgres.wrap_errors("acquire viewer lock"):
            for key in keys:
                await conn.execute(sql.queries["memory_viewer_lock"], key)
                taken.append(key)
        yield conn
    finally:
        try:
            with postgres.wrap_errors("release viewer lock"):
                for key in reversed(taken):
                    await conn.execute(sql.queries["memory_viewer_unlock"], key)
        except (
            Exception
        ) as exc:  # the pool's reset (pg_advisory_unlock_all) or the disconnect frees them
            outage.log_failure(logger, "releasing viewer locks failed", exc)
        await db.pool.release(conn)
