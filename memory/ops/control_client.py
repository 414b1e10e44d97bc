"""``python -m memory.admin`` forwarded to the bot that holds the data folder.

When ``<data_dir>/control.json`` names a live bot, the admin command sends its arguments to the bot's
admin endpoint, which runs the same command handler against its own open stores and streams back
what it writes, its questions and its exit code (``memory.ops.control``). A control file whose bot
is gone (no such process, or nothing answers at its address) is stale: it is removed, with a note,
and the command opens the stores itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from memory.ops import admin_io, control

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

logger = logging.getLogger(__name__)

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def _connect(held: control.Control) -> Streams | None:
    """The bot's admin endpoint, or None when its bot is gone."""
    if not control.pid_alive(held.pid):
        return None
    try:
        return await asyncio.open_connection(held.host, held.port, limit=control.LINE_LIMIT)
    except OSError:  # refused: the process with that pid is not (or no longer) the bot
        return None


def _stale_note(data_dir: Path, held: control.Control) -> str:
    return (
        f"note: {control.path(data_dir)} names a bot (pid {held.pid}) that is no longer running: "
        "removed it"
    )


async def holder(data_dir: Path) -> control.Control | None:
    """The live bot holding ``data_dir``, or None (a stale control file is removed; one of a bot
    on another machine or container is left alone)."""
    held = control.read(data_dir)
    if held is None or held.elsewhere:
        return None
    streams = await _connect(held)
    if streams is None:
        logger.warning(_stale_note(data_dir, held))
        control.remove(data_dir, held.token)
        return None
    streams[1].close()
    return held


async def refuse_second_bot(data_dir: Path) -> None:
    """Before a bot opens the stores: ``control.BotHoldsFolder`` when a live bot holds
    ``data_dir``; a stale control file is removed."""
    held = await holder(data_dir)
    if held is None:
        return
    raise control.BotHoldsFolder(
        f"another bot (pid {held.pid}) already runs on the data folder {data_dir}: stop it "
        "first, or give this one its own LIVEMEMORY_DATA_DIR"
    )


async def forward(data_dir: Path, argv: Sequence[str], io: admin_io.Io) -> int | None:
    """Run the admin command ``argv`` in the bot holding ``data_dir``: its exit code, having
    written its output to ``io``; None when no live bot holds the folder (or its bot runs on
    another machine or container sharing the folder, out of 127.0.0.1's reach: the command then
    opens the stores itself, as it does on servers)."""
    held = control.read(data_dir)
    if held is None or held.elsewhere:
        return None
    streams = await _connect(held)
    if streams is None:
        io.err(_stale_note(data_dir, held) + ", opening the stores")
        control.remove(data_dir, held.token)
        return None
    reader, writer = streams
    try:
        control.send(writer, token=held.token, argv=list(argv))
        await writer.drain()
        return await _relay(held, reader, writer, io)
    except (ConnectionError, ValueError) as exc:
        io.err(f"error: the connection to the bot (pid {held.pid}) failed: {exc}")
        return admin_io.REFUSED
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


async def _relay(
    held: control.Control,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    io: admin_io.Io,
) -> int:
    """Write what the bot's command writes, answer its questions from ``io``; its exit code."""
    while True:
        message = await control.receive(reader)
        if message is None:
            io.err(
                f"error: the bot (pid {held.pid}) closed the connection before the command "
                "finished (did it stop?): run the command again"
            )
            return admin_io.REFUSED
        if "out" in message:
            io.stdout.write(str(message["out"]))
        elif "err" in message:
            io.stderr.write(str(message["err"]))
            io.stderr.flush()
        elif "ask" in message:
            control.send(writer, answer=await io.answer())
            await writer.drain()
        elif "refused" in message:
            io.err(f"error: the bot (pid {held.pid}) refused the command: {message['refused']}")
            return admin_io.REFUSED
        elif "exit" in message:
            io.stdout.flush()
            return int(message["exit"])
