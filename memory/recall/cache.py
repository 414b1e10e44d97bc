"""In-process cache with TTLs (``ports.Cache`` without Redis) and a single-flight helper.

The in-process cache serves one process only (the embedded default); ``adapters.redis.RedisCache``
is the shared one. ``SingleFlight`` makes identical concurrent requests share one call.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

logger = logging.getLogger(__name__)

T = TypeVar("T")


class InProcessCache:
    """A string cache with a TTL per key, bounded in size (least recently used entries go first).

    Besides the strings of ``ports.Cache``, ``get_value`` / ``set_value`` keep any object as it is:
    in one process the memory stage caches its items themselves, without the JSON round trip a
    shared cache needs (the encoding was ~5 % of a cold memory stage; see docs/evaluation.md,
    'The embedded store').

    Parameters
    ----------
    max_entries:
        Entries kept at most; the least recently used are evicted beyond it.
    clock:
        Monotonic seconds (injectable for tests).
    """

    def __init__(
        self, *, max_entries: int = 10_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._entries: OrderedDict[str, tuple[float, object]] = OrderedDict()
        self._max_entries = max_entries
        self._clock = clock

    def get_value(self, key: str) -> object | None:
        """The value stored under ``key`` (by ``set`` or ``set_value``), None when missing or expired."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires_at, value = entry
        if expires_at <= self._clock():
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return value

    def set_value(self, key: str, value: object, ttl_seconds: float) -> None:
        """Keep ``value`` itself (not a copy) under ``key`` for ``ttl_seconds`` (0: delete it)."""
        if ttl_seconds <= 0:
            self._entries.pop(key, None)
            return
        self._entries[key] = (self._clock() + ttl_seconds, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)

    async def get(self, key: str) -> str | None:
        value = self.get_value(key)
        return value if isinstance(value, str) else None

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        return [await self.get(key) for key in keys]

    async def set(self, key: str, value: str, ttl_seconds: float) -> None:
        self.set_value(key, value, ttl_seconds)

    async def delete_prefix(self, prefix: str) -> int:
        doomed = [key for key in self._entries if key.startswith(prefix)]
        for key in doomed:
            del self._entries[key]
        return len(doomed)

    def __len__(self) -> int:
        return len(self._entries)


@dataclass(slots=True)
class _Call(Generic[T]):
    task: asyncio.Task[T]
    waiters: int = 0


class SingleFlight(Generic[T]):
    """Identical concurrent calls (same key) share one underlying call.

    The first caller starts the call as a task; later callers with the same key await the same task.
    A caller that is cancelled (timeout, budget) leaves; the call itself is cancelled only when its
    last waiter left, so one viewer's timeout never cancels another's fetch.
    """

    def __init__(self) -> None:
        self._calls: dict[str, _Call[T]] = {}

    def in_flight(self, key: str) -> bool:
        return key in self._calls

    def forget(self, prefix: str) -> int:
        """Later callers of the keys starting with ``prefix`` start a call of their own.

        Calls already running go on for the callers waiting on them (nothing is cancelled); used
        when what those calls read has been invalidated. Returns how many calls were forgotten.
        """
        doomed = [key for key in self._calls if key.startswith(prefix)]
        for key in doomed:
            del self._calls[key]
        return len(doomed)

    async def run(self, key: str, factory: Callable[[], Awaitable[T]]) -> tuple[T, bool]:
        """Run ``factory()`` once for concurrent callers of ``key``.

        Returns the result and whether this caller shared a call another caller started.
        """
        call = self._calls.get(key)
        shared = call is not None
        if call is None:
            call = _Call(task=asyncio.create_task(_await(factory), name=f"singleflight:{key}"))
            self._calls[key] = call
            call.task.add_done_callback(functools.partial(self._done, key, call))
        call.waiters += 1
        try:
            return await asyncio.shield(call.task), shared
        finally:
            call.waiters -= 1
            if call.waiters == 0 and not call.task.done():
                call.task.cancel()

    def _done(self, key: str, call: _Call[T], task: asyncio.Task[T]) -> None:
        if self._calls.get(key) is call:
            del self._calls[key]
        if not call.task.cancelled() and call.task.exception() is not None:
            # retrieved here so an abandoned failing call is not reported as "never retrieved"
            logger.debug("single-flight call %s failed", key, exc_info=call.task.exception())


async def _await(factory: Callable[[], Awaitable[T]]) -> T:
    return await factory()
