"""``python -m memory.admin reembed``: rebuild memory collections with the configured embedder.

What it rebuilds: by default the collections whose vectors another embedder made, or that predate
hybrid search (dense-only); ``--force`` rebuilds current ones too (an Ollama model pulled again under
the same name). It re-embeds the memories as stored — same ids, texts, provenance and corrections —
rather than re-running the language model over the transcript, which would write different memories
and lose the moderators' corrections and forgets. How a rebuild is made safe to interrupt and
resumed: ``memory.adapters.qdrant_reembed``. Progress bars (the embedding, then each collection's
swap) go to stderr when it is a terminal, and a line while the embedded store is written out.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from memory import errors, identity
from memory.adapters import qdrant_reembed
from memory.ops import admin_io, admin_memory
from memory.ops.wording import counted
from memory.spaces import embedders
from memory.spaces import store as spaces_module

if TYPE_CHECKING:
    import argparse

REASONS = {
    "embedder": "vectors of {made_by}",
    "dense-only": "dense-only (predates hybrid search)",
    "forced": "current; --force",
    "unfinished": "interrupted run: continuing",
}


async def _spaces(services: admin_io.AdminServices, args: argparse.Namespace) -> list[str] | None:
    if args.all:
        return None
    if args.space:
        spaces_module.space_kind(args.space)  # errors.InvalidMemory for a bad key
        return [args.space]
    viewer = await admin_memory.viewer_of(services.ops, args)
    return [identity.personal_key(viewer.user_id)]


def _describe(task: qdrant_reembed.Task) -> str:
    reason = REASONS[task.reason].format(made_by=task.made_by or "an unknown embedder")
    if task.swapping:
        return f"  {task.collection}: {counted(task.memories, 'memory')} embedded, swapping in ({reason})"
    done = f", {task.done} already done" if task.done else ""
    return f"  {task.collection}: {counted(task.memories, 'memory')}{done} ({reason})"


async def reembed(
    services: admin_io.AdminServices, args: argparse.Namespace, io: admin_io.Io
) -> int:
    if args.limit is not None and args.limit < 1:
        raise errors.ConfigurationError("--limit must be at least 1")
    settings = services.settings
    spaces = await _spaces(services, args)
    embedder = await embedders.build_embedder(settings)
    async with qdrant_reembed.open_reembedder(settings, embedder) as job:
        tasks = await job.plan(spaces, force=args.force)
        todo = sum(task.remaining for task in tasks)
        plan: dict[str, Any] = {
            "embedder": embedder.name,
            "dim": embedder.dim,
            "collections": [task.to_json() for task in tasks],
            "memories": todo,
        }
        if not tasks:
            pending = [] if args.dry_run else await job.finish()
            io.result(
                {**plan, "dry_run": args.dry_run, "embedded": 0, "pending": pending},
                f"nothing to re-embed: the collections are current ({embedder.name})"
                + _pending_note(pending),
            )
            return admin_io.OK
        lines = [
            f"re-embed {counted(len(tasks), 'collection')} with {embedder.name} (dim {embedder.dim}): "
            f"{counted(todo, 'memory')} to embed",
            *(_describe(task) for task in tasks),
        ]
        if (stop := await admin_io.confirm(io, args, plan, lines)) is not None:
            return stop
        code = await _run(services, args, io, job, tasks, plan)
        if settings.qdrant_url is None and io.stderr.isatty():  # a million memories: minutes
            io.err("writing the embedded store to disk…")
    return code


async def _run(
    services: admin_io.AdminServices,
    args: argparse.Namespace,
    io: admin_io.Io,
    job: qdrant_reembed.Reembedder,
    tasks: list[qdrant_reembed.Task],
    plan: dict[str, Any],
) -> int:
    embedded, rebuilt = 0, []
    bar = tqdm(
        total=plan["memories"], unit="memory", desc="re-embedding", file=io.stderr, disable=None
    )
    swaps: list[tqdm[Any]] = []

    def advance(task: qdrant_reembed.Task, phase: str, count: int) -> None:
        if phase == "embed":
            bar.update(count)
            return
        if not swaps:  # copying back a large collection takes minutes too
            desc = f"swapping in {task.collection}"
            swaps.append(
                tqdm(total=task.memories, unit="memory", desc=desc, file=io.stderr, disable=None)
            )
        swaps[-1].update(count)

    try:
        try:
            for task in tasks:
                budget = None if args.limit is None else args.limit - embedded
                try:
                    on_batch = functools.partial(advance, task)
                    count, finished = await job.run(task, on_batch=on_batch, budget=budget)
                finally:
                    while swaps:
                        swaps.pop().close()
                embedded += count
                if not finished:
                    break
                rebuilt.append(task.collection)
        finally:  # also on Ctrl-C: the bar ends its line before what is said next
            bar.close()
    except errors.MemoryServiceError as exc:
        io.err(f"error: {exc}")
        io.err(
            f"stopped after {counted(embedded, 'memory')}; nothing is lost: run the same command again to "
            "continue where it stopped"
        )
        return admin_io.REFUSED
    pending = await job.finish()
    complete = len(rebuilt) == len(tasks)
    target = "all" if args.all else (args.space or f"viewer {args.viewer or args.user_id}")
    details = {"embedder": plan["embedder"], "rebuilt": rebuilt, "embedded": embedded}
    await services.ops.audit(args.actor, "reembed", target, details | {"complete": complete})
    result = {**plan, "embedded": embedded, "rebuilt": rebuilt, "complete": complete}
    text = f"re-embedded {counted(embedded, 'memory')}: {len(rebuilt)} of {counted(len(tasks), 'collection')} rebuilt"
    if not complete:
        text += f" (--limit {args.limit} reached: run the same command again to continue)"
    io.result({**result, "pending": pending}, text + _pending_note(pending))
    return admin_io.OK


def _pending_note(pending: list[str]) -> str:
    if not pending:
        return ""
    return (
        f"\n{counted(len(pending), 'collection')} still to re-embed (e.g. {pending[0]}): "
        f"`{spaces_module.REEMBED_COMMAND}` does them all"
    )


async def migrate_qdrant(
    services: admin_io.AdminServices, args: argparse.Namespace, io: admin_io.Io
) -> int:
    """Move an older release's embedded store (qdrant-client local mode) into Qdrant Edge (what
    the first start does too: ``memory.adapters.qdrant_migrate``)."""
    from memory.adapters import qdrant_migrate

    report = await qdrant_migrate.migrate(
        services.settings, keep_old=args.keep_old, progress=io.stderr
    )
    if report is None:
        io.result({"migrated": False}, "nothing to migrate: no embedded store of an older release")
        return admin_io.OK
    result = {
        "migrated": True,
        "collections": report.collections,
        "memories": report.memories,
        "copied": report.copied,
        "spaces": len(report.ids),
    }
    io.result(
        result,
        f"migrated {counted(report.memories, 'memory')} of {counted(len(report.ids), 'space')} into Qdrant Edge "
        f"({report.copied} copied now)",
    )
    return admin_io.OK


HANDLERS: dict[str, admin_io.Handler] = {"reembed": reembed, "migrate-qdrant": migrate_qdrant}
