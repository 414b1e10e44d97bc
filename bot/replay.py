"""``python -m bot replay FILE``: feed a chat transcript through the full pipeline."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING

from bot import output
from memory import session, stopping
from memory.history import chatlogs
from memory.ops.wording import counted

if TYPE_CHECKING:
    import asyncio
    from pathlib import Path

    from memory import models, ports
    from memory import runtime as services_module

logger = logging.getLogger(__name__)


async def replay(
    services: services_module.Services,
    path: Path,
    *,
    as_json: bool,
    no_llm: bool,
    fmt: str = "jsonl",
    sync_consolidation: bool,
    commands: ports.CommandHandler | None = None,
    stop: asyncio.Event | None = None,
) -> int:
    """Replay ``path``; returns how many turns ran. A malformed line raises after the lines before
    it were answered (nothing already ingested is lost). ``stop`` (a signal) ends it after the
    line being fed: what was stored stays, the same command run again goes on from there (the
    lines already answered are skipped, the consolidation left in the queue runs at its end)."""
    turns = 0
    fed = 0

    async def deliver(report: models.TurnReport) -> None:
        nonlocal turns
        turns += 1
        if as_json:
            output.json_line(report)
        else:
            output.human(report, no_llm=no_llm)

    runner = session.Replay(
        services, deliver, commands=commands, sync_consolidation=sync_consolidation
    )
    stopped = False
    try:
        for event in chatlogs.read(path, fmt, prefix=services.settings.twitch.prefix):
            if stop is not None and stop.is_set():
                stopped = True
                break
            await runner.feed(event)
            fed += 1
    finally:
        if not stopped:
            await runner.finish()
            await runner.consolidate_now()
        else:
            print(
                f"replay stopped ({stopping.requested()}) after {counted(fed, 'message')}: "
                "run the same command again to go on",
                file=sys.stderr,
            )
        if runner.skipped:
            print(
                f"{counted(runner.skipped, 'message')} already answered in this data folder: skipped",
                file=sys.stderr,
            )
    return turns
