"""Lore / canon: ``config/lore/`` (markdown and yaml) loaded into the ``lore`` space by an admin.

Chat never writes lore: only ``load`` (``python -m memory.admin lore load DIR``) does, and it replaces
the whole space. File formats:

* Markdown (``.md``): every ``## Heading`` section is one entry (text = heading + body). A line
  ``Entities: Name, Other Name`` inside a section lists its canon names (the heading is always one);
  a ``# Title`` line and text before the first ``##`` are ignored.
* YAML (``.yaml``/``.yml``): a list of entries, or a mapping with ``entries:``; each entry has
  ``title``, ``text`` and optionally ``entities`` (list of names).

``entities(directory)`` lists the canon names, for the planner's lore references.
"""

from __future__ import annotations

import logging
import re
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory import errors, identity
from memory.spaces import records

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from memory import ports

logger = logging.getLogger(__name__)

LORE_NAMESPACE = uuid.UUID("9d3c1b7a-1f0e-4c55-8c1e-6c6f72650000")
_SECTION = re.compile(r"^##\s+(.+?)\s*$", re.MULTILINE)
_ENTITIES = re.compile(
    r"^\s*(?:\*\*)?entities(?:\*\*)?\s*:\s*(?:\*\*)?\s*(.+)$", re.I | re.MULTILINE
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """One canon entry."""

    title: str
    text: str
    entities: tuple[str, ...]
    #: file it came from, relative to the lore folder
    source: str

    def record(self, index: int) -> records.MemoryRecord:
        return records.MemoryRecord(
            id=str(uuid.uuid5(LORE_NAMESPACE, f"{self.source}#{index}#{self.title}")),
            space=identity.LORE_KEY,
            kind=records.MemoryKind.LORE,
            text=f"{self.title}: {self.text}",
            extra={"title": self.title, "entities": list(self.entities), "source": self.source},
        )


def _names(raw: str) -> list[str]:
    return [name.strip(" *_`") for name in raw.split(",") if name.strip(" *_`")]


def parse_markdown(text: str, source: str) -> list[Entry]:
    parts = _SECTION.split(text)
    entries: list[Entry] = []
    for title, body in zip(parts[1::2], parts[2::2], strict=True):
        names = [title]
        for match in _ENTITIES.finditer(body):
            names.extend(_names(match.group(1)))
        content = " ".join(_ENTITIES.sub("", body).split())
        if content:
            entries.append(
                Entry(
                    title=title, text=content, entities=tuple(dict.fromkeys(names)), source=source
                )
            )
    return entries


def parse_yaml(text: str, source: str) -> list[Entry]:
    import yaml  # here: PyYAML's import is ~16 ms of every start-up, and most lore is Markdown

    try:
        data: Any = yaml.safe_load(text) or []
    except yaml.YAMLError as exc:
        raise errors.ConfigurationError(f"{source}: invalid YAML: {exc}") from exc
    if isinstance(data, dict):
        data = data.get("entries", [])
    if not isinstance(data, list):
        raise errors.ConfigurationError(f"{source}: expected a list of lore entries")
    entries: list[Entry] = []
    for item in data:
        if not isinstance(item, dict) or not item.get("title") or not item.get("text"):
            raise errors.ConfigurationError(f"{source}: every lore entry needs a title and a text")
        title = str(item["title"]).strip()
        names = [title, *(str(n).strip() for n in item.get("entities") or [])]
        entries.append(
            Entry(
                title=title,
                text=" ".join(str(item["text"]).split()),
                entities=tuple(dict.fromkeys(n for n in names if n)),
                source=source,
            )
        )
    return entries


#: the file suffixes lore is read from
SUFFIXES = (".md", ".yaml", ".yml")


def files(directory: Path) -> dict[str, str]:
    """The lore files of ``directory``: relative path → text, in path order."""
    if not directory.is_dir():
        raise errors.ConfigurationError(f"lore folder {directory} does not exist")
    return {
        path.relative_to(directory).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(directory.rglob("*"))
        if path.suffix in SUFFIXES and path.is_file()
    }


def parse_files(texts: Mapping[str, str]) -> list[Entry]:
    """The entries of lore files given as relative path → text (``files``), in that order."""
    entries: list[Entry] = []
    for source, text in texts.items():
        if source.endswith(".md"):
            entries.extend(parse_markdown(text, source))
        elif source.endswith((".yaml", ".yml")):
            entries.extend(parse_yaml(text, source))
    return entries


def read(directory: Path) -> list[Entry]:
    """Every entry of the lore folder, files in name order."""
    return parse_files(files(directory))


def entities(directory: Path) -> list[str]:
    """The canon names of the lore folder (for the planner)."""
    return list(dict.fromkeys(name for entry in read(directory) for name in entry.entities))


async def load(spaces: ports.MemorySpaces, directory: Path) -> int:
    """Replace the lore space with the entries of ``directory``; returns how many were loaded.

    A folder with no entry, or a malformed file, is an ``errors.ConfigurationError`` and the current
    lore stays as it is.
    """
    entries = read(directory)
    if not entries:
        raise errors.ConfigurationError(f"no lore entries in {directory} (.md sections or .yaml)")
    records = [entry.record(index) for index, entry in enumerate(entries)]
    await spaces.drop(identity.LORE_KEY)
    await spaces.upsert(records)
    logger.info("lore loaded: %d entries from %s", len(records), directory)
    return len(records)
