"""Generated blocks inside a hand-written Markdown document.

A block is the text between ``<!-- BEGIN generated: NAME -->`` and ``<!-- END generated: NAME -->``,
each marker on a line of its own. ``replace`` rewrites the blocks it is given and leaves every other
character of the document as it was, so prose and generated tables live in one file and a second
run with the same contents changes nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping

MARKER = re.compile(r"^<!-- (BEGIN|END) generated: ([a-z0-9][a-z0-9_-]*) -->$", re.MULTILINE)


def begin(name: str) -> str:
    return f"<!-- BEGIN generated: {name} -->"


def end(name: str) -> str:
    return f"<!-- END generated: {name} -->"


class MarkerError(ValueError):
    """The document's markers do not pair up, or name a block nobody generates."""


@dataclass(frozen=True)
class Block:
    name: str
    #: offsets of the block's contents: after its BEGIN line, up to its END marker
    start: int
    stop: int
    line: int


def blocks(text: str) -> dict[str, Block]:
    """The document's blocks by name. Raises ``MarkerError`` (with the line) on an END without
    its BEGIN, a BEGIN without its END, a block inside another, or a name used twice."""
    found: dict[str, Block] = {}
    opened: tuple[str, int, int] | None = None  # name, contents start, line
    for match in MARKER.finditer(text):
        kind, name = match.groups()
        line = text.count("\n", 0, match.start()) + 1
        if kind == "BEGIN":
            if opened is not None:
                raise MarkerError(f"line {line}: block {name!r} begins inside {opened[0]!r}")
            if name in found:
                raise MarkerError(f"line {line}: block {name!r} appears twice")
            opened = (name, match.end() + 1, line)
        elif opened is None or opened[0] != name:
            raise MarkerError(f"line {line}: END of {name!r} without its BEGIN")
        else:
            found[name] = Block(name, min(opened[1], match.start()), match.start(), opened[2])
            opened = None
    if opened is not None:
        raise MarkerError(f"line {opened[2]}: block {opened[0]!r} has no END marker")
    return found


def replace(text: str, contents: Mapping[str, str], *, known: Collection[str] = ()) -> str:
    """``text`` with the blocks named in ``contents`` holding those contents (other blocks and all
    prose unchanged). Raises ``MarkerError`` when a name of ``contents`` has no block in the
    document, or (``known`` given) when the document holds a block whose name is not known."""
    found = blocks(text)
    if known:
        strange = sorted(set(found) - set(known))
        if strange:
            where = ", ".join(f"{name!r} (line {found[name].line})" for name in strange)
            raise MarkerError(f"unknown block {where}: known are {', '.join(sorted(known))}")
    missing = sorted(set(contents) - set(found))
    if missing:
        raise MarkerError(
            f"no block named {', '.join(missing)} in the document (add "
            f"{begin(missing[0])!r} … {end(missing[0])!r}; it has: {', '.join(found) or 'none'})"
        )
    out, at = [], 0
    for block in sorted(found.values(), key=lambda b: b.start):
        if block.name not in contents:
            continue
        body = contents[block.name].strip("\n")
        out += [text[at : block.start], body + "\n" if body else ""]
        at = block.stop
    out.append(text[at:])
    return "".join(out)
