"""The livememory bot: Twitch chat, the console and transcript replays, on one pipeline."""

from __future__ import annotations
