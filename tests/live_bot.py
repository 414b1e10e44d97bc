"""A console bot running as a user runs it (``python -m bot console --no-llm --web`` in a subprocess,
typed to through a pipe), on the embedded defaults: no ``DATABASE_URL``, no ``REDIS_URL``, no
``QDRANT_URL`` — Postgres and Qdrant in the data folder, caches and working history in the process.

Its output is read by two threads into queues, line by line; the tests wait for a line (the end
of a turn report, a log line) with a bounded blocking read, never a sleep.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from tests import cli, dashboard_helpers

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

#: seconds a test waits for one expected line (an embedded Postgres's first start included)
LINE_SECONDS = 120.0
#: the console, its log on the terminal too (the worker's job lines are DEBUG-level chatter)
CONSOLE = ("console", "--no-llm", "--web", "--log-level", "DEBUG")
#: one chat message of a reply of several (``bot.output.reply_lines``)
REPLY_PART = re.compile(r"  reply (\d+)/(\d+) ")
LINK = re.compile(r"sign in with this one-time link \(this PC only\): (\S+)")


#: run ``python ARGV`` with SIGINT, SIGTERM and SIGHUP at their defaults, as a terminal starts it,
#: whatever the test runner inherited (``nohup``, a background job ignore some): the same process
#: (``exec``), so its pid is the bot's
AS_FROM_A_TERMINAL = (
    "import os, signal, sys\n"
    "for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):\n"
    "    signal.signal(signum, signal.SIG_DFL)\n"
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])\n"
)

#: a shell's background job (``cmd &`` in a script): SIGINT ignored, SIGTERM and SIGHUP default
AS_A_BACKGROUND_JOB = (
    "import os, signal, sys\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "for signum in (signal.SIGTERM, signal.SIGHUP):\n"
    "    signal.signal(signum, signal.SIG_DFL)\n"
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])\n"
)


def embedded_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a streamer's one PC: everything embedded, the offline embedder."""
    return {
        "LIVEMEMORY_DATA_DIR": str(tmp_path / "data"),
        "OLLAMA_HOST": "http://127.0.0.1:9",
        "LIVEMEMORY_MEMORY__EMBEDDER": "offline",
        "LIVEMEMORY_REPLY__POLICY": "always",
        "LIVEMEMORY_WEB__PORT": str(dashboard_helpers.free_port()),
        "LIVEMEMORY_WORKER__BACKOFF_BASE_SECONDS": "0",
        # a short prompt history: a turn gets older words from memory (recall), not from chat
        "LIVEMEMORY_HISTORY__MAX_MESSAGES": "2",
        # the worker's job lines (``consolidated``) are logged below DEBUG only
        "LIVEMEMORY_LOG_LEVEL": "DEBUG",
    }


def _pump(source: IO[str], into: queue.Queue[str | None]) -> None:
    for line in source:
        into.put(line)
    into.put(None)


