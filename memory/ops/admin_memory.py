"""Admin subcommands on memories: inspect, export, forget, correct, lore load (with its diff)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memory import errors, identity
from memory.ops import admin_io, operations
from memory.ops.wording import counted
from memory.spaces import lore
from memory.spaces import store as spaces_module

if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping

    from memory.spaces import records

#: the shortest memory-id prefix accepted (``!memory`` shows 6 characters)
MIN_PREFIX = 4


async def viewer_of(ops: operations.Operations, args: argparse.Namespace) -> operations.Viewer:
    """The viewer named by ``--viewer LOGIN`` or ``--user-id ID``."""
    if getattr(args, "user_id", None):
        return await ops.viewer_by_id(args.user_id)
    return await ops.resolve_viewer(args.viewer)


async def resolve_memory_id(ops: operations.Operations, given: str) -> records.MemoryRecord:
    """A memory by full id or by a unique prefix (at least ``MIN_PREFIX`` characters)."""
    given = given.strip().casefold()
    if spaces_module.is_memory_id(given):
        return await ops.find(given)
    if len(given) < MIN_PREFIX:
        raise errors.UnknownMemory(
            f"unknown memory {given!r} (give the id or at least {MIN_PREFIX} of its characters)",
            memory_id=given,
        )
    matches: list[records.MemoryRecord] = []
    for space in await ops.spaces.spaces():
        matches.extend(
            r for r in await ops.spaces.list(space, limit=1_000_000) if r.id.startswith(given)
        )
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise errors.UnknownMemory(f"unknown memory {given!r}", memory_id=given)
    raise errors.UnknownMemory(
        f"unknown memory {given!r}: the prefix matches {counted(len(matches), 'memory')}, give more of it",
        memory_id=given,
    )


async def inspect(
    services: admin_io.AdminServices, args: argparse.Namespace, io: admin_io.Io
) -> int:
    ops = services.ops
    viewer = await viewer_of(ops, args)
    memories = await ops.inspect(viewer.user_id)
    data = {
        "viewer": {"user_id": viewer.user_id, "login": viewer.login},
        "memories": [operations.record_json(r) for r in memories],
    }
    lines = [f"{viewer.login} (user {viewer.user_id}): {counted(len(memories), 'memory')}"]
    for r in memories:
        origin = ",".join(r.origin_message_ids)
        answering = f'answering "{r.context_question}", ' if r.context_question else ""
        line = (
            f"{r.id}  [{r.kind.value}]  {r.text}  ({answering}turn {r.turn_id}, messages {origin})"
        )
        lines.append(line + superseded(r))
    io.result(data, "\n".join(lines))
    return admin_io.OK


def superseded(record: records.MemoryRecord) -> str:
    """`` — superseded by <id> on 2026-11-08`` for a superseded memory, else nothing."""
    if record.superseded_by is None:
        return ""
    on = f" on {record.superseded_at:%Y-%m-%d}" if record.superseded_at else ""
    return f"  — superseded by {record.superseded_by}{on}"


async def export(
    services: admin_io.AdminServices, args: argparse.Namespace, io: admin_io.Io
) -> int:
    io.json(await services.ops.export(await viewer_of(services.ops, args)))
    return admin_io.OK


async def forget(
    services: admin_io.AdminServices, args: argparse.Namespace, io: admin_io.Io
) -> int:
    ops, actor = services.ops, args.actor
    if args.memory_id:
        record = await resolve_memory_id(ops, args.memory_id)
        plan: dict[str, Any] = {"forget": "memory", "memory": operations.record_json(record)}
        lines = [f"forget memory {record.id} in {record.space}: {record.text!r}"]
        if (stop := await admin_io.confirm(io, args, plan, lines)) is not None:
            return stop
        await ops.forget_memory(record.id, actor=actor)
        result: dict[str, Any] = {"forgot": "memory", "memory_id": record.id, "space": record.space}
    elif args.turn:
        in_turn = await _turn_memories(ops, args.turn)
        plan = {"forget": "turn", "turn_id": args.turn, "memories": len(in_turn)}
        lines = [f"forget the {counted(len(in_turn), 'memory', 'memories')} of turn {args.turn}:"]
        lines += [f"  {r.id}  {r.space}  {r.text!r}" for r in in_turn]
        if (stop := await admin_io.confirm(io, args, plan, lines)) is not None:
            return stop
        removed = await ops.forget_turn(args.turn, actor=actor)
        result = {"forgot": "turn", "turn_id": args.turn, "memories": removed}
    else:
        viewer = await viewer_of(ops, args)
        count = len(await ops.inspect(viewer.user_id))
        scope = (
            " and erase their words everywhere (transcript, episodes, turn reports, tool calls,"
            " channel state, working history, caches)"
            if args.everywhere
            else ""
        )
        plan = {"forget": "viewer", "login": viewer.login, "user_id": viewer.user_id}
        plan |= {"memories": count, "everywhere": args.everywhere}
        lines = [
            f"forget {'the' if count == 1 else 'all'} {counted(count, 'memory')} and the profile "
            f"of {viewer.login} "
            f"(user {viewer.user_id}){scope}"
        ]
        if (stop := await admin_io.confirm(io, args, plan, lines)) is not None:
            return stop
        report = await ops.forget_viewer(viewer.user_id, actor=actor, everywhere=args.everywhere)
        result = {"forgot": "viewer", "login": viewer.login, **report.to_json()}
    io.result(result)
    return admin_io.OK


async def _turn_memories(ops: operations.Operations, turn_id: str) -> list[records.MemoryRecord]:
    """The memories a turn left, in every space (``errors.UnknownTurn`` for an unknown turn)."""
    from memory import sql
    from memory.adapters import postgres

    with postgres.wrap_errors("read turn"):
        row = await ops.db.pool.fetchrow(sql.queries["memory_turn_authors"], turn_id)
    if row is None:
        raise errors.UnknownTurn(f"unknown turn {turn_id!r}", turn_id=turn_id)
    spaces = [identity.personal_key(u) for u in row["user_ids"]]
    spaces.append(identity.episodic_key(row["stream"]))
    found: list[records.MemoryRecord] = []
    for space in spaces:
        found.extend(r for r in await ops.spaces.list(space, limit=100_000) if r.turn_id == turn_id)
    return found


async def correct(
    services: admin_io.AdminServices, args: argparse.Namespace, io: admin_io.Io
) -> int:
    original = await resolve_memory_id(services.ops, args.memory_id)
    plan = {"correct": original.id, "old": original.text, "new": args.text.strip()}
    lines = [f"correct memory {original.id}:", f"- {original.text}", f"+ {args.text.strip()}"]
    if (stop := await admin_io.confirm(io, args, plan, lines)) is not None:
        return stop
    record = await services.ops.correct(original.id, args.text, actor=args.actor)
    io.result(operations.record_json(record), f"corrected {original.id}: new memory {record.id}")
    return admin_io.OK


def lore_diff(
    current: list[records.MemoryRecord], entries: list[lore.Entry]
) -> dict[str, list[Any]]:
    """What loading ``entries`` changes, by entry title: added, removed, changed, unchanged."""
    old: Mapping[str, str] = {str(r.extra.get("title", r.text)): r.text for r in current}
    new = {entry.title: entry.record(index).text for index, entry in enumerate(entries)}
    return {
        "added": [{"title": t, "text": new[t]} for t in new if t not in old],
        "removed": [{"title": t, "text": old[t]} for t in old if t not in new],
        "changed": [
            {"title": t, "old": old[t], "new": new[t]} for t in new if t in old and old[t] != new[t]
        ],
        "unchanged": [t for t in new if old.get(t) == new[t]],
    }


def diff_lines(diff: dict[str, list[Any]]) -> list[str]:
    lines = [f"+ {item['text']}" for item in diff["added"]]
    lines += [f"- {item['text']}" for item in diff["removed"]]
    for item in diff["changed"]:
        lines += [f"~ {item['title']}", f"  - {item['old']}", f"  + {item['new']}"]
    counts = ", ".join(f"{len(v)} {k}" for k, v in diff.items())
    return [*lines, f"lore: {counts}"]


async def lore_load(
    services: admin_io.AdminServices, args: argparse.Namespace, io: admin_io.Io
) -> int:
    entries = lore.read(args.directory)
    current = await services.ops.spaces.list(identity.LORE_KEY, limit=100_000)
    diff = lore_diff(current, entries)
    plan = {"directory": str(args.directory), **diff}
    if (stop := await admin_io.confirm(io, args, plan, diff_lines(diff))) is not None:
        return stop
    count = await services.ops.load_lore(args.directory, actor=args.actor)
    result = {"loaded": count, "directory": str(args.directory), **diff}
    io.result(result, f"lore loaded: {counted(count, 'entry')} from {args.directory}")
    return admin_io.OK


HANDLERS: dict[str, admin_io.Handler] = {
    "inspect": inspect,
    "export": export,
    "forget": forget,
    "correct": correct,
    "lore": lore_load,
}
