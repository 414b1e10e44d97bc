"""Applying supersession to a memory space: the marks ``supersede.plan`` decides, set through the
``MemorySpaces`` port and audited.

Consolidation calls ``apply`` after it writes a viewer's memories (``new``: their ids); forgetting or
correcting calls it with no new memory after a delete, so the marks that pointed at what went are
planned again (the older memory linked to the next newer one that still supersedes it, or current
again). The profile follows: a superseded memory's profile facts are dropped, a memory current
again gives its facts back. Each change writes a ``memory_audit`` row (action ``supersede`` or ``unsupersede``, target the
older memory, details: by, at, reason, space); a retried job plans no change and writes no row.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

from memory import sql
from memory.adapters import postgres
from memory.consolidate import profile, supersede

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence
    from datetime import datetime

    from memory import ports
    from memory.spaces import records

logger = logging.getLogger(__name__)

#: the actor of the marks consolidation sets
ACTOR = "consolidation"
#: at most this many memories of a space are compared
LIST_LIMIT = 100_000


async def apply(
    spaces: ports.MemorySpaces,
    db: postgres.Database,
    space: str,
    new: Collection[str] = (),
    *,
    actor: str = ACTOR,
    profiles: profile.ProfileStore | None = None,
) -> list[supersede.Mark]:
    """Plan and set the marks of ``space`` after ``new`` were written; returns the changes. Only
    a viewer's personal space is planned (episodes and lore are never superseded).

    ``profiles``: the profile facts derived from a memory that becomes superseded are dropped (the
    statement no longer holds, so neither does its slot or note), and a memory current again gives
    its facts back (a slot a newer statement holds keeps the newer value)."""
    if not space.startswith("viewer:"):
        return []
    held = await spaces.list(space, limit=LIST_LIMIT)
    marks = supersede.plan(held, new=new)
    cleared = [m.id for m in marks if m.by is None]
    groups: dict[tuple[str, datetime], list[str]] = {}
    for mark in marks:
        if mark.by is not None and mark.at is not None:
            groups.setdefault((mark.by, mark.at), []).append(mark.id)
    for (by, at), ids in groups.items():
        await spaces.supersede(space, ids, by=by, at=at)
    if cleared:
        await spaces.unsupersede(space, cleared)
    if profiles is not None:
        await _profile(profiles, held, new, marks)
    if not marks:
        return []
    await _audit(db, space, marks, actor)
    logger.info(
        "%s: %d memories superseded, %d current again",
        space,
        len(marks) - len(cleared),
        len(cleared),
        extra={"action": "memory_supersede"},
    )
    return marks


async def _profile(
    profiles: profile.ProfileStore,
    held: Sequence[records.MemoryRecord],
    new: Collection[str],
    marks: Sequence[supersede.Mark],
) -> None:
    """Drop the profile facts of the memories superseded now, and of the new ones that are
    superseded (a retried or late job wrote their facts again); give back the facts of those
    current again."""
    changed = {m.id: m.by for m in marks}
    superseded = [
        r.id
        for r in held
        if (r.id in new or r.id in changed) and changed.get(r.id, r.superseded_by) is not None
    ]
    if superseded:
        await profiles.delete_memories(superseded)
    if current := [r for r in held if r.id in changed and changed[r.id] is None]:
        await profiles.apply_memories(current)


async def _audit(
    db: postgres.Database, space: str, marks: Sequence[supersede.Mark], actor: str
) -> None:
    rows = [
        (
            actor,
            "supersede" if mark.by else "unsupersede",
            mark.id,
            json.dumps(
                {
                    "space": space,
                    "by": mark.by,
                    "at": mark.at.isoformat() if mark.at else None,
                    "reason": mark.reason,
                }
            ),
        )
        for mark in marks
    ]
    with postgres.wrap_errors("write audit"):
        await db.pool.executemany(sql.queries["memory_audit_insert"], rows)
