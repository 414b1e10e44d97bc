"""The delivery of every reply part to chat, per turn (``turn_deliveries``, append-only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memory import sql
from memory.adapters import postgres

if TYPE_CHECKING:
    from collections.abc import Sequence

    from bot.twitch import sending


class DeliveryLog:
    def __init__(self, db: postgres.Database) -> None:
        self.db = db

    async def record(self, turn_id: str, deliveries: Sequence[sending.Delivery]) -> None:
        with postgres.wrap_errors("record reply deliveries"):
            async with self.db.pool.acquire() as conn, conn.transaction():
                for delivery in deliveries:
                    await conn.execute(
                        sql.queries["twitch_delivery_record"],
                        turn_id,
                        delivery.part,
                        delivery.channel,
                        delivery.message_id,
                        delivery.status.value,
                        delivery.attempts,
                        delivery.error,
                    )

    async def of_turn(self, turn_id: str) -> list[dict[str, Any]]:
        with postgres.wrap_errors("read reply deliveries"):
            rows = await self.db.pool.fetch(sql.queries["twitch_deliveries_of_turn"], turn_id)
        return [dict(row) for row in rows]
