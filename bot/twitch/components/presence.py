"""The bot's own standing in each channel, learnt from the badges on its own messages (EventSub
delivers them too): moderator or broadcaster raises its outgoing rate limit there."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from twitchio.ext import commands

if TYPE_CHECKING:
    import twitchio

    from bot.twitch import client

logger = logging.getLogger(__name__)

PRIVILEGED_BADGES = frozenset({"moderator", "lead_moderator", "broadcaster"})


class BotPresence(commands.Component):
    def __init__(self, bot: client.LiveMemoryBot) -> None:
        self.bot = bot

    @commands.Component.listener()  # type: ignore[untyped-decorator]
    async def event_message(self, payload: twitchio.ChatMessage) -> None:
        if payload.chatter.id != self.bot.bot_id:
            return
        channel = str(payload.broadcaster.id)
        privileged = any(badge.set_id in PRIVILEGED_BADGES for badge in payload.badges)
        if privileged != self.bot.is_privileged(channel):
            logger.info("bot is %s in %s", "moderator" if privileged else "a viewer", channel)
        self.bot.set_privileged(channel, privileged)


async def setup(bot: client.LiveMemoryBot) -> None:
    await bot.add_component(BotPresence(bot))
