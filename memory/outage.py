"""Riding out an outage: retry a write while its store is unavailable, up to a deadline."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, TypeVar

from memory import errors

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

#: the longest pause between two tries
MAX_DELAY_SECONDS = 2.0


async def patiently(call: Callable[[], Awaitable[_T]], *, wait_seconds: float, what: str) -> _T:
    """``await call()``, trying again (0.1 s, doubling, at most 2 s apart) while it raises
    ``errors.StoreUnavailable``; after ``wait_seconds`` the last error is raised."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_seconds
    delay = 0.1
    while True:
        try:
            return await call()
        except errors.StoreUnavailable as exc:
            if loop.time() + delay > deadline:
                raise
            logger.warning(
                "%s: store unavailable (%s), trying again", what, exc, extra={"action": "retry"}
            )
        await asyncio.sleep(delay)
        delay = min(delay * 2, MAX_DELAY_SECONDS)
