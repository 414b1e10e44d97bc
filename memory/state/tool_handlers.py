"""The model tools' handlers and registry (``TOOLS``): each runs one call on the channel state.

A handler gets a ``Context`` (the state repository inside the call's transaction) and validated
arguments; it resolves viewers by login (the batch's speakers first, then the ``viewers`` table)
and raises ``errors.ToolCallError`` / ``errors.UnknownViewer`` for a call it cannot do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from memory import errors, identity
from memory.state import channel as state
from memory.state import tool_args

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping, Sequence


@dataclass(slots=True, kw_only=True)
class Context:
    """What a tool handler works with: a repository inside the call's transaction."""

    repo: state.ChannelState
    channel: str
    turn_id: str
    at: datetime
    speakers: Mapping[str, str]
    #: a moderator or the broadcaster wrote in the batch: state about anyone may change
    privileged: bool = False
    #: user id → login of the viewers resolved so far (for results)
    logins: dict[str, str] = field(default_factory=dict)

    def authorize(self, outcome: Outcome) -> None:
        """Refuse a state change about a viewer who did not write in the turn's batch (unless a
        moderator or the broadcaster did): the model cannot write canon about people who did not
        ask, whatever a viewer told it."""
        if not outcome.domains or self.privileged:
            return
        absent = sorted(outcome.user_ids - set(self.speakers.values()))
        if absent:
            who = ", ".join(self.logins.get(u, u) for u in absent)
            raise errors.ToolCallError(
                f"not allowed: {who} did not write in this chat batch; state about a viewer "
                "changes only on their own words (or a moderator's)"
            )

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
class Outcome:
    """What a successful call returns to the model, and the state it changed."""

    result: dict[str, Any]
    domains: frozenset[str] = frozenset()
    user_ids: frozenset[str] = frozenset()


async def _add_request(ctx: Context, args: tool_args.AddRequest) -> Outcome:
    user_id = await ctx.resolve(args.viewer)
    row = await ctx.repo.add_request(
        ctx.channel, user_id, args.text, at=ctx.at, turn_id=ctx.turn_id
    )
    return Outcome(
        result={"request": row.to_json(ctx.logins)},
        domains=frozenset({state.Domain.REQUESTS}),
        user_ids=frozenset({user_id}),
    )


async def _close_request(ctx: Context, request_id: int, status: state.RequestStatus) -> Outcome:
    row = await ctx.repo.close_request(
        ctx.channel, request_id, status, at=ctx.at, turn_id=ctx.turn_id
    )
    if row is None:
        existing = await ctx.repo.request(ctx.channel, request_id)
        if existing is None:
            raise errors.ToolCallError(f"there is no request #{request_id} in this channel")
        raise errors.ToolCallError(f"request #{request_id} is already {existing.status.value}")
    logins = await ctx.all_logins([row.user_id])
    return Outcome(
        result={"request": row.to_json(logins)},
        domains=frozenset({state.Domain.REQUESTS}),
        user_ids=frozenset({row.user_id}),
    )


async def _complete_request(ctx: Context, args: tool_args.RequestRef) -> Outcome:
    return await _close_request(ctx, args.request_id, state.RequestStatus.COMPLETED)


async def _cancel_request(ctx: Context, args: tool_args.RequestRef) -> Outcome:
    return await _close_request(ctx, args.request_id, state.RequestStatus.CANCELLED)


async def _list_requests(ctx: Context, args: tool_args.ListRequests) -> Outcome:
    user_id = await ctx.resolve(args.viewer) if args.viewer else None
    status = None if args.status == "all" else state.RequestStatus(args.status)
    rows = await ctx.repo.requests(ctx.channel, user_id=user_id, status=status)
    logins = await ctx.all_logins([r.user_id for r in rows])
    return Outcome(result={"requests": [r.to_json(logins) for r in rows]})


async def _set_relationship(ctx: Context, args: tool_args.SetRelationship) -> Outcome:
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
    return Outcome(
        result={"relationship": row.to_json(ctx.logins)},
        domains=frozenset({state.Domain.RELATIONSHIPS}),
        user_ids=frozenset({user_a, user_b}),
    )


