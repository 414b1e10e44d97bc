"""One TwitchIO ``commands.Component`` per feature; each module has ``async def setup(bot)``."""

from __future__ import annotations

#: loaded in this order by ``LiveMemoryBot.setup_hook``
MODULES = ("bot.twitch.components.presence", "bot.twitch.components.chat")
