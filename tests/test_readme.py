"""The README as a newcomer reads it: at most 200 lines, and every command it shows works.

Each ``sh`` block of README.md is run as written (``.venv/bin/python`` is this interpreter), line
by line, from the repository root, and must exit 0. A block marked by the line
``<!-- readme-test: help -->`` just before it holds long-running commands (a bot, the test suite):
they are not run; instead ``python -m <module> <subcommand> --help`` must exit 0, and a script
must exist, be executable and parse (``bash -n``). Every inline ``python -m …`` command of the
README is checked the same way.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from dataclasses import dataclass

import pytest

from tests.cli import ROOT, environment

README = ROOT / "README.md"
HELP_MARK = "<!-- readme-test: help -->"
BLOCK = re.compile(r"(?P<before>[^\n]*)\n+```sh\n(?P<body>.*?)\n```", re.DOTALL)
INLINE = re.compile(r"`((?:\.venv/bin/)?python -m [^`]+)`")
MAX_LINES = 200


@dataclass(frozen=True)
class Command:
    line: str
    help_only: bool


def commands() -> list[Command]:
    text = README.read_text(encoding="utf-8")
    found = []
    for block in BLOCK.finditer(text):
        before = block["before"].strip()
        if before.startswith("<!-- readme-test") and before != HELP_MARK:
            raise AssertionError(f"unknown README test mark {before!r} (known: {HELP_MARK!r})")
        for line in block["body"].splitlines():
            line = line.split(" # ", 1)[0].strip()
            if line and not line.startswith("#"):
                found.append(Command(line, before == HELP_MARK))
    return found


def help_form(line: str) -> list[str]:
    """``python -m bot run --web`` → ``python -m bot run --help``: the module and its
    subcommand words (everything before the first option), then ``--help``."""
    words = shlex.split(line)
    if words[0] in (".venv/bin/python", "python"):
        words[0] = sys.executable
    kept = [words[0]]
    for word in words[1:]:
        if word.startswith("-") and word != "-m":
            break
        kept.append(word)
    return [*kept, "--help"]


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, env=environment(), capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip


def test_the_readme_is_at_most_200_lines_and_shows_commands() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines (at most {MAX_LINES})"
    found = commands()
    assert any(c.help_only for c in found) and any(not c.help_only for c in found)


@pytest.mark.parametrize("command", [c.line for c in commands() if not c.help_only])
def test_a_safe_readme_command_runs_as_written(command: str) -> None:
    words = shlex.split(command)
    if words[0] == ".venv/bin/python":
        words[0] = sys.executable
    done = run(words)
    assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stderr[-2000:]}"


def help_checked() -> list[str]:
    lines = [c.line for c in commands() if c.help_only]
    lines += INLINE.findall(README.read_text(encoding="utf-8"))
    return list(dict.fromkeys(lines))


@pytest.mark.parametrize("command", help_checked())
def test_a_long_running_readme_command_exists_and_its_help_works(command: str) -> None:
    words = shlex.split(command)
    if words[0].startswith("scripts/"):
        script = ROOT / words[0]
        assert script.is_file() and script.stat().st_mode & 0o111, f"{script} is not executable"
        assert run(["bash", "-n", str(script)]).returncode == 0
        return
    done = run(help_form(command))
    assert done.returncode == 0 and "usage:" in done.stdout, f"{command}:\n{done.stderr[-2000:]}"


def test_every_file_the_readme_links_to_exists() -> None:
    links = re.findall(r"\]\(((?!https?:)[^)#\s]+)", README.read_text(encoding="utf-8"))
    assert links
    assert [link for link in links if not (ROOT / link).exists()] == []
