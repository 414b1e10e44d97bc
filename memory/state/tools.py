"""Model tools on structured channel state (Ollama tool calling).

``ToolRunner`` offers the tool schemas, runs the calls the model made, and records the barrier. The
arguments are validated with pydantic (this is an edge). Viewers are named by login and resolved to
user ids (the batch's speakers first, then the ``viewers`` table). A bad call — unknown tool,
arguments that are not JSON or do not validate, an unknown viewer, a request that is not open — gets
an error result back to the model (``{"ok": false, "error": …}``), never an exception. Every call and
its result is a row of ``turn_tool_calls``, written in the same transaction as the state change.

The argument models and schemas are in ``memory.state.tool_args``; the handlers and the ``TOOLS``
registry in ``memory.state.tool_handlers``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memory import errors, models, sql
from memory.adapters import postgres
from memory.consolidate import barrier
from memory.state import channel as state
from memory.state import tool_args, tool_handlers

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence
    from datetime import datetime

    from config.settings import Settings

logger = logging.getLogger(__name__)


def _jsonable(raw: Any) -> Any:
    """Arguments as stored: the mapping, or the raw text when it is not one."""
    if isinstance(raw, Mapping):
        return dict(raw)
    return {"_raw": raw if isinstance(raw, str) else repr(raw)}


@dataclass(slots=True, kw_only=True)
class ToolRound:
    """What one round of tool calls did."""

    #: one TOOL history item per call, in call order
    results: list[models.HistoryItem] = field(default_factory=list)
    #: structured domains changed by the round's successful calls
    changed_domains: set[str] = field(default_factory=set)
    #: user ids of the viewers those changes involve
    involved_user_ids: set[str] = field(default_factory=set)
    #: the turn report's ``tools`` entries
    records: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Call:
    """Where a round's calls run and who may be written about."""

    turn_id: str
    channel: str
    speakers: Mapping[str, str]
    privileged: bool


class ToolRunner:
    """Runs the model's tool calls on the channel state of a stream; one instance serves all."""

    def __init__(
        self,
        db: postgres.Database,
        settings: Settings,
        *,
        clock: Callable[[], datetime] = models.utcnow,
        on_change: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        """``on_change`` runs after a round that changed state (e.g. the retriever's
        ``invalidate_state``, so cached state is not served again)."""
        self.db = db
        self.settings = settings
        self.clock = clock
        self.on_change = on_change

    def tool_schemas(self) -> list[dict[str, Any]]:
        return [tool_args.tool_schema(tool) for tool in tool_handlers.TOOLS.values()]

    async def run(
        self,
        turn_id: str,
        stream: str,
        calls: Sequence[models.ToolCall],
        speakers: Mapping[str, str],
        *,
        privileged: bool = False,
    ) -> ToolRound:
        """Run ``calls`` in order, each in its own transaction with its ``turn_tool_calls`` row.

        ``speakers``: login → user id of the batch's authors; a change about anyone else is
        refused unless ``privileged`` (a moderator or the broadcaster wrote in the batch)."""
        outcome = ToolRound()
        with postgres.wrap_errors("run tool calls"):
            channel = await state.channel_of(self.db, stream)
            seq = int(await self.db.pool.fetchval(sql.queries["state_next_tool_seq"], turn_id))
            chat_ts = await self.db.pool.fetchval(sql.queries["state_turn_chat_time"], turn_id)
            for call in calls:
                ctx = _Call(turn_id, channel, speakers, privileged)
                await self._run_one(outcome, call, seq, ctx)
                seq += 1
        if chat_ts is not None:
            # results sit in the history at the turn's chat time, like the call and the reply
            outcome.results = [dataclasses.replace(r, ts=chat_ts) for r in outcome.results]
        if outcome.changed_domains and self.on_change is not None:
            await self.on_change()
        return outcome

    async def _run_one(
        self,
        outcome: ToolRound,
        call: models.ToolCall,
        seq: int,
        where: _Call,
    ) -> None:
        turn_id = where.turn_id
        at = self.clock()
        call_id = call.id or f"{turn_id}-{seq}"
        raw = call.arguments
        async with self.db.pool.acquire() as conn, conn.transaction():
            ctx = tool_handlers.Context(
                repo=state.ChannelState(conn),
                channel=where.channel,
                turn_id=turn_id,
                at=at,
                speakers=where.speakers,
                privileged=where.privileged,
            )
            error: str | None = None
            try:
                async with conn.transaction():  # a savepoint: a failed call changes nothing
                    tool = tool_handlers.TOOLS.get(call.name)
                    if tool is None:
                        raise errors.ToolCallError(
                            f"unknown tool {call.name!r}; tools: {', '.join(tool_handlers.TOOLS)}"
                        )
                    done = await tool.handler(ctx, tool_args.parse_arguments(tool, raw))
                    ctx.authorize(done)  # raising here rolls the change back
            except (errors.ToolCallError, errors.UnknownViewer) as exc:
                error = str(exc)
                result: dict[str, Any] = {"ok": False, "error": error}
            else:
                result = {"ok": True, **done.result}
                outcome.changed_domains |= done.domains
                outcome.involved_user_ids |= done.user_ids
            await conn.execute(
                sql.queries["state_insert_tool_call"],
                turn_id,
                seq,
                call_id,
                call.name,
                json.dumps(_jsonable(raw)),
                json.dumps(result),
                error,
                at,
            )
        logger.info(
            "turn %s tool %s: %s",
            turn_id,
            call.name,
            "error: " + error if error else "ok",
            extra={"action": "tool_call"},
        )
        outcome.results.append(
            models.HistoryItem(
                role=models.Role.TOOL,
                text=json.dumps(result, ensure_ascii=False),
                ts=at,
                turn_id=turn_id,
                tool_call_id=call.id or None,
                tool_name=call.name,
            )
        )
        outcome.records.append(
            {
                "seq": seq,
                "call_id": call_id,
                "name": call.name,
                "arguments": _jsonable(raw),
                "result": result,
                "error": error,
            }
        )

    async def record_barrier(
        self, turn_id: str, domains: set[str], user_ids: set[str], batch_user_ids: set[str]
    ) -> dict[str, Any] | None:
        """Record the turn's ingestion barrier (scope ``settings.memory.barrier_scope``).

        Returns the turn report's ``barrier`` field, or None when no domain changed.
        """
        decision = barrier.decide(
            domains, user_ids, batch_user_ids, self.settings.memory.barrier_scope
        )
        if decision.empty:
            return None
        merged = await barrier.record(self.db, turn_id, decision)
        return merged.to_json()


async def tool_calls(db: postgres.Database, turn_id: str) -> list[dict[str, Any]]:
    """The recorded tool calls of a turn, in order (admin, tests)."""
    with postgres.wrap_errors("read tool calls"):
        rows = await db.pool.fetch(sql.queries["state_tool_calls"], turn_id)
    return [
        {
            "seq": row["seq"],
            "call_id": row["call_id"],
            "name": row["tool_name"],
            "arguments": json.loads(row["arguments"]),
            "result": json.loads(row["result"]) if row["result"] is not None else None,
            "error": row["error"],
            "at": row["at"],
        }
        for row in rows
    ]
