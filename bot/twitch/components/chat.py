"""Chat in: every viewer's message becomes a ``models.ChatEvent`` handed to the bot's chat sink
(the batcher of its stream). Commands (``!…``) go the same way with kind ``command``: the session
records them and answers them apart, never through the model.
"""

from __future__ import annotations

import collections
import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import pydantic
from twitchio.ext import commands

from memory import errors, inbound, models

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


def _clip(value: object) -> object:
    """Twitch never sends more than 500 characters; if it did, the rest is cut, not the message."""
    return value[: inbound.TEXT_MAX] if isinstance(value, str) else value


class ChatNotification(pydantic.BaseModel):
    """What the bot takes from a ``channel.chat.message`` notification, validated with the shared
    limits of ``memory.inbound``: text cleaned and kept (cut at 500 characters), ids and login
    refused when out of their limits (the message cannot be stored without them)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    id: inbound.MessageId
    user_id: inbound.UserId
    login: inbound.Login
    name: Annotated[inbound.DisplayName | None, pydantic.BeforeValidator(_clip)] = None
    text: Annotated[inbound.ChatText, pydantic.BeforeValidator(_clip)]
    reply_to: inbound.MessageId | None = None


def to_event(message: twitchio.ChatMessage, *, stream: str, prefix: str) -> models.ChatEvent:
    """The ``ChatEvent`` of a ``channel.chat.message`` notification; ``errors.InvalidInput`` when
    it cannot be stored (an id or login out of its limits). A chat time outside the sane window
    (``memory.inbound``) is replaced by the time of arrival."""
    chatter = message.chatter
    try:
        fields = ChatNotification.model_validate(
            {
                "id": message.id,
                "user_id": chatter.id,
                "login": chatter.name or chatter.id,
                "name": chatter.display_name,
                "text": message.text,
                "reply_to": message.reply.parent_message_id if message.reply else None,
            }
        )
    except pydantic.ValidationError as exc:
        raise errors.InvalidInput(inbound.problem(exc)) from None
    badges = tuple(dict.fromkeys(BADGES[b.set_id] for b in message.badges if b.set_id in BADGES))
    kind, event = models.EventKind.MESSAGE, None
    if fields.text.startswith(prefix):
        kind = models.EventKind.COMMAND
    elif message.cheer is not None:
        kind, event = models.EventKind.EVENT, "cheer"
    try:
        ts = message.timestamp
    except (ValueError, TypeError, OverflowError):  # TwitchIO parses it on access
        ts = None
    return models.ChatEvent(
        id=fields.id,
        stream=stream,
        user_id=fields.user_id,
        login=fields.login,
        name=fields.name,
        badges=badges,
        text=fields.text,
        ts=ts if ts is not None and inbound.in_window(ts) else datetime.now(UTC),
        kind=kind,
        event=event,
        reply_to=fields.reply_to,
    )


#: message ids remembered to drop a notification Twitch delivers twice (at-least-once delivery)
SEEN_IDS = 2048


class ChatIngest(commands.Component):
    """Hands every viewer message of a joined channel to the chat sink, once."""

    def __init__(self, bot: client.LiveMemoryBot) -> None:
        self.bot = bot
        self._seen: collections.deque[str] = collections.deque(maxlen=SEEN_IDS)
        self._seen_set: set[str] = set()
        #: notifications refused at the edge (an id or login out of its limits)
        self.rejected = 0

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
        try:
            event = to_event(payload, stream=channel.stream, prefix=self.bot.settings.twitch.prefix)
        except errors.InvalidInput as exc:
            self.rejected += 1
            logger.warning(
                "message %r of channel %s refused: %s",
                str(payload.id)[:64],
                channel.login,
                exc,
                extra={"action": "chat_refused"},
            )
            return
        self.bot.receive(event)


async def setup(bot: client.LiveMemoryBot) -> None:
    await bot.add_component(ChatIngest(bot))
