"""Structured channel state: viewer requests, relationships, notes and inside jokes (the canonical
record, changed by model tools and chat commands).

State is per channel: the stream's ``streams.channel``, or the stream id itself when no channel is
known (see ``channel_of``). Viewers are stable user ids. Expired notes are never returned.
The ``state`` retrieval source (``fetch_state``) reads the same tables. The record types live in
``memory.state.records`` and are importable from here.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any, Protocol

from memory import identity, models, sql
from memory.adapters import postgres
from memory.state import records as state_records

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping, Sequence
    from datetime import datetime

logger = logging.getLogger(__name__)

#: the space name and source kind of state recall items
STATE_SPACE = "state"
#: rows returned per list by default
DEFAULT_LIMIT = 20
#: query words that select channel-wide rows in ``fetch_state``
_WORD = re.compile(r"\w{4,}")


# the record types (``memory.state.records``), importable from here
Domain = state_records.Domain
RequestStatus = state_records.RequestStatus
Request = state_records.Request
Relationship = state_records.Relationship
Note = state_records.Note
InsideJoke = state_records.InsideJoke
StateRow = state_records.StateRow
subjects = state_records.subjects


class Executor(Protocol):
    """An asyncpg pool or connection (both run queries)."""

    async def fetch(self, query: str, *args: Any) -> list[Any]: ...

    async def fetchrow(self, query: str, *args: Any) -> Any: ...

    async def execute(self, query: str, *args: Any) -> str: ...


def pair(user_x: str, user_y: str) -> tuple[str, str]:
    """A pair of user ids in storage order."""
    return (user_x, user_y) if user_x < user_y else (user_y, user_x)


def joke_key(text: str) -> str:
    """Jokes are the same when their words are (case and punctuation ignored)."""
    return " ".join("".join(ch for ch in text.casefold() if ch.isalnum() or ch.isspace()).split())


class ChannelState:
    """The state repository. ``executor`` is a pool, or a connection inside a transaction."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor

    async def channel_of(self, stream: str) -> str:
        row = await self.executor.fetchrow(sql.queries["state_channel_of_stream"], stream)
        return str(row["channel"]) if row else stream

    async def user_id_of(self, login: str) -> tuple[str, str] | None:
        """``(user_id, login)`` of a viewer known by login, or None."""
        row = await self.executor.fetchrow(
            sql.queries["state_viewer_by_login"], identity.normalize_login(login)
        )
        return (row["user_id"], row["login"]) if row else None

    async def logins(self, user_ids: Iterable[str]) -> dict[str, str]:
        ids = sorted(set(user_ids))
        if not ids:
            return {}
        rows = await self.executor.fetch(sql.queries["state_logins"], ids)
        return {row["user_id"]: row["login"] for row in rows}

    # -- requests ---------------------------------------------------------------------------
    async def add_request(
        self, channel: str, user_id: str, text: str, *, at: datetime, turn_id: str | None
    ) -> Request:
        row = await self.executor.fetchrow(
            sql.queries["state_insert_request"], channel, user_id, text, at, turn_id
        )
        return Request.from_row(row)

    async def close_request(
        self,
        channel: str,
        request_id: int,
        status: RequestStatus,
        *,
        at: datetime,
        turn_id: str | None,
    ) -> Request | None:
        """Complete or cancel an open request; None when it is not open (or unknown)."""
        row = await self.executor.fetchrow(
            sql.queries["state_set_request_status"], channel, request_id, status.value, at, turn_id
        )
        return Request.from_row(row) if row else None

    async def request(self, channel: str, request_id: int) -> Request | None:
        row = await self.executor.fetchrow(sql.queries["state_request_by_id"], channel, request_id)
        return Request.from_row(row) if row else None

    async def requests(
        self,
        channel: str,
        *,
        user_id: str | None = None,
        status: RequestStatus | None = RequestStatus.OPEN,
        limit: int = DEFAULT_LIMIT,
    ) -> list[Request]:
        rows = await self.executor.fetch(
            sql.queries["state_list_requests"],
            channel,
            user_id,
            status.value if status else None,
            limit,
        )
        return [Request.from_row(row) for row in rows]

    # -- relationships ----------------------------------------------------------------------
    async def set_relationship(
        self,
        channel: str,
        user_x: str,
        user_y: str,
        kind: str,
        *,
        since: str | None,
        at: datetime,
        turn_id: str | None,
    ) -> Relationship:
        user_a, user_b = pair(user_x, user_y)
        row = await self.executor.fetchrow(
            sql.queries["state_upsert_relationship"],
            channel,
            user_a,
            user_b,
            kind,
            since,
            at,
            turn_id,
        )
        return Relationship.from_row(row)

    async def remove_relationship(
        self, channel: str, user_x: str, user_y: str, *, at: datetime, turn_id: str | None
    ) -> Relationship | None:
        user_a, user_b = pair(user_x, user_y)
        row = await self.executor.fetchrow(
            sql.queries["state_remove_relationship"], channel, user_a, user_b, at, turn_id
        )
        return Relationship.from_row(row) if row else None

    async def relationships(
        self, channel: str, *, user_id: str | None = None, limit: int = DEFAULT_LIMIT
    ) -> list[Relationship]:
        rows = await self.executor.fetch(
            sql.queries["state_list_relationships"], channel, user_id, limit
        )
        return [Relationship.from_row(row) for row in rows]

    # -- notes ------------------------------------------------------------------------------
    async def add_note(
        self,
        channel: str,
        text: str,
        *,
        user_id: str | None,
        expires_at: datetime | None,
        at: datetime,
        turn_id: str | None,
    ) -> Note:
        row = await self.executor.fetchrow(
            sql.queries["state_insert_note"], channel, user_id, text, expires_at, at, turn_id
        )
        return Note.from_row(row)

    async def notes(
        self,
        channel: str,
        *,
        now: datetime,
        user_id: str | None = None,
        limit: int = DEFAULT_LIMIT,
    ) -> list[Note]:
        """Notes not expired at ``now``."""
        rows = await self.executor.fetch(
            sql.queries["state_list_notes"], channel, user_id, now, limit
        )
        return [Note.from_row(row) for row in rows]

    # -- inside jokes -----------------------------------------------------------------------
    async def add_joke(
        self,
        channel: str,
        text: str,
        user_ids: Collection[str],
        *,
        at: datetime,
        turn_id: str | None,
    ) -> InsideJoke:
        row = await self.executor.fetchrow(
            sql.queries["state_upsert_joke"],
            channel,
            text,
            joke_key(text),
            sorted(set(user_ids)),
            at,
            turn_id,
        )
        return InsideJoke.from_row(row)

    async def jokes(
        self, channel: str, *, user_id: str | None = None, limit: int = DEFAULT_LIMIT
    ) -> list[InsideJoke]:
        rows = await self.executor.fetch(sql.queries["state_list_jokes"], channel, user_id, limit)
        return [InsideJoke.from_row(row) for row in rows]

    # -- everything -------------------------------------------------------------------------
    async def current(
        self,
        channel: str,
        *,
        now: datetime,
        user_id: str | None = None,
        limit: int = DEFAULT_LIMIT,
    ) -> list[StateRow]:
        """Open requests, relationships, unexpired notes and jokes (of one viewer, or all)."""
        rows: list[StateRow] = []
        rows += await self.requests(channel, user_id=user_id, limit=limit)
        rows += await self.relationships(channel, user_id=user_id, limit=limit)
        rows += await self.notes(channel, now=now, user_id=user_id, limit=limit)
        rows += await self.jokes(channel, user_id=user_id, limit=limit)
        return rows

    async def turn_message_ids(self, turn_ids: Iterable[str | None]) -> dict[str, tuple[str, ...]]:
        ids = sorted({t for t in turn_ids if t})
        if not ids:
            return {}
        rows = await self.executor.fetch(sql.queries["state_turn_message_ids"], ids)
        return {row["id"]: tuple(row["message_ids"]) for row in rows}


