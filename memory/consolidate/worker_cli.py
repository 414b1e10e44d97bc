"""The command line of the consolidation workers: ``python -m memory.worker``.

``--until-empty`` runs the due jobs and exits (burst); ``--check`` is the docker-compose
healthcheck (exit 0 when a worker of this host heart-beat within the lease). The handlers come
from the composition root (``memory.runtime.lifespan(settings, role="worker")``).

SIGINT, SIGTERM and SIGHUP stop it cleanly (``memory.stopping``): no new job is claimed, the
running ones get ``LIVEMEMORY_WORKER__SHUTDOWN_GRACE_SECONDS`` and the rest are given back; exit
code 0. A second signal exits at once.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
from typing import TYPE_CHECKING

from memory import errors, logs, runtime, stopping
from memory.adapters import pg_embedded, postgres
from memory.consolidate import jobs, worker

if TYPE_CHECKING:
    from config.settings import Settings


async def _check(settings: Settings, name_prefix: str) -> int:
    async with postgres.open_database(settings) as db:
        live = await jobs.live_workers(db, settings.worker.lease_seconds, name_prefix)
    for row in live:
        print(f"{row['name']} (id {row['id']}): last heartbeat {row['last_heartbeat']:%H:%M:%S}")
    if not live:
        print(f"no live worker named {name_prefix}…", file=sys.stderr)
    return 0 if live else 1


async def _serve(args: argparse.Namespace, settings: Settings) -> int:
    with stopping.watch() as stop:
        async with runtime.lifespan(settings, role="worker") as svc:
            if not svc.job_handlers:
                raise errors.ConfigurationError("no job handlers are configured")
            runner = worker.Worker(
                svc.db, settings, svc.job_handlers, name=args.name, concurrency=args.concurrency
            )
            if args.until_empty:
                counts = await runner.run_until_empty(stop)
                print(" ".join(f"{outcome}={n}" for outcome, n in counts.items()))
                return 0
            await runner.run(stop)
    return 0


def main(argv: list[str] | None = None, settings: Settings | None = None) -> int:
    """``python -m memory.worker [--until-empty] [--concurrency N] [--name NAME] [--check]``."""
    parser = argparse.ArgumentParser(
        prog="python -m memory.worker", description=(worker.__doc__ or "").split("\n")[0]
    )
    parser.add_argument(
        "--until-empty", action="store_true", help="stop when no job is runnable now"
    )
    parser.add_argument("--concurrency", type=int, default=None, help="jobs run at once")
    parser.add_argument("--name", default=None, help="worker name (default host-pid-n)")
    parser.add_argument(
        "--check",
        action="store_true",
        help="healthcheck: exit 0 when a worker named NAME… (default: this host's) heart-beats",
    )
    parser.add_argument(
        "--log-format", choices=["text", "json"], help="default LIVEMEMORY_LOG_FORMAT"
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        help="serve Prometheus /metrics on this port (default LIVEMEMORY_METRICS_PORT)",
    )
    args = parser.parse_args(argv)
    if args.concurrency is not None and args.concurrency < 1:
        parser.error("--concurrency must be at least 1")
    if settings is None:
        from config import settings as settings_module

        try:
            settings = settings_module.load_or_exit()
        except SystemExit as exc:
            return int(exc.code or 2)
    logs.configure(settings.log_level, args.log_format or settings.log_format)
    if args.metrics_port is not None:
        settings = settings.model_copy(update={"metrics_port": args.metrics_port})
    pg_embedded.EXITING = "this worker"
    try:
        if args.check:
            return stopping.run(_check(settings, args.name or f"{socket.gethostname()}-"))
        with stopping.handling():
            return asyncio.run(_serve(args, settings))
    except errors.MemoryServiceError as exc:
        print(f"memory.worker: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return stopping.EXIT_INTERRUPTED
