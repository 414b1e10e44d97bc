"""Runtime SQL: the named blocks of every ``.sql`` file of this folder, loaded once.

A block starts with ``-- name --`` and a ``-- description`` line listing the positional parameters.
One file per layer (``transcript.sql``, ``jobs.sql``, …); names are unique across files.
"""

from __future__ import annotations

import re
from importlib import resources
from typing import LiteralString

_BLOCK = re.compile(r"^-- (?P<name>[a-z_0-9]+) --$", re.MULTILINE)


def parse(text: str) -> dict[str, LiteralString]:
    """Split a ``.sql`` file into its named queries."""
    parts = _BLOCK.split(text)
    queries: dict[str, LiteralString] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        lines = [line for line in body.strip().splitlines() if not line.startswith("-- ")]
        if name in queries:
            raise ValueError(f"duplicate query name {name!r}")
        queries[name] = "\n".join(lines).strip()  # the .sql files are ours: literal SQL
    return queries


def load_all() -> dict[str, LiteralString]:
    merged: dict[str, LiteralString] = {}
    for entry in sorted(resources.files(__package__).iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".sql"):
            continue
        for name, query in parse(entry.read_text(encoding="utf-8")).items():
            if name in merged:
                raise ValueError(f"query {name!r} is defined twice ({entry.name})")
            merged[name] = query
    return merged


queries = load_all()
