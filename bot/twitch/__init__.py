"""Twitch: chat in over EventSub WebSocket, replies out over Helix (TwitchIO 3), memory commands.

``run.main(settings)`` is ``python -m bot run``; ``client.LiveMemoryBot`` is the bot; see docs/twitch.md.
"""

from __future__ import annotations
