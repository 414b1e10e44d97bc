"""``python -m memory.admin``: inspect, export, forget and correct memories; load lore; pause.

    python -m memory.admin inspect --viewer LOGIN [--json]
    python -m memory.admin export --viewer LOGIN
    python -m memory.admin forget --memory-id ID | --turn TURN_ID | --viewer LOGIN [--yes] [--everywhere]
    python -m memory.admin correct --memory-id ID --text "…"
    python -m memory.admin lore load DIR
    python -m memory.admin pause --stream S | resume --stream S
    python -m memory.admin audit [--limit N]

An unknown viewer, memory or turn prints one line on stderr and exits with code 1, changing nothing.
The caches of the running bot are invalidated through Redis when ``REDIS_URL`` is set (without Redis
the bot's in-process cache expires on its TTL). Tests call ``await run(argv, settings=...)``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from memory import errors, migrate
from memory.adapters import postgres, qdrant
from memory.consolidate import profile as profile_module
from memory.ops import operations
from memory.recall import retrieval
from memory.spaces import embedders

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    from config.settings import Settings
    from memory.consolidate import consolidation

logger = logging.getLogger(__name__)

ACTOR = "admin:cli"


@dataclass(frozen=True, slots=True, kw_only=True)
class AdminServices:
    db: postgres.Database
    ops: operations.Operations


@contextlib.asynccontextmanager
async def open_services(settings: Settings) -> AsyncIterator[AdminServices]:
    """Postgres, the memory spaces and the cache invalidation the operations need."""
    async with contextlib.AsyncExitStack() as stack:
        db = await stack.enter_async_context(migrate.open_database(settings))
        embedder = await embedders.build_embedder(settings)
        memory_spaces = await qdrant.open_spaces(settings, embedder)
        stack.push_async_callback(memory_spaces.close)
        profiles = profile_module.ProfileStore(db)
        invalidator = await _invalidator(settings, stack, memory_spaces, profiles)
        ops = operations.Operations(db, memory_spaces, invalidator=invalidator, profiles=profiles)
        yield AdminServices(db=db, ops=ops)


async def _invalidator(
    settings: Settings,
    stack: contextlib.AsyncExitStack,
    memory_spaces: Any,
    profiles: profile_module.ProfileStore,
) -> consolidation.CacheInvalidator | None:
    """The retriever's invalidation over the shared Redis cache; None without Redis."""
    if settings.redis_url is None:
        return None
    from memory.adapters import redis as redis_adapter

    cache = redis_adapter.RedisCache.from_url(
        settings.redis_url.get_secret_value(), prefix=f"{settings.redis.key_prefix}cache:"
    )
    stack.push_async_callback(cache.aclose)
    return retrieval.build_retriever(settings, spaces=memory_spaces, profiles=profiles, cache=cache)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m memory.admin", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--actor", default=ACTOR, help="who acts, recorded in the audit (default %(default)s)"
    )
    commands = parser.add_subparsers(dest="command", required=True)

    inspect = commands.add_parser("inspect", help="a viewer's memories with provenance")
    inspect.add_argument("--viewer", required=True, metavar="LOGIN")
    inspect.add_argument("--json", action="store_true")

    export = commands.add_parser("export", help="everything held about a viewer (JSON)")
    export.add_argument("--viewer", required=True, metavar="LOGIN")

    forget = commands.add_parser("forget", help="forget a memory, a turn or a viewer")
    target = forget.add_mutually_exclusive_group(required=True)
    target.add_argument("--memory-id", metavar="ID")
    target.add_argument("--turn", metavar="TURN_ID")
    target.add_argument("--viewer", metavar="LOGIN")
    forget.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    forget.add_argument(
        "--everywhere",
        action="store_true",
        help="also redact the viewer's messages from episodic memory and the served transcript",
    )
    forget.add_argument("--json", action="store_true")

    correct = commands.add_parser("correct", help="replace a memory with a correction")
    correct.add_argument("--memory-id", required=True, metavar="ID")
    correct.add_argument("--text", required=True)
    correct.add_argument("--json", action="store_true")

    lore = commands.add_parser("lore", help="canon of the channel")
    lore_commands = lore.add_subparsers(dest="lore_command", required=True)
    load = lore_commands.add_parser("load", help="replace the lore space with a folder's files")
    load.add_argument("directory", type=Path, metavar="DIR")

    for name in ("pause", "resume"):
        sub = commands.add_parser(name, help=f"{name} memory writing for a stream")
        sub.add_argument("--stream", required=True)

    audit = commands.add_parser("audit", help="the newest audit rows")
    audit.add_argument("--limit", type=int, default=20)
    return parser


