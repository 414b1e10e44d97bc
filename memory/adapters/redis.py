"""Redis adapters: the shared cache (``RedisCache``) and the working history."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import TYPE_CHECKING, Any

import redis.asyncio as aioredis
import redis.exceptions

from memory import errors, models

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

logger = logging.getLogger(__name__)


class RedisCache:
    """``ports.Cache`` on Redis: string values with a TTL per key, prefix deletion with SCAN.

    Parameters
    ----------
    client:
        A ``redis.asyncio.Redis`` client. Injected clients are never closed here (whoever opens a
        resource closes it); :meth:`from_url` opens one that :meth:`aclose` closes.
    prefix:
        Prepended to every key (e.g. ``livememory:cache:``), so one Redis serves several apps/tests.
    """

    _SCAN_COUNT = 500

    def __init__(self, client: aioredis.Redis, *, prefix: str = "livememory:cache:") -> None:
        self._client = client
        self._prefix = prefix
        self._owns_client = False

    @classmethod
    def from_url(cls, url: str, *, prefix: str = "livememory:cache:") -> RedisCache:
        cache = cls(aioredis.Redis.from_url(url), prefix=prefix)
        cache._owns_client = True
        return cache

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def get(self, key: str) -> str | None:
        with self._wrap():
            value: Any = await self._client.get(self._prefix + key)
        if value is None:
            return None
        return value.decode("utf-8") if isinstance(value, bytes) else str(value)

    async def set(self, key: str, value: str, ttl_seconds: float) -> None:
        with self._wrap():
            if ttl_seconds <= 0:
                await self._client.delete(self._prefix + key)
                return
            await self._client.set(self._prefix + key, value, px=max(1, int(ttl_seconds * 1000)))

    async def delete_prefix(self, prefix: str) -> int:
        pattern = _glob_escape(self._prefix + prefix) + "*"
        deleted = 0
        with self._wrap():
            batch: list[Any] = []
            async for key in self._client.scan_iter(match=pattern, count=self._SCAN_COUNT):
                batch.append(key)
                if len(batch) >= self._SCAN_COUNT:
                    deleted += await self._client.unlink(*batch)
                    batch = []
            if batch:
                deleted += await self._client.unlink(*batch)
        return deleted

    @staticmethod
    @contextlib.contextmanager
    def _wrap() -> Iterator[None]:
        try:
            yield
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError) as exc:
            raise errors.StoreUnavailable(f"Redis cache unavailable: {exc}") from exc


def _glob_escape(text: str) -> str:
    """Escape Redis glob metacharacters so a prefix matches literally."""
    return "".join(f"\\{ch}" if ch in "*?[]\\" else ch for ch in text)


class RedisHistory:
    """``ports.WorkingHistory`` on Redis: a capped list per stream (JSON items), shared by every
    bot process of a channel. The transcript stays the truth; ``working.rebuild`` refills it."""

    def __init__(self, client: aioredis.Redis, *, cap: int, prefix: str = "livememory:") -> None:
        self._client = client
        self.cap = cap
        self._prefix = prefix + "history:"

    def _key(self, stream: str) -> str:
        return self._prefix + stream

    async def append(self, stream: str, items: Sequence[models.HistoryItem]) -> None:
        if not items:
            return
        key = self._key(stream)
        with RedisCache._wrap():
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.rpush(key, *[json.dumps(item.to_json()) for item in items])
                pipe.ltrim(key, -self.cap, -1)
                await pipe.execute()

    async def recent(self, stream: str, limit: int | None = None) -> list[models.HistoryItem]:
        if limit == 0:
            return []
        start = -min(limit, self.cap) if limit is not None else 0
        with RedisCache._wrap():
            raw: list[Any] = await self._client.lrange(self._key(stream), start, -1)
        return [models.HistoryItem.from_json(json.loads(value)) for value in raw]

    async def replace(self, stream: str, items: Sequence[models.HistoryItem]) -> None:
        key = self._key(stream)
        with RedisCache._wrap():
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.delete(key)
                if items:
                    pipe.rpush(key, *[json.dumps(item.to_json()) for item in items[-self.cap :]])
                await pipe.execute()

    async def length(self, stream: str) -> int:
        with RedisCache._wrap():
            return int(await self._client.llen(self._key(stream)))


async def connect(url: str, *, attempts: int, retry_seconds: float = 1.0) -> aioredis.Redis:
    """Open a Redis client and PING it, with bounded, logged retries."""
    client = aioredis.Redis.from_url(url)
    for attempt in range(1, attempts + 1):
        try:
            await client.ping()
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError) as exc:
            if attempt == attempts:
                await client.aclose()
                raise errors.StoreUnavailable(
                    f"cannot connect to Redis after {attempts} attempts: {exc}"
                ) from exc
            logger.warning("Redis not reachable (%s), %d attempt(s) left", exc, attempts - attempt)
            await asyncio.sleep(retry_seconds)
        else:
            return client
    raise AssertionError("unreachable")
