"""Model tools on structured channel state (Ollama tool calling).

``ToolRunner`` offers the tool schemas, runs the calls the model made, and records the barrier. The
arguments are validated with pydantic (this is an edge). Viewers are named by login and resolved to
user ids (the batch's speakers first, then the ``viewers`` table). A bad call — unknown tool,
arguments that are not JSON or do not validate, an unknown viewer, a request that is not open — gets
an error result back to the model (``{"ok": false, "error": …}``), never an exception. Every call and
its result is a row of ``turn_tool_calls``, written in the same transaction as the state change.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, Literal

import pydantic

from memory import barrier, errors, identity, models, sql, state
from memory.adapters import postgres

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from config.settings import Settings

logger = logging.getLogger(__name__)

Login = Annotated[
    str, pydantic.Field(min_length=1, max_length=40, description="a viewer's Twitch login")
]
Text = Annotated[str, pydantic.Field(min_length=1, max_length=500)]


class _Args(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", str_strip_whitespace=True, frozen=True)


class AddRequest(_Args):
    viewer: Login = pydantic.Field(description="login of the viewer who asks")
    text: Text = pydantic.Field(description="what the viewer asks for")


class RequestRef(_Args):
    request_id: int = pydantic.Field(ge=1, description="the request number (see list_requests)")


class ListRequests(_Args):
    viewer: Login | None = pydantic.Field(None, description="only this viewer's requests")
    status: Literal["open", "completed", "cancelled", "all"] = "open"


class SetRelationship(_Args):
    viewer_a: Login
    viewer_b: Login
    kind: str = pydantic.Field(
        min_length=1, max_length=60, description="e.g. siblings, friends, partners, rivals"
    )
    since: str | None = pydantic.Field(None, max_length=60, description="since when, as said")


class ViewerPair(_Args):
    viewer_a: Login
    viewer_b: Login


class OneViewer(_Args):
    viewer: Login


class AddNote(_Args):
    text: Text
    about: Login | None = pydantic.Field(None, description="the viewer the note is about")
    expires_in_minutes: int | None = pydantic.Field(
        None, ge=1, le=525_600, description="forget the note after this many minutes"
    )


class AddInsideJoke(_Args):
    text: Text = pydantic.Field(description="the joke, in a few words")
    viewers: list[Login] = pydantic.Field(
        min_length=1, max_length=10, description="logins of the viewers who share it"
    )


class ListState(_Args):
    viewer: Login | None = pydantic.Field(None, description="only what concerns this viewer")


@dataclass(slots=True, kw_only=True)
class _Context:
    """What a tool handler works with: a repository inside the call's transaction."""

    repo: state.ChannelState
    channel: str
    turn_id: str
    at: datetime
    speakers: Mapping[str, str]
    #: user id → login of the viewers resolved so far (for results)
    logins: dict[str, str] = field(default_factory=dict)

    async def resolve(self, login: str) -> str:
        name = identity.normalize_login(login)
        known = {identity.normalize_login(k): v for k, v in self.speakers.items()}
        if name in known:
            self.logins[known[name]] = name
            return known[name]
        found = await self.repo.user_id_of(name) if name else None
        if found is None:
            raise errors.UnknownViewer(f"unknown viewer {login!r}: use the login of a chat viewer")
        self.logins[found[0]] = found[1]
        return found[0]

    async def all_logins(self, user_ids: Sequence[str]) -> dict[str, str]:
        return {**await self.repo.logins(user_ids), **self.logins}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Outcome:
    result: dict[str, Any]
    domains: frozenset[str] = frozenset()
    user_ids: frozenset[str] = frozenset()


async def _add_request(ctx: _Context, args: AddRequest) -> _Outcome:
    user_id = await ctx.resolve(args.viewer)
    row = await ctx.repo.add_request(
        ctx.channel, user_id, args.text, at=ctx.at, turn_id=ctx.turn_id
    )
    return _Outcome(
        result={"request": row.to_json(ctx.logins)},
        domains=frozenset({state.Domain.REQUESTS}),
        user_ids=frozenset({user_id}),
    )


async def _close_request(ctx: _Context, request_id: int, status: state.RequestStatus) -> _Outcome:
    row = await ctx.repo.close_request(
        ctx.channel, request_id, status, at=ctx.at, turn_id=ctx.turn_id
    )
    if row is None:
        existing = await ctx.repo.request(ctx.channel, request_id)
        if existing is None:
            raise errors.ToolCallError(f"there is no request #{request_id} in this channel")
        raise errors.ToolCallError(f"request #{request_id} is already {existing.status.value}")
    logins = await ctx.all_logins([row.user_id])
    return _Outcome(
        result={"request": row.to_json(logins)},
        domains=frozenset({state.Domain.REQUESTS}),
        user_ids=frozenset({row.user_id}),
    )


