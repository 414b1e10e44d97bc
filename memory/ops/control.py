"""The control file a running bot leaves in its data folder, and the line protocol of its admin
endpoint (``memory.ops.control_server`` serves it, ``memory.ops.control_client`` talks to it).

``<data_dir>/control.json`` holds the bot's pid, the loopback address of its admin endpoint and a
random token, and is readable only by the user that runs the bot (mode 0600). ``python -m
memory.admin`` reads it to forward its command to the bot instead of opening the stores the bot
holds. The protocol is JSON, one object a line: the client sends ``{"token", "argv"}``; the bot
answers with ``{"out": text}`` and ``{"err": text}`` as the command writes, ``{"ask": true}`` when
it asks for a confirmation (the client answers ``{"answer": line}``), and ends with
``{"exit": code}`` — or ``{"refused": reason}`` for a wrong token.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from memory import errors

if TYPE_CHECKING:
    import asyncio
    from pathlib import Path

FILENAME = "control.json"
#: the only address the admin endpoint listens on
LOOPBACK = "127.0.0.1"
#: the longest line either side sends (an export of a busy viewer is one ``out`` line)
LINE_LIMIT = 64 * 1024 * 1024


class BotHoldsFolder(errors.MemoryServiceError):
    """A live bot holds the data folder (a second bot on the same folder)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Control:
    """What the control file says: who holds the folder and how to reach its admin endpoint."""

    pid: int
    host: str
    port: int
    token: str
    #: the dashboard's address when the bot serves it, else None
    dashboard: str | None = None
    #: the host name of the bot's machine (or container): a data folder shared with another one
    #: (a docker volume) names a bot that 127.0.0.1 does not reach, and is not stale either
    machine: str = ""

    @property
    def elsewhere(self) -> bool:
        return bool(self.machine) and self.machine != socket.gethostname()


def path(data_dir: Path) -> Path:
    return data_dir / FILENAME


def new_token() -> str:
    return secrets.token_urlsafe(32)


def write(data_dir: Path, control: Control) -> Path:
    """Write the control file atomically, mode 0600 from its creation (never world-readable)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    target = path(data_dir)
    partial = target.with_name(f".{FILENAME}.{os.getpid()}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(asdict(control), out)
    os.replace(partial, target)
    return target


def read(data_dir: Path) -> Control | None:
    """The control file, or None when there is none (or it is half-written or not ours to read:
    ``errors.ConfigurationError`` says which user may read it)."""
    target = path(data_dir)
    try:
        data = json.loads(target.read_text(encoding="utf-8"))
        return Control(**data)
    except FileNotFoundError:
        return None
    except PermissionError:
        raise errors.ConfigurationError(
            f"{target} is not readable by this user: run the admin command as the user that "
            "runs the bot"
        ) from None
    except (ValueError, TypeError):
        return None


def remove(data_dir: Path, token: str) -> None:
    """Remove the control file if it is still the one with ``token`` (not a later bot's)."""
    with contextlib.suppress(OSError, errors.ConfigurationError):
        current = read(data_dir)
        if current is not None and same_token(current.token, token):
            path(data_dir).unlink()


def same_token(given: object, token: str) -> bool:
    """Whether ``given`` is ``token`` (in constant time; anything but a string is not)."""
    return isinstance(given, str) and secrets.compare_digest(given.encode(), token.encode())


def pid_alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists (one of another user counts). On Windows, where
    ``os.kill`` would end the process, every pid counts as alive: the connection decides."""
    if pid <= 0:
        return False
    if os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def send(writer: asyncio.StreamWriter, **message: Any) -> None:
    writer.write(json.dumps(message, ensure_ascii=False).encode() + b"\n")


async def receive(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The next message, or None when the other side closed the connection."""
    line = await reader.readline()
    if not line:
        return None
    message = json.loads(line)
    if not isinstance(message, dict):
        raise ValueError("a control message is a JSON object")
    return message
