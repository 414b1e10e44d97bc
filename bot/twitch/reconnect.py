"""No chat lost across an EventSub ``session_reconnect``.

Twitch keeps delivering notifications on the old connection until the new one is welcomed, then
closes it. TwitchIO 3.3 handles the reconnect inside the old socket's listen loop: while it connects
the new socket that loop reads nothing, and afterwards it closes the old socket without reading what
arrived meanwhile, so those chat messages are silently dropped (shown by ``tests/test_twitch_e2e``
with the fake Twitch).

``install()`` wraps two methods of TwitchIO's ``Websocket``: after a reconnect, the old socket's
buffered frames are read and their notifications dispatched before it is closed (until Twitch
closes it, at most ``DRAIN_SECONDS``). Twitch may then deliver a message twice; the chat component
drops repeated message ids.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

import aiohttp
from twitchio.eventsub import websockets

logger = logging.getLogger(__name__)

#: the longest the old socket is read after the new one is welcomed
DRAIN_SECONDS = 2.0
_MARK = "_livememory_reconnect_drain"
#: sockets handling a ``session_reconnect`` right now (TwitchIO's Websocket has ``__slots__``)
_reconnecting: set[Any] = set()


async def drain(socket: Any) -> int:
    """Dispatch the notifications still buffered on ``socket`` (a TwitchIO ``Websocket``)."""
    ws: aiohttp.ClientWebSocketResponse | None = socket._socket
    if ws is None:
        return 0
    count = 0
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(DRAIN_SECONDS):
            while not ws.closed:
                message = await ws.receive()
                if message.type is not aiohttp.WSMsgType.TEXT:
                    break
                data = json.loads(message.data)
                if data.get("metadata", {}).get("message_type") == "notification":
                    await socket._process_notification(data)
                    count += 1
    if count:
        logger.info("%d notification(s) read from the old EventSub socket after a reconnect", count)
    return count


def install() -> bool:
    """Wrap TwitchIO's reconnect so the old socket is drained; idempotent. False if not possible."""
    cls = websockets.Websocket
    if getattr(cls, _MARK, False):
        return True
    if not all(hasattr(cls, n) for n in ("_process_reconnect", "_process_notification", "close")):
        logger.warning("TwitchIO's Websocket changed: reconnect draining not installed")
        return False
    process_reconnect = cls._process_reconnect
    close = cls.close

    async def _process_reconnect(self: Any, data: Any) -> None:
        _reconnecting.add(self)
        try:
            await process_reconnect(self, data)
        finally:
            _reconnecting.discard(self)

    async def _close(self: Any, *args: Any, **kwargs: Any) -> None:
        if self in _reconnecting and not self._closing:
            _reconnecting.discard(self)
            await drain(self)
        await close(self, *args, **kwargs)

    cls._process_reconnect = _process_reconnect  # type: ignore[method-assign]
    cls.close = _close  # type: ignore[method-assign]
    setattr(cls, _MARK, True)
    return True