async def _complete_request(ctx: _Context, args: RequestRef) -> _Outcome:
    return await _close_request(ctx, args.request_id, state.RequestStatus.COMPLETED)


async def _cancel_request(ctx: _Context, args: RequestRef) -> _Outcome:
    return await _close_request(ctx, args.request_id, state.RequestStatus.CANCELLED)


async def _list_requests(ctx: _Context, args: ListRequests) -> _Outcome:
    user_id = await ctx.resolve(args.viewer) if args.viewer else None
    status = None if args.status == "all" else state.RequestStatus(args.status)
    rows = await ctx.repo.requests(ctx.channel, user_id=user_id, status=status)
    logins = await ctx.all_logins([r.user_id for r in rows])
    return _Outcome(result={"requests": [r.to_json(logins) for r in rows]})


async def _set_relationship(ctx: _Context, args: SetRelationship) -> _Outcome:
    user_a, user_b = await ctx.resolve(args.viewer_a), await ctx.resolve(args.viewer_b)
    if user_a == user_b:
        raise errors.ToolCallError("a relationship needs two different viewers")
    row = await ctx.repo.set_relationship(
        ctx.channel,
        user_a,
        user_b,
        args.kind.casefold(),
        since=args.since,
        at=ctx.at,
        turn_id=ctx.turn_id,
    )
    return _Outcome(
        result={"relationship": row.to_json(ctx.logins)},
        domains=frozenset({state.Domain.RELATIONSHIPS}),
        user_ids=frozenset({user_a, user_b}),
    )


async def _remove_relationship(ctx: _Context, args: ViewerPair) -> _Outcome:
    user_a, user_b = await ctx.resolve(args.viewer_a), await ctx.resolve(args.viewer_b)
    row = await ctx.repo.remove_relationship(
        ctx.channel, user_a, user_b, at=ctx.at, turn_id=ctx.turn_id
    )
    if row is None:
        raise errors.ToolCallError(
            f"there is no relationship between {args.viewer_a} and {args.viewer_b}"
        )
    return _Outcome(
        result={"removed": row.to_json(ctx.logins)},
        domains=frozenset({state.Domain.RELATIONSHIPS}),
        user_ids=frozenset({user_a, user_b}),
    )


async def _get_relationships(ctx: _Context, args: OneViewer) -> _Outcome:
    user_id = await ctx.resolve(args.viewer)
    rows = await ctx.repo.relationships(ctx.channel, user_id=user_id)
    logins = await ctx.all_logins([u for r in rows for u in (r.user_a, r.user_b)])
    return _Outcome(result={"relationships": [r.to_json(logins) for r in rows]})


async def _add_note(ctx: _Context, args: AddNote) -> _Outcome:
    user_id = await ctx.resolve(args.about) if args.about else None
    expires = (
        ctx.at + timedelta(minutes=args.expires_in_minutes) if args.expires_in_minutes else None
    )
    row = await ctx.repo.add_note(
        ctx.channel, args.text, user_id=user_id, expires_at=expires, at=ctx.at, turn_id=ctx.turn_id
    )
    return _Outcome(
        result={"note": row.to_json(ctx.logins)},
        domains=frozenset({state.Domain.NOTES}),
        user_ids=frozenset({user_id} if user_id else ()),
    )


async def _add_inside_joke(ctx: _Context, args: AddInsideJoke) -> _Outcome:
    user_ids = [await ctx.resolve(login) for login in args.viewers]
    row = await ctx.repo.add_joke(ctx.channel, args.text, user_ids, at=ctx.at, turn_id=ctx.turn_id)
    logins = await ctx.all_logins(row.user_ids)
    return _Outcome(
        result={"inside_joke": row.to_json(logins)},
        domains=frozenset({state.Domain.JOKES}),
        user_ids=frozenset(user_ids),
    )


async def _list_state(ctx: _Context, args: ListState) -> _Outcome:
    user_id = await ctx.resolve(args.viewer) if args.viewer else None
    rows = await ctx.repo.current(ctx.channel, now=ctx.at, user_id=user_id)
    logins = await ctx.all_logins([u for row in rows for u in state.subjects(row)])
    return _Outcome(result=state.state_json(rows, logins))


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    arguments: type[_Args]
    handler: Callable[[_Context, Any], Awaitable[_Outcome]]


TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool("add_request", "Record a viewer's request (open).", AddRequest, _add_request),
        Tool("complete_request", "Mark an open request as done.", RequestRef, _complete_request),
        Tool("cancel_request", "Cancel an open request.", RequestRef, _cancel_request),
        Tool("list_requests", "List requests (open by default).", ListRequests, _list_requests),
        Tool(
            "set_relationship",
            "Record or change the relationship between two viewers.",
            SetRelationship,
            _set_relationship,
        ),
        Tool(
            "remove_relationship",
            "Remove the relationship between two viewers.",
            ViewerPair,
            _remove_relationship,
        ),
        Tool("get_relationships", "A viewer's relationships.", OneViewer, _get_relationships),
        Tool("add_note", "Write a note (about a viewer or the channel).", AddNote, _add_note),
        Tool(
            "add_inside_joke",
            "Record an inside joke shared by viewers.",
            AddInsideJoke,
            _add_inside_joke,
        ),
        Tool(
            "list_state",
            "The current channel state: open requests, relationships, notes, inside jokes.",
            ListState,
            _list_state,
        ),
    )
}

_SCHEMA_KEYS = ("type", "description", "enum", "items", "minimum", "maximum", "default")


def _simplify(prop: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON-schema property without pydantic's titles; ``X | None`` becomes ``X``."""
    merged = dict(prop)
    options = [o for o in prop.get("anyOf", ()) if o.get("type") != "null"]
    if len(options) == 1:
        merged = {**options[0], **{k: v for k, v in prop.items() if k != "anyOf"}}
    out = {k: merged[k] for k in _SCHEMA_KEYS if k in merged and merged[k] is not None}
    if "items" in out:
        out["items"] = _simplify(out["items"])
    return out


def tool_schema(tool: Tool) -> dict[str, Any]:
    """One tool in Ollama's ``tools=`` format."""
    schema = tool.arguments.model_json_schema()
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": {
                "type": "object",
                "properties": {k: _simplify(v) for k, v in schema["properties"].items()},
                "required": list(schema.get("required", [])),
            },
        },
    }


def parse_arguments(tool: Tool, raw: Any) -> _Args:
    """Validate a call's arguments (a mapping, or a JSON object as text)."""
    if isinstance(raw, str | bytes):
        try:
            raw = json.loads(raw or "{}")
        except ValueError as exc:
            raise errors.ToolCallError(f"arguments are not valid JSON: {exc}") from exc
    if isinstance(raw, Mapping):
        raw = dict(raw)
    if not isinstance(raw, dict):
        raise errors.ToolCallError("arguments must be a JSON object")
    try:
        return tool.arguments.model_validate(raw)
    except pydantic.ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
        )
        raise errors.ToolCallError(f"invalid arguments for {tool.name}: {problems}") from exc


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
        return [tool_schema(tool) for tool in TOOLS.values()]

    async def run(
        self,
        turn_id: str,
        stream: str,
        calls: Sequence[models.ToolCall],
        speakers: Mapping[str, str],
    ) -> ToolRound:
        """Run ``calls`` in order, each in its own transaction with its ``turn_tool_calls`` row."""
        outcome = ToolRound()
        with postgres.wrap_errors("run tool calls"):
            channel = await state.channel_of(self.db, stream)
            seq = int(await self.db.pool.fetchval(sql.queries["state_next_tool_seq"], turn_id))
            chat_ts = await self.db.pool.fetchval(sql.queries["state_turn_chat_time"], turn_id)
            for call in calls:
                await self._run_one(outcome, call, seq, turn_id, channel, speakers)
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
        turn_id: str,
        channel: str,
        speakers: Mapping[str, str],
    ) -> None:
        at = self.clock()
        call_id = call.id or f"{turn_id}-{seq}"
        raw = call.arguments
        async with self.db.pool.acquire() as conn, conn.transaction():
            ctx = _Context(
                repo=state.ChannelState(conn),
                channel=channel,
                turn_id=turn_id,
                at=at,
                speakers=speakers,
            )
            error: str | None = None
            try:
                async with conn.transaction():  # a savepoint: a failed call changes nothing
                    tool = TOOLS.get(call.name)
                    if tool is None:
                        raise errors.ToolCallError(
                            f"unknown tool {call.name!r}; tools: {', '.join(TOOLS)}"
                        )
                    done = await tool.handler(ctx, parse_arguments(tool, raw))
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
