"""livememory's memory: transcript, working history, memory spaces, consolidation, retrieval."""

from __future__ import annotations
