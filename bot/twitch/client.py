"""The Twitch bot: a TwitchIO 3 ``commands.Bot`` that reads chat over EventSub WebSocket
(``channel.chat.message``) and sends replies over Helix (``POST chat/messages``).

Chat goes to an injected async sink (``on_chat``), the same one across reconnects. Memory commands
are not TwitchIO commands: they travel with the chat (kind ``command``) and are answered per batch
by ``memory.ops.commands``. Tokens live in Postgres (``bot.twitch.tokens``), never in a file.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import twitchio
from twitchio import eventsub
from twitchio.ext import commands

from bot.twitch import components, credentials, helix, reconnect, sending
from memory import identity, outage

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import aiohttp

    from bot.twitch import deliveries, tokens
    from config.settings import Settings
    from memory import metrics as metrics_module
    from memory import models

    ChatSink = Callable[[models.ChatEvent], Awaitable[None]]

logger = logging.getLogger(__name__)

#: at close, how long the chat already received may take to reach the sink
CLOSE_FLUSH_SECONDS = 5.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Channel:
    """A joined channel: the broadcaster and the stream session its chat belongs to."""

    id: str
    login: str
    #: stream session id: the live stream's id, else a temporary one
    stream: str
    temporary: bool = False


class LiveMemoryBot(commands.Bot):
    """The bot. Build it, then ``await bot.start(with_adapter=False)`` inside ``async with bot``."""

    def __init__(
        self,
        settings: Settings,
        *,
        on_chat: ChatSink,
        token_store: tokens.TokenStore | None = None,
        delivery_log: deliveries.DeliveryLog | None = None,
        session: aiohttp.ClientSession | None = None,
        clock: sending.Clock | None = None,
        on_channels: Callable[[list[Channel]], Awaitable[None]] | None = None,
        metrics: metrics_module.OperatorMetrics | None = None,
    ) -> None:
        twitch = settings.twitch
        credentials.check(settings)
        assert twitch.client_id and twitch.client_secret and twitch.bot_id
        helix.apply_base_urls(twitch)
        reconnect.install()
        super().__init__(
            client_id=twitch.client_id,
            client_secret=twitch.client_secret.get_secret_value(),
            bot_id=twitch.bot_id,
            owner_id=twitch.owner_id,
            prefix=twitch.prefix,
            session=session,
        )
        self.settings = settings
        self.on_chat = on_chat
        self.token_store = token_store
        self.delivery_log = delivery_log
        self.on_channels = on_channels
        self.metrics = metrics
        self.clock = clock or sending.SystemClock()
        self.limiter = sending.RateLimiter.from_settings(twitch, self.clock)
        self.sender = sending.Sender(
            helix.HelixTransport(self, sender_id=twitch.bot_id, send_as=twitch.send_as),
            self.limiter,
            clock=self.clock,
            max_retries=twitch.send_max_retries,
            max_wait=twitch.send_max_wait_seconds,
        )
        #: broadcaster id → joined channel
        self.channels: dict[str, Channel] = {}
        #: errors TwitchIO swallowed in listeners (tests assert there are none)
        self.listener_errors: list[BaseException] = []
        # TwitchIO runs each listener call as its own task: one queue and one owned task hand the
        # events to the sink in the order Twitch delivered them
        self._inbox: asyncio.Queue[models.ChatEvent] = asyncio.Queue()
        self._pump: asyncio.Task[None] | None = None

    # -- tokens: Postgres, never ``.tio.tokens.json`` ---------------------------------------------
    async def add_token(
        self, token: str, refresh: str
    ) -> twitchio.authentication.ValidateTokenPayload:
        resp = await super().add_token(token, refresh)
        if resp.user_id and self.token_store is not None:
            stored = self.tokens.get(resp.user_id)
            if stored is not None:  # the pair actually kept (a refresh may have replaced it)
                await self.token_store.save(resp.user_id, stored["token"], stored["refresh"])
        return resp

    async def load_tokens(self, path: str | None = None, /) -> None:
        if self.token_store is None:
            return
        for row in await self.token_store.load():
            try:
                await self.add_token(row.token.get_secret_value(), row.refresh.get_secret_value())
            except twitchio.InvalidTokenException:
                logger.warning("the stored Twitch token of user %s is no longer valid", row.user_id)

    async def save_tokens(self, path: str | None = None, /) -> None:
        if self.token_store is None:
            return
        for data in self.tokens.values():
            await self.token_store.save(data["user_id"], data["token"], data["refresh"])

    async def event_token_refreshed(self, payload: twitchio.TokenRefreshedPayload) -> None:
        if self.token_store is not None:
            await self.token_store.save(payload.user_id, payload.token, payload.refresh_token)

    # -- start-up ---------------------------------------------------------------------------------
    async def setup_hook(self) -> None:
        self._pump = asyncio.create_task(self._pump_chat(), name="twitch-chat-sink")
        await self._ensure_user_token()
        for channel in await self._resolve_channels():
            self.channels[channel.id] = channel
            self.limiter.set_privileged(channel.id, channel.id == self.bot_id)
        for module in components.MODULES:
            await self.load_module(module)
        if self.on_channels is not None:
            await self.on_channels(list(self.channels.values()))
        for channel in self.channels.values():
            await self.subscribe_websocket(
                eventsub.ChatMessageSubscription(
                    broadcaster_user_id=channel.id, user_id=self.bot_id
                )
            )
            logger.info("reading chat of %s (stream %s)", channel.login, channel.stream)

    async def _ensure_user_token(self) -> None:
        """The bot's user token: the stored one, else the one from settings (then stored)."""
        twitch = self.settings.twitch
        stored = self.tokens.get(self.bot_id)
        if stored is not None:
            configured = twitch.user_token.get_secret_value() if twitch.user_token else None
            if configured and credentials.bare_token(configured) != stored["token"]:
                logger.warning(
                    "the bot's user token stored in Postgres differs from "
                    "LIVEMEMORY_TWITCH__USER_TOKEN: using the stored one (it is refreshed there); "
                    "the .env token is used only when none is stored",
                    extra={"action": "twitch_token_source"},
                )
            resp = await self._http.validate_token(stored["token"])
        elif twitch.user_token is None:
            raise credentials.missing("user_token")
        else:
            refresh = twitch.refresh_token.get_secret_value() if twitch.refresh_token else ""
            resp = await self.add_token(
                credentials.bare_token(twitch.user_token.get_secret_value()),
                credentials.bare_token(refresh),
            )
        scopes = list(resp.scopes)
        credentials.check_user_token(twitch, user_id=resp.user_id, scopes=scopes)
        needed = credentials.SEND_SCOPES[twitch.send_as]
        if needed not in scopes:
            logger.warning("the bot's user token lacks %s: sending may be refused", needed)

    async def _resolve_channels(self) -> list[Channel]:
        wanted = [c.strip().removeprefix("@") for c in self.settings.twitch.channels]
        ids: list[str | int] = [c for c in wanted if c.isdigit()]
        logins = [c.lower() for c in wanted if not c.isdigit()]
        users = await self.fetch_users(ids=ids or None, logins=logins or None)
        found = {u.name.lower() for u in users if u.name} | {str(u.id) for u in users}
        for name in [*map(str, ids), *logins]:
            if name not in found:
                raise credentials.invalid("channels", f"name an unknown channel: {name!r}")
        channels = []
        for user in users:
            stream, temporary = await self._stream_of(str(user.id))
            channels.append(
                Channel(id=str(user.id), login=str(user.name), stream=stream, temporary=temporary)
            )
        return channels

    async def _stream_of(self, broadcaster_id: str) -> tuple[str, bool]:
        async for stream in self.fetch_streams(user_ids=[broadcaster_id], max_results=1):
            return str(stream.id), False
        return identity.temporary_stream_id(), True

    # -- chat -------------------------------------------------------------------------------------
    def receive(self, event: models.ChatEvent) -> None:
        """Queue a chat event for the sink (called by the chat component, in delivery order)."""
        self._inbox.put_nowait(event)

    async def _pump_chat(self) -> None:
        while True:
            event = await self._inbox.get()
            try:
                await self.on_chat(event)
            except Exception as exc:  # one bad event must not stop the chat
                self.listener_errors.append(exc)
                logger.exception("chat sink failed on message %s", event.id)
            finally:
                self._inbox.task_done()

    async def flush_chat(self) -> None:
        """Wait until every received chat event was handed to the sink."""
        if self._pump is not None and not self._pump.done():
            await self._inbox.join()

    async def close(self, **options: Any) -> None:
        await super().close(**options)  # no more chat arrives after this
        if self._pump is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(CLOSE_FLUSH_SECONDS):
                    await self.flush_chat()
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pump
            self._pump = None

    async def event_message(self, payload: twitchio.ChatMessage) -> None:
        # No TwitchIO command processing: memory commands are answered per batch (components.chat).
        return None

    def is_privileged(self, channel: str) -> bool:
        return self.limiter.limit_for(channel) == self.limiter.privileged_limit

    def set_privileged(self, channel: str, privileged: bool) -> None:
        self.limiter.set_privileged(channel, privileged or channel == self.bot_id)

    def channel_of(self, stream: str) -> Channel | None:
        return next((c for c in self.channels.values() if c.stream == stream), None)

    async def send_reply(
        self, stream: str, text: str, *, turn_id: str | None = None, reply_to: str | None = None
    ) -> list[sending.Delivery]:
        """Send ``text`` to the channel of ``stream``; records the deliveries of ``turn_id``."""
        channel = self.channel_of(stream)
        if channel is None:
            logger.error("no joined channel for stream %s: reply not sent", stream)
            return []
        results = await self.sender.send(channel.id, text, reply_to=reply_to)
        if self.metrics is not None:
            for result in results:
                self.metrics.record_delivery(
                    channel.id, result.status.value, sending.rate_limited_answers(result)
                )
        if turn_id is not None and self.delivery_log is not None and results:
            log = self.delivery_log
            # sent is sent: the record waits for Postgres (an outage) rather than being lost
            await outage.patiently(
                lambda: log.record(turn_id, results),
                wait_seconds=self.settings.ingest.write_wait_seconds,
                what=f"deliveries of turn {turn_id}",
            )
        return results

    async def event_error(self, payload: twitchio.EventErrorPayload) -> None:
        self.listener_errors.append(payload.error)
        logger.error(
            "error in Twitch listener %s", payload.listener.__qualname__, exc_info=payload.error
        )

    async def event_command_error(self, payload: Any) -> None:
        self.listener_errors.append(payload.exception)
        logger.error("Twitch command error", exc_info=payload.exception)
