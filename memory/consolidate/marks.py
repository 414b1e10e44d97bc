"""Applying supersession to a memory space: the marks ``supersede.plan`` decides, set through the
``MemorySpaces`` port and audited.

Consolidation calls ``apply`` after it writes a viewer's memories (``new``: their ids); forgetting or
correcting calls it with no new memory after a delete, so the marks that pointed at what went are
planned again (the older memory linked to the next newer one that still supersedes it, or current
again). Each change writes a ``memory_audit`` row (action ``supersede`` or ``unsupersede``, target the
older memory, details: by, at, reason, space); a retried job plans no change and writes no row.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

from memory import sql
from memory.adapters import postgres
from memory.consolidate import supersede

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence
    from datetime import datetime

    from memory import ports

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
) -> list[supersede.Mark]:
    """Plan and set the marks of ``space`` after ``new`` were written; returns the changes. Only
    a viewer's personal space is planned (episodes and lore are never superseded)."""
    if not space.startswith("viewer:"):
        return []
    marks = supersede.plan(await spaces.list(space, limit=LIST_LIMIT), new=new)
    if not marks:
        return []
    groups: dict[tuple[str, datetime], list[str]] = {}
    cleared: list[str] = []
    for mark in marks:
        if mark.by is None or mark.at is None:
            cleared.append(mark.id)
        else:
            groups.setdefault((mark.by, mark.at), []).append(mark.id)
    for (by, at), ids in groups.items():
        await spaces.supersede(space, ids, by=by, at=at)
    if cleared:
        await spaces.unsupersede(space, cleared)
    await _audit(db, space, marks, actor)
    logger.info(
        "%s: %d memories superseded, %d current again",
        space,
        len(marks) - len(cleared),
        len(cleared),
        extra={"action": "memory_supersede"},
    )
    return marks


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