async def _remove_relationship(ctx: Context, args: tool_args.ViewerPair) -> Outcome:
    user_a, user_b = await ctx.resolve(args.viewer_a), await ctx.resolve(args.viewer_b)
    row = await ctx.repo.remove_relationship(
        ctx.channel, user_a, user_b, at=ctx.at, turn_id=ctx.turn_id
    )
    if row is None:
        raise errors.ToolCallError(
            f"there is no relationship between {args.viewer_a} and {args.viewer_b}"
        )
    return Outcome(
        result={"removed": row.to_json(ctx.logins)},
        domains=frozenset({state.Domain.RELATIONSHIPS}),
        user_ids=frozenset({user_a, user_b}),
    )


async def _get_relationships(ctx: Context, args: tool_args.OneViewer) -> Outcome:
    user_id = await ctx.resolve(args.viewer)
    rows = await ctx.repo.relationships(ctx.channel, user_id=user_id)
    logins = await ctx.all_logins([u for r in rows for u in (r.user_a, r.user_b)])
    return Outcome(result={"relationships": [r.to_json(logins) for r in rows]})


async def _add_note(ctx: Context, args: tool_args.AddNote) -> Outcome:
    user_id = await ctx.resolve(args.about) if args.about else None
    expires = (
        ctx.at + timedelta(minutes=args.expires_in_minutes) if args.expires_in_minutes else None
    )
    row = await ctx.repo.add_note(
        ctx.channel, args.text, user_id=user_id, expires_at=expires, at=ctx.at, turn_id=ctx.turn_id
    )
    return Outcome(
        result={"note": row.to_json(ctx.logins)},
        domains=frozenset({state.Domain.NOTES}),
        user_ids=frozenset({user_id} if user_id else ()),
    )


async def _add_inside_joke(ctx: Context, args: tool_args.AddInsideJoke) -> Outcome:
    user_ids = [await ctx.resolve(login) for login in args.viewers]
    row = await ctx.repo.add_joke(ctx.channel, args.text, user_ids, at=ctx.at, turn_id=ctx.turn_id)
    logins = await ctx.all_logins(row.user_ids)
    return Outcome(
        result={"inside_joke": row.to_json(logins)},
        domains=frozenset({state.Domain.JOKES}),
        user_ids=frozenset(user_ids),
    )


async def _list_state(ctx: Context, args: tool_args.ListState) -> Outcome:
    user_id = await ctx.resolve(args.viewer) if args.viewer else None
    rows = await ctx.repo.current(ctx.channel, now=ctx.at, user_id=user_id)
    logins = await ctx.all_logins([u for row in rows for u in state.subjects(row)])
    return Outcome(result=state.state_json(rows, logins))


@dataclass(frozen=True, slots=True)
class Tool:
    """A model tool: its name and description, argument model and handler."""

    name: str
    description: str
    arguments: type[tool_args.ToolArgs]
    handler: Callable[[Context, Any], Awaitable[Outcome]]


TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool(
            "add_request", "Record a viewer's request (open).", tool_args.AddRequest, _add_request
        ),
        Tool(
            "complete_request",
            "Mark an open request as done.",
            tool_args.RequestRef,
            _complete_request,
        ),
        Tool("cancel_request", "Cancel an open request.", tool_args.RequestRef, _cancel_request),
        Tool(
            "list_requests",
            "List requests (open by default).",
            tool_args.ListRequests,
            _list_requests,
        ),
        Tool(
            "set_relationship",
            "Record or change the relationship between two viewers.",
            tool_args.SetRelationship,
            _set_relationship,
        ),
        Tool(
            "remove_relationship",
            "Remove the relationship between two viewers.",
            tool_args.ViewerPair,
            _remove_relationship,
        ),
        Tool(
            "get_relationships",
            "A viewer's relationships.",
            tool_args.OneViewer,
            _get_relationships,
        ),
        Tool(
            "add_note",
            "Write a note (about a viewer or the channel).",
            tool_args.AddNote,
            _add_note,
        ),
        Tool(
            "add_inside_joke",
            "Record an inside joke shared by viewers.",
            tool_args.AddInsideJoke,
            _add_inside_joke,
        ),
        Tool(
            "list_state",
            "The current channel state: open requests, relationships, notes, inside jokes.",
            tool_args.ListState,
            _list_state,
        ),
    )
}