class _Io:
    def __init__(self, stdin: TextIO | None, stdout: TextIO | None, stderr: TextIO | None) -> None:
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr

    def out(self, text: str) -> None:
        print(text, file=self.stdout)

    def json(self, data: Any) -> None:
        print(json.dumps(data, ensure_ascii=False, indent=2, default=str), file=self.stdout)

    def ask(self, question: str) -> bool:
        print(question, end=" ", file=self.stderr, flush=True)
        return self.stdin.readline().strip().casefold() in {"y", "yes", "s", "si", "sì"}


async def _inspect(ops: operations.Operations, args: argparse.Namespace, io: _Io) -> int:
    viewer = await ops.resolve_viewer(args.viewer)
    records = await ops.inspect(viewer.user_id)
    if args.json:
        io.json(
            {
                "viewer": {"user_id": viewer.user_id, "login": viewer.login},
                "memories": [operations.record_json(r) for r in records],
            }
        )
        return 0
    io.out(f"{viewer.login} (user {viewer.user_id}): {len(records)} memories")
    for r in records:
        origin = ",".join(r.origin_message_ids)
        io.out(f"{r.id}  [{r.kind.value}]  {r.text}  (turn {r.turn_id}, messages {origin})")
    return 0


async def _forget(ops: operations.Operations, args: argparse.Namespace, io: _Io) -> int:
    if args.memory_id:
        record = await ops.forget_memory(args.memory_id, actor=args.actor)
        result: dict[str, Any] = {"forgot": "memory", "memory_id": record.id, "space": record.space}
    elif args.turn:
        removed = await ops.forget_turn(args.turn, actor=args.actor)
        result = {"forgot": "turn", "turn_id": args.turn, "memories": removed}
    else:
        viewer = await ops.resolve_viewer(args.viewer)
        count = len(await ops.inspect(viewer.user_id))
        scope = " and redact their messages everywhere" if args.everywhere else ""
        question = f"Forget all {count} memories and the profile of {viewer.login}{scope}? [y/N]"
        if not args.yes and not io.ask(question):
            print("aborted: nothing changed", file=io.stderr)
            return 1
        report = await ops.forget_viewer(
            viewer.user_id, actor=args.actor, everywhere=args.everywhere
        )
        result = {"forgot": "viewer", "login": viewer.login, **report.to_json()}
    if args.json:
        io.json(result)
    else:
        io.out(" ".join(f"{key}={value}" for key, value in result.items()))
    return 0


async def _dispatch(ops: operations.Operations, args: argparse.Namespace, io: _Io) -> int:
    command = args.command
    if command == "inspect":
        return await _inspect(ops, args, io)
    if command == "export":
        io.json(await ops.export(await ops.resolve_viewer(args.viewer)))
    elif command == "forget":
        return await _forget(ops, args, io)
    elif command == "correct":
        record = await ops.correct(args.memory_id, args.text, actor=args.actor)
        if args.json:
            io.json(operations.record_json(record))
        else:
            io.out(f"corrected {args.memory_id}: new memory {record.id}")
    elif command == "lore":
        count = await ops.load_lore(args.directory, actor=args.actor)
        io.out(f"lore loaded: {count} entries from {args.directory}")
    elif command in {"pause", "resume"}:
        method = ops.pause if command == "pause" else ops.resume
        changed = await method(args.stream, actor=args.actor)
        io.out(f"stream {args.stream}: {command}d" + ("" if changed else " (no change)"))
    elif command == "audit":
        io.json(await ops.audit_log(args.limit))
    return 0


async def run(
    argv: Sequence[str] | None = None,
    *,
    settings: Settings | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run one admin command; returns the exit code (0 ok, 1 refused/unknown, 2 usage)."""
    io = _Io(stdin, stdout, stderr)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if settings is None:
        from config import settings as settings_module

        settings = settings_module.Settings()
    try:
        async with open_services(settings) as services:
            return await _dispatch(services.ops, args, io)
    except errors.MemoryServiceError as exc:
        print(f"error: {exc}", file=io.stderr)
        return 1


def main(argv: Sequence[str] | None = None, *, settings: Settings | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    return asyncio.run(run(argv, settings=settings))


if __name__ == "__main__":
    sys.exit(main())
