"""The transcript: the append-only audit trail of every stream in Postgres.

Chat messages are stored when they arrive (before any batch closes), so a failed model call or a
crash loses no message. A turn is a row when it opens and gets one outcome row when it ends; the
outcome and the turn's consolidation job are written in one transaction (the outbox).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memory import identity, models, sql
from memory.adapters import postgres
from memory.consolidate import jobs

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence


CONSOLIDATE_TURN = "consolidate_turn"


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnRow:
    """A turn as the transcript holds it."""

    id: str
    stream: str
    #: the messages the turn answered, in order
    message_ids: tuple[str, ...]
    status: models.TurnStatus
    reply: str | None
    error: str | None
    created_at: datetime
    #: chat time of the reply
    reply_ts: datetime | None
    timings: Mapping[str, float]
    report: Mapping[str, Any] | None

    @classmethod
    def from_row(cls, row: postgres.Record) -> TurnRow:
        return cls(
            id=row["id"],
            stream=row["stream"],
            message_ids=tuple(row["message_ids"]),
            status=models.TurnStatus(row["status"]),
            reply=row["reply"],
            error=row["error"],
            created_at=row["created_at"],
            reply_ts=row["reply_ts"],
            timings=json.loads(row["timings"]) if row["timings"] else {},
            report=json.loads(row["report"]) if row["report"] else None,
        )


def event_from_row(row: postgres.Record) -> models.ChatEvent:
    return models.ChatEvent(
        id=row["id"],
        stream=row["stream"],
        user_id=row["user_id"],
        login=row["login"],
        name=row["display_name"],
        badges=tuple(row["badges"]),
        text=row["text"],
        ts=row["ts"],
        kind=models.EventKind(row["kind"]),
        event=row["event"],
        reply_to=row["reply_to"],
    )


class Transcript:
    """Reads and appends the transcript. Never updates or deletes a row."""

    def __init__(self, db: postgres.Database) -> None:
        self.db = db
        #: stream -> the turn whose opening failed with the connection (``start_turn``)
        self._unsure: dict[str, str] = {}

    async def ensure_stream(
        self, stream: str, *, channel: str | None = None, temporary: bool = False
    ) -> None:
        with postgres.wrap_errors("register stream"):
            await self.db.pool.execute(
                sql.queries["transcript_ensure_stream"], stream, channel, temporary
            )

    async def append_events(self, events: Sequence[models.ChatEvent]) -> list[str]:
        """Store chat events; returns the ids that were new (known ids are left as they are)."""
        inserted: list[str] = []
        with postgres.wrap_errors("append messages"):
            async with self.db.pool.acquire() as conn, conn.transaction():
                for stream in sorted({e.stream for e in events}):
                    await conn.execute(sql.queries["transcript_ensure_stream"], stream, None, False)
                for event in events:
                    await conn.execute(
                        sql.queries["transcript_upsert_viewer"],
                        event.user_id,
                        identity.normalize_login(event.login),
                        event.name,
                        event.ts,
                    )
                    new_id = await conn.fetchval(
                        sql.queries["transcript_insert_message"],
                        event.id,
                        event.stream,
                        event.user_id,
                        event.login,
                        event.name,
                        list(event.badges),
                        event.text,
                        event.ts,
                        event.kind.value,
                        event.event,
                        event.reply_to,
                        list(event.redacted),
                    )
                    if new_id is not None:
                        inserted.append(new_id)
        return inserted

    async def answered(self, message_ids: Sequence[str]) -> set[str]:
        """The ids among ``message_ids`` that a finished turn already answered."""
        with postgres.wrap_errors("read turns"):
            rows = await self.db.pool.fetch(
                sql.queries["transcript_answered_message_ids"], list(message_ids)
            )
        return {row["id"] for row in rows}

    async def redacted(self, message_ids: Sequence[str]) -> set[str]:
        """The ids among ``message_ids`` whose text was redacted (``forget --everywhere``)."""
        if not message_ids:
            return set()
        with postgres.wrap_errors("read redactions"):
            rows = await self.db.pool.fetch(
                sql.queries["transcript_redacted_ids"], list(message_ids)
            )
        return {row["message_id"] for row in rows}

    async def start_turn(self, stream: str, message_ids: Sequence[str]) -> str:
        """Open a turn of ``message_ids``; returns its id.

        When the connection fails during the insert, the server may have written the row or not
        (Postgres stopping under a running statement commits it, then drops the connection). The
        next turn of the stream then opens under the same id: the row if it is missing, the
        written one if it holds the same messages (the caller retrying the batch, or marking it
        missed), else that one ends ``failed`` and a new turn opens. So a turn that never ran is
        not left pending beside the one that answered its messages."""
        unsure = self._unsure.pop(stream, None)
        if unsure is not None and await self._reopen(unsure, stream, message_ids):
            return unsure
        turn_id = str(uuid.uuid4())
        try:
            with postgres.wrap_errors("open turn"):
                await self.db.pool.execute(
                    sql.queries["transcript_insert_turn"], turn_id, stream, list(message_ids)
                )
        except BaseException:
            self._unsure[stream] = turn_id
            raise
        return turn_id

    async def _reopen(self, turn_id: str, stream: str, message_ids: Sequence[str]) -> bool:
        """Open ``turn_id`` again for ``message_ids`` (``start_turn``); False when the row holds
        other messages (it is then ended ``failed``) or has ended already."""
        try:
            with postgres.wrap_errors("open turn"):
                held = await self.db.pool.fetchval(
                    sql.queries["transcript_reopen_turn"], turn_id, stream, list(message_ids)
                )
            if held is None or list(held) == list(message_ids):
                return held is not None
            await self._end_failed(
                turn_id,
                stream,
                "its opening failed with the connection; its messages went to a later turn",
                ts=datetime.now(UTC),
                consolidate=False,  # the later turn consolidates them
            )
        except BaseException:
            self._unsure[stream] = turn_id  # still unsure: the next turn tries again
            raise
        return False

    async def finish_turn(
        self,
        turn_id: str,
        *,
        stream: str,
        status: models.TurnStatus,
        reply: str | None,
        error: str | None,
        ts: datetime,
        report: Mapping[str, Any],
        consolidate: bool,
        max_attempts: int = 5,
    ) -> None:
        """Write the turn's outcome and, when ``consolidate``, its consolidation job — atomically."""
        timings = report.get("timings_ms", {})
        with postgres.wrap_errors("finish turn"):
            async with self.db.pool.acquire() as conn, conn.transaction():
                await conn.execute(
                    sql.queries["transcript_insert_outcome"],
                    turn_id,
                    status.value,
                    reply,
                    error,
                    ts,
                    json.dumps(timings),
                    json.dumps(report),
                    report.get("reason"),
                )
                if consolidate:
                    await jobs.enqueue(
                        conn,
                        kind=CONSOLIDATE_TURN,
                        dedupe_key=turn_id,
                        payload={"turn_id": turn_id, "stream": stream},
                        max_attempts=max_attempts,
                    )

    async def close_pending(self, stream: str, *, reason: str, max_attempts: int = 5) -> list[str]:
        """End the turns of ``stream`` a crash left pending: ``failed`` with ``reason``, each with
        its consolidation job (what viewers said is remembered even though it was not answered).
        Returns their ids. Call it before this process runs a turn of ``stream``."""
        with postgres.wrap_errors("read pending turns"):
            rows = await self.db.pool.fetch(sql.queries["transcript_pending_turns"], stream)
        for row in rows:
            await self._end_failed(
                row["id"],
                stream,
                reason,
                ts=row["created_at"],
                consolidate=True,
                max_attempts=max_attempts,
            )
        return [row["id"] for row in rows]

    async def _end_failed(
        self,
        turn_id: str,
        stream: str,
        reason: str,
        *,
        ts: datetime,
        consolidate: bool,
        max_attempts: int = 5,
    ) -> None:
        """End a turn that never ran ``failed`` with ``reason`` (no reply, a minimal report)."""
        await self.finish_turn(
            turn_id,
            stream=stream,
            status=models.TurnStatus.FAILED,
            reply=None,
            error=reason,
            ts=ts,
            report={"turn_id": turn_id, "stream": stream, "status": "failed", "error": reason},
            consolidate=consolidate,
            max_attempts=max_attempts,
        )

    async def turn(self, turn_id: str) -> TurnRow | None:
        with postgres.wrap_errors("read turn"):
            row = await self.db.pool.fetchrow(sql.queries["transcript_get_turn"], turn_id)
        return TurnRow.from_row(row) if row else None

    async def turns(self, stream: str) -> list[TurnRow]:
        with postgres.wrap_errors("read turns"):
            rows = await self.db.pool.fetch(sql.queries["transcript_stream_turns"], stream)
        return [TurnRow.from_row(row) for row in rows]

    async def messages(self, message_ids: Sequence[str]) -> list[models.ChatEvent]:
        with postgres.wrap_errors("read messages"):
            rows = await self.db.pool.fetch(
                sql.queries["transcript_get_messages"], list(message_ids)
            )
        return [event_from_row(row) for row in rows]

    async def turn_messages(self, turn_id: str) -> list[models.ChatEvent]:
        turn = await self.turn(turn_id)
        return await self.messages(turn.message_ids) if turn else []

    async def history(self, stream: str, limit: int) -> list[models.HistoryItem]:
        """The newest ``limit`` history items of a stream, oldest first (to rebuild working history)."""
        with postgres.wrap_errors("read history"):
            rows = await self.db.pool.fetch(sql.queries["transcript_recent_history"], stream, limit)
        items = [
            models.HistoryItem(
                role=models.Role(row["role"]),
                text=row["text"],
                ts=row["ts"],
                turn_id=row["turn_id"],
                message_id=row["message_id"],
                user_id=row["user_id"],
                login=row["login"],
            )
            for row in rows
        ]
        items.reverse()
        return items

    async def viewer_by_login(self, login: str) -> Mapping[str, Any] | None:
        with postgres.wrap_errors("read viewer"):
            row = await self.db.pool.fetchrow(
                sql.queries["transcript_viewer_by_login"], identity.normalize_login(login)
            )
        return dict(row) if row else None

    async def stream_spans(self, limit: int) -> list[tuple[str, datetime, datetime]]:
        """(stream, first, last message time) of the ``limit`` most recently registered streams."""
        with postgres.wrap_errors("list stream spans"):
            rows = await self.db.pool.fetch(sql.queries["transcript_stream_spans"], limit)
        return [(row["stream"], row["first_ts"], row["last_ts"]) for row in rows]

    async def list_viewers(self, limit: int) -> list[tuple[str, str, str | None]]:
        """(user id, login, display name) of the ``limit`` most recently seen viewers, newest first."""
        with postgres.wrap_errors("list viewers"):
            rows = await self.db.pool.fetch(sql.queries["transcript_list_viewers"], limit)
        return [(row["user_id"], row["login"], row["display_name"]) for row in rows]
