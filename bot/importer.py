"""``python -m bot import FILE [--format F] [--stream ID]``: backfill memory from a past chat log.

The log goes through the same path as a replay (transcript → batches → turns → consolidation) with
no model and no chat commands run: nothing is answered or sent, the turns are journaled and
consolidated into memory. A progress line goes to stderr. An import that stopped half-way is run
again with the same command: messages already answered are skipped, unfinished turns run again, and
the consolidation jobs left in the queue run at the end.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from memory import session
from memory.history import chatlogs

if TYPE_CHECKING:
    import asyncio
    from pathlib import Path

    from memory import models
    from memory import runtime as services_module

#: seconds between two progress lines
PROGRESS_SECONDS = 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportReport:
    messages: int
    #: already answered in this data folder (an earlier run of the same import)
    skipped: int
    turns: int
    streams: tuple[str, ...]
    #: messages fed (all of them, unless stopped)
    done: int = 0
    #: stopped by a signal before the end: run it again to go on
    stopped: bool = False


class Progress:
    """``import: 1200/5000 messages (24%)`` on one rewritten stderr line, at most once a second."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self._last = 0.0
        self._tty = self.stream.isatty()

    def update(self, done: int, *, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self._last < PROGRESS_SECONDS:
            return
        self._last = now
        percent = 100 * done // self.total if self.total else 100
        line = f"import: {done}/{self.total} messages ({percent}%)"
        end = "\n" if final or not self._tty else ""
        print(("\r" if self._tty else "") + line, end=end, file=self.stream, flush=True)


async def import_log(
    services: services_module.Services,
    path: Path,
    *,
    fmt: str = "auto",
    stream: str | None = None,
    progress: TextIO | None = None,
    stop: asyncio.Event | None = None,
) -> ImportReport:
    """Backfill memory from ``path``; see the module docstring. ``stop`` (a signal) ends it after
    the message being fed, the rest left for the same command run again."""
    events = list(chatlogs.read(path, fmt, stream=stream, prefix=services.settings.twitch.prefix))
    turns = 0

    async def count(_report: models.TurnReport) -> None:
        nonlocal turns
        turns += 1

    runner = session.Replay(services, count, commands=None)
    bar = Progress(len(events), progress)
    done = 0
    stopped = False
    try:
        for event in events:
            if stop is not None and stop.is_set():
                stopped = True
                break
            await runner.feed(event)
            done += 1
            bar.update(done)
    finally:
        if not stopped:
            await runner.finish()
            await runner.consolidate_now()
    bar.update(done, final=True)
    return ImportReport(
        messages=len(events),
        skipped=runner.skipped,
        turns=turns,
        streams=tuple(dict.fromkeys(e.stream for e in events)),
        done=done,
        stopped=stopped,
    )
