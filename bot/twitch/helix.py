"""Helix through TwitchIO: base URLs from settings, the HTTP session that sees ``Ratelimit-*``
headers, and the chat transport of ``sending``.

TwitchIO reads its base URLs from two class variables and a module global at call time, with no
constructor argument or environment variable (reference §2), so patching them is the only way to
point it at a mock. Its ``HTTPException`` carries the status and JSON body of an error but not the
headers; the session below records the ``Ratelimit-Reset`` header of a 429 through an aiohttp trace
hook into a per-call holder (a context variable), so concurrent sends in different channels never
see each other's headers.
"""

from __future__ import annotations

import contextvars
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import aiohttp
import twitchio
import twitchio.eventsub.websockets as tio_websockets

from bot.twitch import sending

if TYPE_CHECKING:
    from types import SimpleNamespace

    from config.settings import TwitchSettings

logger = logging.getLogger(__name__)


def apply_base_urls(settings: TwitchSettings) -> None:
    """Point TwitchIO at the configured Helix, id/OAuth and EventSub WebSocket URLs."""
    twitchio.Route.BASE = _with_slash(settings.api_base)
    twitchio.Route.ID_BASE = _with_slash(settings.id_base)
    tio_websockets.WSS = settings.eventsub_ws


def _with_slash(url: str) -> str:
    # TwitchIO builds f"{base}{path}": the base must end with "/"
    return url if url.endswith("/") else url + "/"


@dataclass(slots=True)
class _Seen:
    status: int | None = None
    reset: str | None = None


_seen: contextvars.ContextVar[_Seen | None] = contextvars.ContextVar("twitch_seen", default=None)


async def _on_request_end(
    session: aiohttp.ClientSession, context: SimpleNamespace, params: aiohttp.TraceRequestEndParams
) -> None:
    holder = _seen.get()
    if holder is not None:
        holder.status = params.response.status
        holder.reset = params.response.headers.get("Ratelimit-Reset")


def traced_session() -> aiohttp.ClientSession:
    """The aiohttp session to give TwitchIO (``Bot(session=...)``); its opener closes it."""
    trace = aiohttp.TraceConfig()
    trace.on_request_end.append(_on_request_end)
    return aiohttp.ClientSession(trace_configs=[trace])


def _reset_epoch(raw: str | None) -> float | None:
    try:
        return float(raw) if raw is not None else None
    except ValueError:
        return None


def translate(
    exc: Exception, reset_header: str | None = None
) -> sending.RateLimited | sending.MessageDropped | sending.SendFailed:
    """TwitchIO's exception of one send → the ``sending`` exception the sender understands."""
    if isinstance(exc, twitchio.MessageRejectedError):
        return sending.MessageDropped(exc.code, exc.message)
    if isinstance(exc, twitchio.HTTPException) and exc.status == 429:
        return sending.RateLimited(_reset_epoch(reset_header))
    if isinstance(exc, twitchio.HTTPException):
        message = exc.extra.get("message") if isinstance(exc.extra, dict) else exc.extra
        return sending.SendFailed(f"HTTP {exc.status}: {message}")
    return sending.SendFailed(f"{type(exc).__name__}: {exc}")


class HelixTransport:
    """``sending.Transport`` over TwitchIO's ``send_message`` (``POST chat/messages``)."""

    def __init__(
        self, client: twitchio.Client, *, sender_id: str, send_as: Literal["app", "user"]
    ) -> None:
        self.client = client
        self.sender_id = sender_id
        self.send_as = send_as

    async def post(self, channel_id: str, text: str, *, reply_to: str | None = None) -> str:
        holder = _Seen()
        token = _seen.set(holder)
        kwargs: dict[str, Any] = {"token_for": self.sender_id} if self.send_as == "user" else {}
        try:
            channel = self.client.create_partialuser(user_id=channel_id)
            sent = await channel.send_message(
                text, sender=self.sender_id, reply_to_message_id=reply_to, **kwargs
            )
        except (twitchio.TwitchioException, aiohttp.ClientError, OSError, ValueError) as exc:
            raise translate(exc, holder.reset) from exc
        finally:
            _seen.reset(token)
        return str(sent.id)
