"""Outgoing chat: replies split to Twitch's 500-character limit, a sliding-window rate limiter per
channel, HTTP 429 waited out (``Ratelimit-Reset``) and retried a bounded number of times, and a
result per part so the caller can record what reached chat.

TwitchIO has no outgoing limiter and raises at once on a 429 (reference §5); the transport
(``bot.twitch.helix``) translates its exceptions into the ones below, so this module knows nothing
of TwitchIO and is tested with an injected clock and no real sleeping.
"""

from __future__ import annotations

import asyncio
import collections
import enum
import logging
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from bot import errors as bot_errors

if TYPE_CHECKING:
    from config.settings import TwitchSettings

logger = logging.getLogger(__name__)

#: Twitch's limit on one chat message, in characters
MAX_MESSAGE_CHARS = 500
#: wait after a 429 that carries no usable ``Ratelimit-Reset``
FALLBACK_WAIT_SECONDS = 1.0

_WORD = re.compile(r"(\s*)(\S+)")
_LINE_BREAKS = re.compile(r"[\r\n]+")


class RateLimited(bot_errors.BotError):
    """Twitch answered HTTP 429."""

    def __init__(self, reset_at: float | None = None) -> None:
        super().__init__(f"rate limited by Twitch (Ratelimit-Reset {reset_at})")
        #: epoch seconds of ``Ratelimit-Reset``; None when the header was missing
        self.reset_at = reset_at


class MessageDropped(bot_errors.BotError):
    """Twitch accepted the request but dropped the message (``drop_reason``)."""

    def __init__(self, code: str | None, reason: str | None) -> None:
        super().__init__(f"message dropped by Twitch: {code} ({reason})")
        self.code, self.reason = code, reason


class SendFailed(bot_errors.BotError):
    """The message could not be sent."""


class Clock(Protocol):
    """Time for the limiter and the 429 waits; tests inject one that never really sleeps."""

    def monotonic(self) -> float: ...

    def time(self) -> float:
        """Epoch seconds (``Ratelimit-Reset`` is an epoch)."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class Transport(Protocol):
    """Posts one chat message; returns Twitch's message id.

    Raises ``RateLimited``, ``MessageDropped`` or ``SendFailed``.
    """

    async def post(self, channel_id: str, text: str, *, reply_to: str | None = None) -> str: ...


class DeliveryStatus(enum.StrEnum):
    SENT = "sent"
    #: Twitch dropped it (duplicate, AutoMod, …): not retried
    DROPPED = "dropped"
    FAILED = "failed"


@dataclass(frozen=True, slots=True, kw_only=True)
class Delivery:
    """What became of one part of a reply."""

    #: position of the part in the reply, from 0
    part: int
    channel: str
    text: str
    status: DeliveryStatus
    #: Twitch's message id when sent
    message_id: str | None = None
    #: drop code or error text
    error: str | None = None
    #: requests made for this part (1 + the 429 retries)
    attempts: int = 1
    #: seconds waited because of 429 answers
    waited_seconds: float = 0.0


def rate_limited_answers(delivery: Delivery) -> int:
    """How many HTTP 429 answers one part met: every retry, and the last attempt when it failed
    on a 429 too."""
    retries = delivery.attempts - 1
    last = delivery.status is DeliveryStatus.FAILED and "rate limited" in (delivery.error or "")
    return retries + (1 if last else 0)


def split_message(text: str, limit: int = MAX_MESSAGE_CHARS) -> list[str]:
    """Split ``text`` on word boundaries into parts of at most ``limit`` characters of raw text.

    Line breaks become spaces (chat has none); other whitespace inside a part is kept as is, so the
    length measured is the length sent. A word longer than ``limit`` is cut.
    """
    text = _LINE_BREAKS.sub(" ", text)
    parts: list[str] = []
    current = ""
    for match in _WORD.finditer(text):
        gap, word = match.groups()
        candidate = current + gap + word if current else word
        if len(candidate) <= limit:
            current = candidate
            continue
        if current:
            parts.append(current)
        while len(word) > limit:
            parts.append(word[:limit])
            word = word[limit:]
        current = word
    if current:
        parts.append(current)
    return parts


class RateLimiter:
    """A sliding window per channel: at most ``limit`` messages in any ``window`` seconds, or
    ``privileged_limit`` where the bot is moderator or broadcaster."""

    def __init__(self, *, limit: int, privileged_limit: int, window: float, clock: Clock) -> None:
        self.limit = limit
        self.privileged_limit = privileged_limit
        self.window = window
        self.clock = clock
        self._sent: dict[str, collections.deque[float]] = collections.defaultdict(collections.deque)
        self._locks: dict[str, asyncio.Lock] = collections.defaultdict(asyncio.Lock)
        self._privileged: set[str] = set()

    @classmethod
    def from_settings(cls, settings: TwitchSettings, clock: Clock) -> RateLimiter:
        return cls(
            limit=settings.rate_limit_messages,
            privileged_limit=settings.rate_limit_messages_moderator,
            window=settings.rate_limit_window_seconds,
            clock=clock,
        )

    def set_privileged(self, channel: str, privileged: bool) -> None:
        """Record whether the bot is moderator or broadcaster in ``channel``."""
        if privileged:
            self._privileged.add(channel)
        else:
            self._privileged.discard(channel)

    def limit_for(self, channel: str) -> int:
        return self.privileged_limit if channel in self._privileged else self.limit

    async def acquire(self, channel: str) -> float:
        """Wait for a slot in ``channel``'s window and take it; returns the seconds waited."""
        waited = 0.0
        async with self._locks[channel]:
            sent = self._sent[channel]
            while True:
                now = self.clock.monotonic()
                while sent and sent[0] <= now - self.window:
                    sent.popleft()
                if len(sent) < self.limit_for(channel):
                    sent.append(now)
                    return waited
                delay = sent[0] + self.window - now
                logger.debug("chat rate limit reached in %s, waiting %.2fs", channel, delay)
                await self.clock.sleep(delay)
                waited += delay


