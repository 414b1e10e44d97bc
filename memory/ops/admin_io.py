"""What every admin subcommand shares: its services, its input/output, the confirmation step."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    import argparse
    from collections.abc import Awaitable, Callable
    from typing import TypeAlias

    from config.settings import Settings
    from memory.adapters import postgres
    from memory.ops import operations

    #: one subcommand: its services, its parsed arguments, its io; returns the exit code
    Handler: TypeAlias = Callable[["AdminServices", argparse.Namespace, "Io"], Awaitable[int]]

#: exit codes
OK = 0
REFUSED = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class AdminServices:
    db: postgres.Database
    ops: operations.Operations
    settings: Settings


class Io:
    """Where a command reads its confirmation and writes its output."""

    def __init__(
        self, stdin: TextIO | None, stdout: TextIO | None, stderr: TextIO | None, *, as_json: bool
    ) -> None:
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self.as_json = as_json

    def out(self, text: str) -> None:
        print(text, file=self.stdout)

    def err(self, text: str) -> None:
        print(text, file=self.stderr, flush=True)

    def json(self, data: Any) -> None:
        print(json.dumps(data, ensure_ascii=False, indent=2, default=str), file=self.stdout)

    def result(self, data: Any, text: str | None = None) -> None:
        """``data`` as JSON with ``--json``, else ``text`` (default: ``key=value`` pairs)."""
        if self.as_json:
            self.json(data)
        elif text is not None:
            self.out(text)
        else:
            self.out(" ".join(f"{k}={v}" for k, v in data.items()))

    async def ask(self, question: str) -> bool:
        print(question, end=" ", file=self.stderr, flush=True)
        return (await self.answer()).strip().casefold() in {"y", "yes", "s", "si", "sì"}

    async def answer(self) -> str:
        """The line typed after a question (a bot running a forwarded command asks the admin
        command that forwarded it: ``memory.ops.control_server``)."""
        return self.stdin.readline()


async def confirm(
    io: Io, args: argparse.Namespace, plan: dict[str, Any], lines: list[str]
) -> int | None:
    """Show what a destructive command will change; None when it may go ahead, else its exit code.

    ``--dry-run`` shows the plan and stops (exit 0); ``--yes`` goes ahead without asking; otherwise
    the question is asked on stderr and anything but yes aborts (exit 1, nothing changed).
    """
    if args.dry_run:
        io.result({"dry_run": True, **plan}, "\n".join([*lines, "dry run: nothing changed"]))
        return OK
    if args.yes:
        return None
    for line in lines:
        io.err(line)
    if await io.ask("Go ahead? [y/N]"):
        return None
    io.err("aborted: nothing changed")
    return REFUSED
