"""The ingestion barrier: when a turn's tools changed structured state, consolidation keeps the
involved viewers' messages of that turn (or the whole batch) out of personal memory, so no semantic
copy competes with the canonical record.

The tool runner records the barrier (``turn_barriers``) after the tools ran and before the turn is
journalled, so it exists before the turn's consolidation job can run.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from memory import sql
from memory.adapters import postgres

if TYPE_CHECKING:
    from collections.abc import Collection

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class BarrierDecision:
    """What consolidation must keep out of personal memory for one turn."""

    #: viewers whose messages of the turn are excluded from personal ingestion
    user_ids: frozenset[str] = frozenset()
    #: exclude every author of the batch (scope ``batch``)
    whole_batch: bool = False
    #: the structured domains the turn's tools changed (sorted)
    domains: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.domains

    def excludes(self, user_id: str) -> bool:
        """Whether the messages of ``user_id`` in this turn stay out of personal memory."""
        return self.whole_batch or user_id in self.user_ids

    def to_json(self) -> dict[str, Any]:
        """The ``barrier`` field of the turn report."""
        return {
            "domains": list(self.domains),
            "user_ids": sorted(self.user_ids),
            "whole_batch": self.whole_batch,
        }


NO_BARRIER = BarrierDecision()


def decide(
    domains: Collection[str],
    user_ids: Collection[str],
    batch_user_ids: Collection[str],
    scope: Literal["viewers", "batch"],
) -> BarrierDecision:
    """The barrier for changed ``domains``: the involved viewers, or the whole batch.

    With scope ``batch`` the decision is ``whole_batch`` and its ``user_ids`` also list every author
    of the batch, so a reader looking only at ``user_ids`` still does the right thing.
    """
    if not domains:
        return NO_BARRIER
    whole = scope == "batch"
    users = set(user_ids) | (set(batch_user_ids) if whole else set())
    return BarrierDecision(
        user_ids=frozenset(users), whole_batch=whole, domains=tuple(sorted(set(domains)))
    )


def _from_row(row: Any) -> BarrierDecision:
    return BarrierDecision(
        user_ids=frozenset(row["user_ids"]),
        whole_batch=bool(row["whole_batch"]),
        domains=tuple(sorted(row["domains"])),
    )


async def record(db: postgres.Database, turn_id: str, decision: BarrierDecision) -> BarrierDecision:
    """Store a turn's barrier, merged with one recorded earlier for the same turn; returns the merge."""
    if decision.empty:
        return await barrier_for_turn(db, turn_id)
    with postgres.wrap_errors("record barrier"):
        row = await db.pool.fetchrow(
            sql.queries["state_upsert_barrier"],
            turn_id,
            list(decision.domains),
            sorted(decision.user_ids),
            decision.whole_batch,
        )
    merged = _from_row(row)
    logger.info(
        "turn %s barrier: domains %s, %d viewer(s), whole batch %s",
        turn_id,
        ",".join(merged.domains),
        len(merged.user_ids),
        merged.whole_batch,
        extra={"action": "barrier"},
    )
    return merged


async def barrier_for_turn(db: postgres.Database, turn_id: str) -> BarrierDecision:
    """The barrier of a turn (the empty decision when its tools changed no state)."""
    with postgres.wrap_errors("read barrier"):
        row = await db.pool.fetchrow(sql.queries["state_barrier_for_turn"], turn_id)
    return _from_row(row) if row else NO_BARRIER
