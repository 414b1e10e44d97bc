"""Code, tests, scripts, config and docs say what is, not when it was made: no issue or session
numbers in them (history lives in CHANGELOG.md and git). Measurements are cited by their section
of docs/evaluation.md."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tests.cli import ROOT

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

#: what is searched: the packages, scripts, config, tests, docs and the front page
PATHS = ("memory", "bot", "config", "scripts", "tests", "docs", "README.md")
SKIPPED_DIRS = {"__pycache__", ".venv", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
#: "issue N", "issues N and M", "issue #N", "session N", "sessions N-M", "session-N", "(SN)",
#: "done-when N", with N a number
HISTORY = re.compile(
    r"\b[Ii]ssues? #?\d+|\b[Ss]essions?[ #-]#?\d+|\(S\d+\)|\b[Dd]one-when \d",
)


def text_files() -> Iterator[Path]:
    for name in PATHS:
        root = ROOT / name
        for path in [root] if root.is_file() else sorted(root.rglob("*")):
            parts = path.relative_to(ROOT).parts
            if path.is_file() and not SKIPPED_DIRS.intersection(parts):
                yield path


def history_mentions() -> list[str]:
    found = []
    for path in text_files():
        data = path.read_bytes()
        if b"\0" in data:
            continue  # binary (images)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue  # not text
        for number, line in enumerate(text.splitlines(), 1):
            if HISTORY.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return found


def test_no_issue_or_session_numbers_in_code_tests_or_docs() -> None:
    found = history_mentions()
    assert not found, "history belongs in CHANGELOG.md or git:\n" + "\n".join(found)


def test_the_pattern_finds_each_form_of_a_history_mention() -> None:
    forms = ["issue {n}", "Issues {n} and 4", "issue #{n}", "session {n}", "Sessions {n}-15",
             "session-{n}", "(S{n})", "done-when {n}"]  # fmt: skip
    history = [form.format(n=7) for form in forms]
    ordinary = ["the session's CSRF token", "stream s1", "any health issues?", "dtype='S32'"]
    assert all(HISTORY.search(text) for text in history)
    assert not any(HISTORY.search(text) for text in ordinary)