@dataclass
class LiveBot:
    """The running console: type lines, read its turn reports and its log."""

    process: subprocess.Popen[str]
    env: dict[str, str]
    cwd: Path
    out: queue.Queue[str | None] = field(default_factory=queue.Queue)
    err: queue.Queue[str | None] = field(default_factory=queue.Queue)
    #: every stderr line read so far
    log: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        assert self.process.stdout is not None and self.process.stderr is not None
        for name, source, into in (
            ("out", self.process.stdout, self.out),
            ("err", self.process.stderr, self.err),
        ):
            threading.Thread(
                target=_pump, args=(source, into), name=f"live-bot-{name}", daemon=True
            ).start()

    @classmethod
    def start(cls, tmp_path: Path, *argv: str, env: dict[str, str] | None = None) -> LiveBot:
        """``python -m bot ARGV`` (default ``CONSOLE``) with ``env`` added to the embedded
        defaults."""
        env = {**embedded_env(tmp_path), **(env or {})}
        process = subprocess.Popen(
            [sys.executable, "-c", AS_FROM_A_TERMINAL, "-m", "bot", *(argv or CONSOLE)],
            env={**cli.environment(), **env},
            cwd=tmp_path,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        return cls(process=process, env=env, cwd=tmp_path)

    @property
    def data_dir(self) -> Path:
        from pathlib import Path

        return Path(self.env["LIVEMEMORY_DATA_DIR"])

    def wait_log(self, predicate: Callable[[str], bool], what: str) -> str:
        """The next stderr line ``predicate`` accepts (fails on exit or after ``LINE_SECONDS``)."""
        while True:
            try:
                line = self.err.get(timeout=LINE_SECONDS)
            except queue.Empty:
                raise AssertionError(f"no {what} in the bot's log:\n{''.join(self.log)}") from None
            if line is None:
                raise AssertionError(f"the bot exited before {what}:\n{''.join(self.log)}")
            self.log.append(line)
            if predicate(line):
                return line

    def ready(self) -> str:
        """Wait for the console's prompt; the dashboard's one-time sign-in link."""
        link = LINK.search(self.wait_log(lambda line: "one-time link" in line, "dashboard line"))
        assert link is not None
        self.wait_log(lambda line: line.startswith("stream session"), "console prompt")
        return link.group(1)

    def say(self, line: str) -> list[str]:
        """Type a chat line; the lines of the turn report it makes."""
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        report: list[str] = []
        while True:
            try:
                text = self.out.get(timeout=LINE_SECONDS)
            except queue.Empty:
                raise AssertionError(f"no turn report for {line!r}: {report}") from None
            assert text is not None, f"the bot exited:\n{''.join(self.log)}"
            report.append(text.rstrip("\n"))
            part = REPLY_PART.match(text)
            if part is not None and part.group(1) != part.group(2):
                continue  # a reply of several chat messages: up to its last
            if text.startswith(("  reply", "  no reply", "  silent", "  FAILED")):
                return report

    def consolidated(self) -> None:
        """Wait until the bot's worker has consolidated the next turn (its job succeeded)."""
        self.wait_log(
            lambda line: "consolidate_turn:" in line and line.rstrip().endswith(" succeeded"),
            "consolidation",
        )

    def admin(self, *argv: str, stdin: str | None = None) -> cli.Result:
        """``python -m memory.admin …`` on the bot's data folder, as a second terminal runs it."""
        return cli.run("memory.admin", *argv, env=self.env, cwd=self.cwd, stdin=stdin)

    def admin_json(self, *argv: str) -> Any:
        result = self.admin(*argv, "--json")
        assert (result.code, result.err) == (0, ""), result
        return json.loads(result.out)

    def quit(self) -> int:
        """``/quit``; the exit code (the rest of its log is read)."""
        assert self.process.stdin is not None
        self.process.stdin.write("/quit\n")
        self.process.stdin.close()
        code = self.process.wait(timeout=LINE_SECONDS)
        while (line := self.err.get(timeout=LINE_SECONDS)) is not None:
            self.log.append(line)
        return code

    def kill(self) -> None:
        """The test's finalizer: the bot killed if it still runs, and the embedded Postgres of its
        folder stopped if one is left (a failed test leaves nothing running)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        stop_postgres_of(self.data_dir)

    def wait_exit(self) -> int:
        """The exit code, once the process has exited (the rest of its log is read)."""
        code = self.process.wait(timeout=LINE_SECONDS)
        while (line := self.err.get(timeout=LINE_SECONDS)) is not None:
            self.log.append(line)
        return code


def postgres_of(data_dir: Path) -> int | None:
    """The pid of the embedded Postgres running on ``data_dir``: the first line of its
    ``postmaster.pid``, a live process whose command line names the folder (else None)."""
    pgdata = data_dir.resolve() / "postgres"
    try:
        pid = int((pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            args = handle.read().split(b"\0")
    except (OSError, ValueError):
        return None
    return pid if str(pgdata).encode() in args else None


def stop_postgres_of(data_dir: Path) -> None:
    """Stop the embedded Postgres left running on a test's own ``data_dir`` (by the pid of its
    ``postmaster.pid``; a server of any other folder is never touched)."""
    pid = postgres_of(data_dir)
    if pid is None:
        return
    for signum in (signal.SIGINT, signal.SIGQUIT, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)
        deadline = time.monotonic() + 10
        while postgres_of(data_dir) == pid and time.monotonic() < deadline:
            time.sleep(0.01)  # a server's own shutdown, bounded: no event to wait for
        if postgres_of(data_dir) != pid:
            return


def recalled(report: list[str]) -> list[str]:
    """The recall lines of a turn report."""
    return [line for line in report if line.lstrip().startswith("recall")]
