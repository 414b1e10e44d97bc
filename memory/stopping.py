"""How a process of ours stops on a signal: every stop is a clean stop.

SIGINT (Ctrl-C), SIGTERM (``kill``, ``docker stop``, systemd) and SIGHUP (the terminal window
closed) ask for the stop the process makes on its own (the console's ``/quit``): it stops taking
chat or work, lets what is in flight end within a bounded time, closes its stores, removes its
control file, and the embedded Postgres stops unless another live process of the data folder uses
it (``memory.adapters.pg_embedded``). The exit code is 0: the stop was asked for.

A second signal while it stops exits at once, with code 128 + the signal's number: the control
file is removed, the embedded Postgres is sent its fast shutdown when no other process uses it,
then ``os._exit``. Nothing stored is lost: the transcript, the job queue and the ingest spool are
committed when stored, and Qdrant Edge replays its write-ahead log at the next start.

After a SIGHUP the terminal is gone: what the process still writes to it goes to ``/dev/null``
instead of failing (a hung-up terminal answers writes with EIO). A signal the process was started
with ignored stays ignored: ``nohup python -m bot run`` outlives its terminal, as ``nohup`` means.

``handling()`` takes the three signals around an entry point's run (the main thread, before the
event loop starts); ``watch()`` in the event loop gives the ``asyncio.Event`` the first signal sets
(a signal that came before is seen at once). ``run()`` is a command's ``asyncio.run``: there each
of the three interrupts the command as Ctrl-C does; ``run_interrupted()`` runs a development
script's coroutine so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import stat
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from memory.adapters import pg_embedded

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Iterator

logger = logging.getLogger(__name__)

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass
class _State:
    received: list[int] = field(default_factory=list)
    loop: asyncio.AbstractEventLoop | None = None
    event: asyncio.Event | None = None
    last_words: list[Callable[[], None]] = field(default_factory=list)


_state = _State()


def name(signum: int) -> str:
    return signal.Signals(signum).name


def requested() -> str | None:
    """The name of the signal that asked for the stop, or None."""
    return name(_state.received[0]) if _state.received else None


@contextlib.contextmanager
def handling() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP handled as the module says while the block runs (in the main
    thread; elsewhere, or where signals cannot be taken, the block runs as it is)."""
    global _state
    _state = _State()
    previous: dict[int, Any] = {}
    with contextlib.suppress(ValueError):  # not the main thread
        for signum in SIGNALS:
            if signal.getsignal(signum) == signal.SIG_IGN:
                continue  # ignored when started (``nohup``, a shell's background job): it stays so
            previous[signum] = signal.signal(signum, _handle)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


@contextlib.contextmanager
def watch() -> Iterator[asyncio.Event]:
    """The event a first signal sets while the block runs (set at once when one came before)."""
    loop = asyncio.get_running_loop()
    event = asyncio.Event()
    if _state.received:
        event.set()
    _state.loop, _state.event = loop, event
    try:
        yield event
    finally:
        _state.loop = _state.event = None


@contextlib.contextmanager
def last_words(callback: Callable[[], None]) -> Iterator[None]:
    """``callback`` runs before a forced exit (a second signal) while the block runs: what must
    not be left behind, done at once (the control file's removal)."""
    _state.last_words.append(callback)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            _state.last_words.remove(callback)


def _handle(signum: int, _frame: object) -> None:
    _state.received.append(signum)
    if signum == signal.SIGHUP:
        _detach_terminal()
    if len(_state.received) > 1:
        _exit_now(signum)
    loop, event = _state.loop, _state.event
    if loop is None or event is None:  # starting (``watch`` sees it) or stopping already
        logger.info("%s: stopping (a second signal exits at once)", name(signum))
        return
    loop.call_soon_threadsafe(_stop_requested, signum, event)


def _stop_requested(signum: int, event: asyncio.Event) -> None:
    logger.info("%s: stopping (a second signal exits at once)", name(signum))
    event.set()


def _exit_now(signum: int) -> None:
    with contextlib.suppress(OSError):
        os.write(2, f"{name(signum)} again: exiting at once\n".encode())
    for callback in reversed(_state.last_words):
        with contextlib.suppress(Exception):
            callback()
    with contextlib.suppress(Exception):
        pg_embedded.release_now()
    os._exit(128 + signum)


def _detach_terminal() -> None:
    """Standard output and error to ``/dev/null`` where they were a terminal (it is gone)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    try:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                fd = stream.fileno()
                if stat.S_ISCHR(os.fstat(fd).st_mode):
                    os.dup2(null, fd)
    finally:
        os.close(null)


T = TypeVar("T")

#: the exit code of a command that a signal interrupted under ``run`` (as a shell reports SIGINT)
EXIT_INTERRUPTED = 130


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` for a command (the admin command, a migration, an evaluation):
    SIGINT (Ctrl-C), SIGTERM and SIGHUP cancel ``main``, so what it opened closes as it does on
    an error (its stores; an evaluation's temporary data folders and their embedded Postgres:
    ``memory.eval.harness.temporary_data_dir``), then ``KeyboardInterrupt`` is raised: the
    command says so in one line and exits with ``EXIT_INTERRUPTED``. A second signal raises
    ``KeyboardInterrupt`` at once, wherever the code is (a busy loop does not wait for a cancel).

    The event loop makes the cancel (``call_soon_threadsafe``), not the signal handler: Python
    calls a handler between two lines of whatever runs, and asyncio.run's own SIGINT handler
    cancelled the main task there, once between the two lines of asyncio that hand a thread's
    result to the awaiting future (``loop.run_in_executor``), which then logged
    "InvalidStateError" with a traceback. A signal ignored when the process started stays
    ignored (SIGINT in a shell's background job, ``cmd &``: SIGTERM still interrupts it)."""
    received: list[int] = []
    task: asyncio.Task[T] | None = None

    async def tracked() -> T:
        nonlocal task
        task = asyncio.current_task()
        return await main

    def interrupt(signum: int, _frame: object) -> None:
        if signum == signal.SIGHUP:
            _detach_terminal()
        received.append(signum)
        if len(received) > 1 or task is None or task.done():
            raise KeyboardInterrupt
        task.get_loop().call_soon_threadsafe(task.cancel)

    previous: dict[int, Any] = {}
    with contextlib.suppress(ValueError):  # not the main thread: asyncio.run's own handling
        for signum in SIGNALS:
            if signal.getsignal(signum) != signal.SIG_IGN:
                previous[signum] = signal.signal(signum, interrupt)
    try:
        return asyncio.run(tracked())
    except asyncio.CancelledError:
        if received:
            raise KeyboardInterrupt from None
        raise
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def run_interrupted(main: Coroutine[Any, Any, T]) -> T:
    """``run(main)`` for a development script (``scripts/``): interrupted, it exits with
    ``EXIT_INTERRUPTED`` after one line, without a traceback."""
    try:
        return run(main)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        raise SystemExit(EXIT_INTERRUPTED) from None
