"""The bot's OAuth tokens in Postgres (``twitch_tokens``), so TwitchIO never writes
``.tio.tokens.json``: ``LiveMemoryBot`` overrides ``add_token``/``load_tokens``/``save_tokens`` and
``event_token_refreshed`` to go through this store.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from memory import sql
from memory.adapters import postgres

if TYPE_CHECKING:
    from datetime import datetime

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredToken:
    #: the Twitch user the token acts for
    user_id: str
    token: SecretStr
    refresh: SecretStr
    updated_at: datetime | None = None

    @classmethod
    def from_row(cls, row: Any) -> StoredToken:
        return cls(
            user_id=row["user_id"],
            token=SecretStr(row["token"]),
            refresh=SecretStr(row["refresh"]),
            updated_at=row["updated_at"],
        )


class TokenStore:
    """Token pairs by user id, in Postgres."""

    def __init__(self, db: postgres.Database) -> None:
        self.db = db

    async def load(self) -> list[StoredToken]:
        with postgres.wrap_errors("load Twitch tokens"):
            rows = await self.db.pool.fetch(sql.queries["twitch_tokens_all"])
        return [StoredToken.from_row(row) for row in rows]

    async def save(self, user_id: str, token: str, refresh: str) -> None:
        with postgres.wrap_errors("save a Twitch token"):
            await self.db.pool.execute(sql.queries["twitch_token_save"], user_id, token, refresh)
        logger.debug("Twitch token of user %s stored", user_id)

    async def delete(self, user_id: str) -> None:
        with postgres.wrap_errors("delete a Twitch token"):
            await self.db.pool.execute(sql.queries["twitch_token_delete"], user_id)
