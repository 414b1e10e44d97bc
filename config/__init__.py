"""Configuration: one pydantic-settings `Settings`, the persona and the lore."""

from __future__ import annotations
