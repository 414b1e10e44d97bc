"""``python -m bot run | replay FILE | console | web | import FILE`` — the bot's entry points.

``run`` and ``console`` host the admin endpoint ``python -m memory.admin`` forwards to, and with
``--web`` the dashboard (``bot.hosting``).

SIGINT, SIGTERM and SIGHUP stop every command as ``/quit`` stops the console, with exit code 0; a
second signal exits at once (``memory.stopping``).

Settings are loaded once here and passed down. Expected errors (a service down, a malformed
transcript line, Ollama not running) print one clear line and exit non-zero, without a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from bot import errors as bot_errors
from config import settings as settings_module
from memory import errors, identity, logs, stopping
from memory.adapters import pg_embedded
from memory.history import chatlogs
from memory.ops import control
from memory.ops.wording import counted

if TYPE_CHECKING:
    from memory import runtime as services_module

EXIT_ERROR = 1
EXIT_USAGE = 2
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
#: the console's log file, in ``<data dir>/logs``
CONSOLE_LOG = "console.log"


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="python -m bot", description=__doc__.splitlines()[0])
    root.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        type=str.upper,
        help="default LIVEMEMORY_LOG_LEVEL; the console shows WARNING and above on the terminal "
        "(everything in <data dir>/logs/console.log) unless this is given",
    )
    root.add_argument(
        "--log-format",
        choices=["text", "json"],
        help="text (timestamped lines) or json (one object a line); default LIVEMEMORY_LOG_FORMAT",
    )
    sub = root.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the Twitch bot")
    run.add_argument(
        "--no-llm",
        action="store_true",
        help="memory-only bot: no model, chat commands still answered (LIVEMEMORY_OLLAMA__ENABLED=false)",
    )
    _web_flag(run)
    sub.add_parser("web", help="serve the memory dashboard on its own (deployments with servers)")
    importer = sub.add_parser(
        "import", help="backfill memory from a past chat log (no replies; resumable)"
    )
    importer.add_argument("file", type=Path)
    importer.add_argument("--format", choices=["auto", *chatlogs.FORMATS], default="auto")
    importer.add_argument("--stream", help="stream session id (default: from the file)")
    replay = sub.add_parser(
        "replay", help="feed a chat transcript (JSON Lines) through the pipeline"
    )
    replay.add_argument("file", type=Path)
    replay.add_argument(
        "--format",
        choices=["auto", *chatlogs.FORMATS],
        default="jsonl",
        help="jsonl (default), twitchdownloader, chat-downloader, irc, or auto",
    )
    replay.add_argument("--json", action="store_true", help="one JSON turn report a line")
    replay.add_argument("--no-llm", action="store_true", help="everything but the model call")
    replay.add_argument(
        "--sync-consolidation",
        action="store_true",
        help="finish each turn's consolidation before the next batch (deterministic)",
    )
    console = sub.add_parser("console", help="type chat as several viewers and see the replies")
    console.add_argument("--no-llm", action="store_true", help="everything but the model call")
    console.add_argument(  # here too, so that ``console --log-level INFO`` works
        "--log-level",
        choices=LOG_LEVELS,
        type=str.upper,
        default=argparse.SUPPRESS,
        help="show log lines of this level and above on the terminal too (default: WARNING)",
    )
    _web_flag(console)
    return root


def _web_flag(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--web",
        action="store_true",
        help="also serve the memory dashboard in this process on LIVEMEMORY_WEB__HOST:PORT "
        "(LIVEMEMORY_WEB__IN_BOT=true)",
    )


async def _check_model(services: services_module.Services) -> None:
    if services.model is not None:
        await services.model.check()


async def _main(args: argparse.Namespace, settings: settings_module.Settings) -> int:
    with stopping.watch() as stop:
        return await _command(args, settings, stop)


async def _command(
    args: argparse.Namespace, settings: settings_module.Settings, stop: asyncio.Event
) -> int:
    """Run the command until it ends or ``stop`` (a signal) asks it to stop, the way it stops on
    its own: 0 either way."""
    from bot import hosting, replay
    from memory import runtime as services_module

    if args.command == "run":
        from bot.twitch import run as twitch_run

        return await twitch_run.main(settings, no_llm=args.no_llm, web=args.web, stop=stop)
    if args.command == "web":
        from bot.web import serve

        return await serve.main(settings, stop=stop)
    if args.command in ("replay", "import") and not args.file.is_file():
        what = "transcript file" if args.command == "replay" else "chat log"
        print(f"error: no such {what}: {args.file}", file=sys.stderr)
        return EXIT_ERROR
    await hosting.refuse_second_bot(settings)  # before anything else is said or opened
    if args.command == "import":
        return await _import(args, settings, stop)
    if args.command == "console":
        return await _console(args, settings, stop)
    settings = default_bot_login(settings)
    # a replay runs consolidation itself (after each turn with --sync-consolidation, else at the end)
    async with services_module.lifespan(
        settings, no_llm=args.no_llm, background_worker=False
    ) as services:
        await _check_model(services)
        await replay.replay(
            services,
            args.file,
            as_json=args.json,
            fmt=args.format,
            no_llm=args.no_llm,
            sync_consolidation=args.sync_consolidation,
            commands=services.commands,
            stop=stop,
        )
    return 0


async def _console(
    args: argparse.Namespace, settings: settings_module.Settings, stop: asyncio.Event
) -> int:
    """The console bot, with the admin endpoint (and with ``--web`` the dashboard) beside it."""
    from bot import console, hosting
    from memory import runtime as services_module

    settings = default_bot_login(settings)
    async with services_module.lifespan(settings, no_llm=args.no_llm) as services:
        await _check_model(services)
        async with hosting.hosting(settings, services, web=args.web):
            await console.console(
                services, no_llm=args.no_llm, commands=services.commands, stop=stop
            )
    return 0


def default_bot_login(settings: settings_module.Settings) -> settings_module.Settings:
    """Console and replays: with ``LIVEMEMORY_BOT_LOGIN`` unset, the bot login is the persona
    name lowercased (said in one line at start)."""
    if settings.bot_login:
        return settings
    login = identity.normalize_login(settings.bot_name)
    print(
        f"bot login @{login} (the persona name; LIVEMEMORY_BOT_LOGIN sets another)",
        file=sys.stderr,
    )
    return settings.model_copy(update={"bot_login": login})


async def _import(
    args: argparse.Namespace, settings: settings_module.Settings, stop: asyncio.Event
) -> int:
    from bot import importer
    from memory import runtime as services_module

    async with services_module.lifespan(settings, no_llm=True, background_worker=False) as services:
        report = await importer.import_log(
            services, args.file, fmt=args.format, stream=args.stream, stop=stop
        )
    into = ", ".join(report.streams) or "no stream"
    if report.stopped:
        print(
            f"import stopped ({stopping.requested()}) after {counted(report.done, 'message')} of "
            f"{report.messages}: run the same command again to go on"
        )
        return 0
    print(
        f"imported {counted(report.messages, 'message')} into {into}: "
        f"{counted(report.turns, 'turn')}, skipped {report.skipped} already answered"
    )
    return 0


def configure_logging(args: argparse.Namespace, settings: settings_module.Settings) -> None:
    """The log of the process; the console's terminal is for chat and turn reports: its log goes
    to ``<data dir>/logs/console.log``, the terminal shows WARNING and above (``--log-level``
    sets both)."""
    level = args.log_level or settings.log_level
    fmt = args.log_format or settings.log_format
    if args.command == "console":
        file = settings.data_dir / "logs" / CONSOLE_LOG
        logs.configure(level, fmt, file=file, terminal_level=args.log_level or "WARNING")
    else:
        logs.configure(level, fmt)


#: what each command is, in the line of an embedded Postgres it adopted (``pg_embedded.EXITING``)
EXITING = {"replay": "this replay", "import": "this import", "web": "this dashboard"}
#: the commands whose stores open first thing (``run`` checks the Twitch credentials before)
OPENS_STORES = ("console", "replay", "import")


def start_early(args: argparse.Namespace, settings: settings_module.Settings) -> None:
    """The process entry's head start: the embedded Postgres starts in a thread while the rest
    imports (``pg_embedded.start_early``: 0.2-0.35 s of each start-up), then what the imports
    built is frozen out of the collector's walks, during the run and in the collections of its
    exit (0.2 s of each start-up, measured)."""
    wanted = args.command in OPENS_STORES and settings.database_url is None
    if args.command in ("replay", "import") and not args.file.is_file():
        wanted = False  # refused at once
    if control.path(settings.data_dir).exists():
        wanted = False  # a bot may hold the folder: refused first, nothing said or opened before
    if wanted:
        pg_embedded.start_early(settings.data_dir)
    from memory import runtime  # noqa: F401  (the heavy imports, while Postgres starts)

    gc.freeze()


def main(argv: list[str] | None = None, *, entry: bool = False) -> int:
    """``entry``: the process entry (``python -m bot``): ``start_early`` once the settings load."""
    args = parser().parse_args(argv)
    try:
        settings = settings_module.load_or_exit()
    except SystemExit as exc:
        return int(exc.code or EXIT_USAGE)
    configure_logging(args, settings)
    # what the line of an adopted embedded Postgres says will stop it ("… when this bot exits")
    pg_embedded.EXITING = EXITING.get(args.command, "this bot")
    with stopping.handling():
        if entry:
            start_early(args, settings)
        try:
            return asyncio.run(_main(args, settings))
        except (errors.MemoryServiceError, bot_errors.BotError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_ERROR
        except KeyboardInterrupt:  # the signals are handled: only a KeyboardInterrupt raised
            return 130


if __name__ == "__main__":
    sys.exit(main(entry=True))