class Sender:
    """Splits, rate-limits and sends replies; one ``Delivery`` per part, never raises for Twitch."""

    def __init__(
        self,
        transport: Transport,
        limiter: RateLimiter,
        *,
        clock: Clock,
        max_retries: int = 3,
        max_wait: float = 60.0,
        limit: int = MAX_MESSAGE_CHARS,
    ) -> None:
        self.transport = transport
        self.limiter = limiter
        self.clock = clock
        self.max_retries = max_retries
        self.max_wait = max_wait
        self.limit = limit

    async def send(self, channel: str, text: str, *, reply_to: str | None = None) -> list[Delivery]:
        """Send ``text`` to ``channel`` (a broadcaster id), split as needed, in order."""
        return [
            await self._send_part(channel, index, part, reply_to if index == 0 else None)
            for index, part in enumerate(split_message(text, self.limit))
        ]

    def _wait_for(self, exc: RateLimited) -> float:
        if exc.reset_at is None:
            return FALLBACK_WAIT_SECONDS
        return min(max(exc.reset_at - self.clock.time(), 0.0), self.max_wait)

    async def _send_part(
        self, channel: str, index: int, text: str, reply_to: str | None
    ) -> Delivery:
        attempts = 0
        waited = 0.0
        while True:
            attempts += 1
            await self.limiter.acquire(channel)
            try:
                message_id = await self.transport.post(channel, text, reply_to=reply_to)
            except RateLimited as exc:
                if attempts > self.max_retries:
                    return self._result(
                        channel,
                        index,
                        text,
                        DeliveryStatus.FAILED,
                        attempts,
                        waited,
                        error=str(exc),
                    )
                delay = self._wait_for(exc)
                logger.warning(
                    "Twitch rate limit (429) on %s, retrying in %.1fs",
                    channel,
                    delay,
                    extra={"action": "chat_rate_limited"},
                )
                await self.clock.sleep(delay)
                waited += delay
            except MessageDropped as exc:
                logger.warning("Twitch dropped a reply part in %s: %s", channel, exc.code)
                return self._result(
                    channel,
                    index,
                    text,
                    DeliveryStatus.DROPPED,
                    attempts,
                    waited,
                    error=exc.code or str(exc),
                )
            except SendFailed as exc:
                logger.error("sending a reply part to %s failed: %s", channel, exc)
                return self._result(
                    channel, index, text, DeliveryStatus.FAILED, attempts, waited, error=str(exc)
                )
            else:
                return self._result(
                    channel,
                    index,
                    text,
                    DeliveryStatus.SENT,
                    attempts,
                    waited,
                    message_id=message_id,
                )

    @staticmethod
    def _result(
        channel: str,
        index: int,
        text: str,
        status: DeliveryStatus,
        attempts: int,
        waited: float,
        *,
        message_id: str | None = None,
        error: str | None = None,
    ) -> Delivery:
        return Delivery(
            part=index,
            channel=channel,
            text=text,
            status=status,
            message_id=message_id,
            error=error,
            attempts=attempts,
            waited_seconds=waited,
        )