async def channel_of(db: postgres.Database, stream: str) -> str:
    """The channel a stream's state belongs to (the stream id when no channel is known)."""
    with postgres.wrap_errors("read stream channel"):
        return await ChannelState(db.pool).channel_of(stream)


def _memory_id(row: StateRow) -> str:
    domain = {
        Request: Domain.REQUESTS,
        Relationship: Domain.RELATIONSHIPS,
        Note: Domain.NOTES,
        InsideJoke: Domain.JOKES,
    }[type(row)]
    return f"state:{domain.value}:{row.id}"


def _matches(text: str, words: Collection[str]) -> bool:
    folded = text.casefold()
    return any(word in folded for word in words)


async def fetch_state(
    db: postgres.Database,
    stream: str,
    query: str,
    *,
    user_ids: Collection[str] = (),
    limit: int = 10,
    now: datetime | None = None,
) -> list[models.RecallItem]:
    """The ``state`` retrieval source: canonical rows about ``user_ids``, then channel-wide rows.

    Rows about one of ``user_ids`` score 1.0; other rows of the channel are returned (score 0.5) when
    no viewer is given or when their text shares a word (4+ letters) with ``query``.
    """
    moment = now or models.utcnow()
    words = set(_WORD.findall(query.casefold()))
    with postgres.wrap_errors("read channel state"):
        repo = ChannelState(db.pool)
        channel = await repo.channel_of(stream)
        rows = await repo.current(channel, now=moment, limit=max(limit, DEFAULT_LIMIT))
        logins = await repo.logins(u for row in rows for u in subjects(row))
        scored: list[tuple[float, StateRow]] = []
        for row in rows:
            about = set(subjects(row))
            if about & set(user_ids):
                scored.append((1.0, row))
            elif not user_ids or _matches(row.render(logins), words):
                scored.append((0.5, row))
        scored.sort(key=lambda pair: -pair[0])
        chosen = scored[:limit]
        origins = await repo.turn_message_ids(row.turn_id for _, row in chosen)
    return [
        models.RecallItem(
            source=STATE_SPACE,
            space=STATE_SPACE,
            viewer=logins.get(subjects(row)[0]) if subjects(row) else None,
            memory_id=_memory_id(row),
            text=row.render(logins),
            origin_message_ids=origins.get(row.turn_id or "", ()),
            score=score,
        )
        for score, row in chosen
    ]


def state_json(rows: Sequence[StateRow], logins: Mapping[str, str]) -> dict[str, list[Any]]:
    """Rows grouped by domain, as tools return them to the model."""
    grouped: dict[str, list[Any]] = {d.value: [] for d in Domain}
    for row in rows:
        grouped[_memory_id(row).split(":")[1]].append(row.to_json(logins))
    return grouped
