"""Admin subcommands on the channel: list viewers and streams, pause/resume, the job queue, audit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memory import errors, identity, sql
from memory.adapters import postgres
from memory.consolidate import queue_status
from memory.ops import admin_io

if TYPE_CHECKING:
    import argparse

    from memory import ports


async def list_viewers(
    db: postgres.Database, spaces: ports.MemorySpaces, search: str | None, limit: int
) -> list[dict[str, Any]]:
    """Viewers (newest seen first) with their message and memory counts (admin, dashboard)."""
    with postgres.wrap_errors("list viewers"):
        rows = await db.pool.fetch(sql.queries["admin_list_viewers"], search, limit)
    return [
        {**dict(row), "memories": await spaces.count(identity.personal_key(row["user_id"]))}
        for row in rows
    ]


async def list_streams(db: postgres.Database, limit: int) -> list[dict[str, Any]]:
    with postgres.wrap_errors("list streams"):
        return [dict(row) for row in await db.pool.fetch(sql.queries["admin_list_streams"], limit)]


async def listing(
    services: admin_io.AdminServices, args: argparse.Namespace, io: admin_io.Io
) -> int:
    if args.what == "viewers":
        rows = await list_viewers(services.db, services.ops.spaces, args.search, args.limit)
        lines = [
            f"{r['login']:<24} {r['user_id']:<12} messages {r['messages']:<6} "
            f"memories {r['memories']:<5} last seen {r['last_seen']:%Y-%m-%d %H:%M}"
            for r in rows
        ]
    else:
        rows = await list_streams(services.db, args.limit)
        lines = [
            f"{r['id']:<32} messages {r['messages']:<6} turns {r['turns']:<5}"
            + (" paused" if r["paused"] else "")
            + (" quiet" if r["quiet"] else "")
            for r in rows
        ]
    io.result(rows, "\n".join(lines) if lines else f"no {args.what}")
    return admin_io.OK


async def pause_or_resume(
    services: admin_io.AdminServices, args: argparse.Namespace, io: admin_io.Io
) -> int:
    ops, command = services.ops, args.command
    with postgres.wrap_errors("read stream"):
        known = await services.db.pool.fetchval(sql.queries["admin_stream_known"], args.stream)
    if not known and command == "pause":
        raise errors.TranscriptError(
            f"unknown stream {args.stream!r} (python -m memory.admin list streams shows them)"
        )
    method = ops.pause if command == "pause" else ops.resume
    changed = await method(args.stream, actor=args.actor)
    io.result(
        {"stream": args.stream, "action": command, "changed": changed},
        f"stream {args.stream}: {command}d" + ("" if changed else " (no change)"),
    )
    return admin_io.OK


async def jobs(services: admin_io.AdminServices, args: argparse.Namespace, io: admin_io.Io) -> int:
    db = services.db
    if args.action == "retry":
        if args.job_id is None:
            raise errors.ConfigurationError(
                "jobs retry needs a job id (python -m memory.admin jobs)"
            )
        await queue_status.retry(db, args.job_id)
        await services.ops.audit(args.actor, "job_retry", str(args.job_id), {})
        io.result({"retried": args.job_id}, f"job {args.job_id}: queued again")
        return admin_io.OK
    state = await queue_status.status(db)
    listed = await queue_status.listed(db, args.status, args.limit)
    oldest = state.oldest_todo_seconds
    lines = [
        " ".join(f"{name}={n}" for name, n in state.counts.items()),
        f"oldest runnable job waits {oldest:.1f} s" if oldest is not None else "nothing waits",
    ]
    for job in listed:
        lines.append(
            f"{job.id:>6} {job.kind} {job.dedupe_key} {job.status} "
            f"attempts {job.attempts}/{job.max_attempts}: {job.last_error or ''}"
        )
    io.result({**state.to_json(), args.status: [j.to_json() for j in listed]}, "\n".join(lines))
    return admin_io.OK


async def audit(services: admin_io.AdminServices, args: argparse.Namespace, io: admin_io.Io) -> int:
    rows = await services.ops.audit_log(args.limit)
    lines = [f"{r['at']:%Y-%m-%d %H:%M:%S} {r['actor']} {r['action']} {r['target']}" for r in rows]
    if io.as_json:
        io.json(rows)
    else:
        io.out("\n".join(lines) if lines else "no audit rows")
    return admin_io.OK


HANDLERS: dict[str, admin_io.Handler] = {
    "list": listing,
    "pause": pause_or_resume,
    "resume": pause_or_resume,
    "jobs": jobs,
    "audit": audit,
}
