"""What was forgotten, as a consolidation reads it (the ``memory_tombstones`` table): a turn, a
memory, a viewer up to a time (or for good). A consolidation reads them twice, unlocked and again
under the authors' viewer locks (``memory.consolidate.consolidation``), so a forget that ran
meanwhile wins."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory import sql
from memory.adapters import postgres
from memory.consolidate import documents
from memory.spaces import records

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from datetime import datetime


def personal_ids(turn_ids: Iterable[str], user_id: str, message_id: str) -> list[str]:
    """The ids a message's personal memory has, one for each turn that holds the message."""
    kind = records.MemoryKind.PERSONAL
    return [documents.point_id(turn_id, user_id, kind, message_id) for turn_id in turn_ids]


@dataclass(frozen=True, slots=True)
class Tombstones:
    """The tombstones found, by (kind, target); a viewer's with the time they were forgotten up
    to (None: everything they said)."""

    found: Mapping[tuple[str, str], datetime | None]

    def __contains__(self, key: object) -> bool:
        return key in self.found

    def memories(self) -> set[str]:
        """The forgotten memory ids among those asked for."""
        return {target for kind, target in self.found if kind == "memory"}

    def said_before_forget(self, user_id: str, ts: datetime) -> bool:
        """Whether ``user_id`` was forgotten with what they said at ``ts``."""
        key = ("viewer", user_id)
        if key not in self.found:
            return False
        until = self.found[key]
        return until is None or ts <= until

    def erased(self, turn_ids: Iterable[str], user_id: str, message_id: str, ts: datetime) -> bool:
        """Whether a message's words were forgotten: one of its turns (``turn_ids``), its personal
        memory in one of them (``personal_ids``) or its author with what they said then."""
        turns = list(turn_ids)
        memories = personal_ids(turns, user_id, message_id)
        return (
            any(("turn", t) in self.found for t in turns)
            or any(("memory", m) in self.found for m in memories)
            or self.said_before_forget(user_id, ts)
        )


async def read(
    conn: postgres.Pool | postgres.Connection,
    turn_ids: Iterable[str],
    memory_ids: Iterable[str],
    user_ids: Iterable[str],
) -> Tombstones:
    """The tombstones of these turns, memories and viewers."""
    with postgres.wrap_errors("read tombstones"):
        rows = await conn.fetch(
            sql.queries["memory_tombstones_for_turn"],
            sorted(set(turn_ids)),
            sorted(set(memory_ids)),
            sorted(set(user_ids)),
        )
    return Tombstones({(row["kind"], row["target"]): row["until_ts"] for row in rows})
