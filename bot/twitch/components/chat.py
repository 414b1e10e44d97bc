"""Chat in: every viewer's message becomes a ``models.ChatEvent`` handed to the bot's chat sink
(the batcher of its stream). Commands (``!…``) go the same way with kind ``command``: the session
records them and answers them apart, never through the model.
"""

from __future__ import annotations

import collections
import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from twitchio.ext import commands

from memory import models

if TYPE_CHECKING:
    import twitchio

    from bot.twitch import client

logger = logging.getLogger(__name__)

#: Twitch badge set ids → the badges a ChatEvent knows
BADGES = {
    "broadcaster": "broadcaster",
    "moderator": "moderator",
    "lead_moderator": "moderator",
    "vip": "vip",
    "subscriber": "subscriber",
    "founder": "subscriber",
}


def to_event(message: twitchio.ChatMessage, *, stream: str, prefix: str) -> models.ChatEvent:
    """The ``ChatEvent`` of a ``channel.chat.message`` notification."""
    badges = tuple(dict.fromkeys(BADGES[b.set_id] for b in message.badges if b.set_id in BADGES))
    text = message.text
    kind, event = models.EventKind.MESSAGE, None
    if text.startswith(prefix):
        kind = models.EventKind.COMMAND
    elif message.cheer is not None:
        kind, event = models.EventKind.EVENT, "cheer"
    chatter = message.chatter
    return models.ChatEvent(
        id=message.id,
        stream=stream,
        user_id=str(chatter.id),
        login=str(chatter.name or chatter.id),
        name=chatter.display_name,
        badges=badges,
        text=text,
        ts=message.timestamp or datetime.now(UTC),
        kind=kind,
        event=event,
        reply_to=message.reply.parent_message_id if message.reply else None,
    )


#: message ids remembered to drop a notification Twitch delivers twice (at-least-once delivery)
SEEN_IDS = 2048


class ChatIngest(commands.Component):
    """Hands every viewer message of a joined channel to the chat sink, once."""

    def __init__(self, bot: client.LiveMemoryBot) -> None:
        self.bot = bot
        self._seen: collections.deque[str] = collections.deque(maxlen=SEEN_IDS)
        self._seen_set: set[str] = set()

    def _first_time(self, message_id: str) -> bool:
        if message_id in self._seen_set:
            return False
        if len(self._seen) == self._seen.maxlen:
            self._seen_set.discard(self._seen[0])
        self._seen.append(message_id)
        self._seen_set.add(message_id)
        return True

    @commands.Component.listener()  # type: ignore[untyped-decorator]
    async def event_message(self, payload: twitchio.ChatMessage) -> None:
        if payload.chatter.id == self.bot.bot_id:
            return  # the bot's own messages
        if payload.source_broadcaster is not None:
            return  # shared chat: a message of another channel
        if not self._first_time(payload.id):
            logger.debug("message %s delivered twice, dropped", payload.id)
            return
        channel = self.bot.channels.get(str(payload.broadcaster.id))
        if channel is None:
            logger.warning("message from a channel not joined: %s", payload.broadcaster.id)
            return
        event = to_event(payload, stream=channel.stream, prefix=self.bot.settings.twitch.prefix)
        self.bot.receive(event)


async def setup(bot: client.LiveMemoryBot) -> None:
    await bot.add_component(ChatIngest(bot))
