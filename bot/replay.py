"""``python -m bot replay FILE``: feed a chat transcript through the full pipeline."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING

from bot import output
from memory import session
from memory.history import chatlogs

if TYPE_CHECKING:
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
) -> int:
    """Replay ``path``; returns how many turns ran. A malformed line raises after the lines before
    it were answered (nothing already ingested is lost)."""
    turns = 0

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
    try:
        for event in chatlogs.read(path, fmt, prefix=services.settings.twitch.prefix):
            await runner.feed(event)
    finally:
        await runner.finish()
        await runner.consolidate_now()
        if runner.skipped:
            print(
                f"{runner.skipped} message(s) were already answered in this data folder: skipped",
                file=sys.stderr,
            )
    return turns
