"""Redis adapters: the shared cache (``RedisCache``) and the working history."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import json
import logging
from typing import TYPE_CHECKING, Any

import redis.asyncio as aioredis
import redis.exceptions

from memory import errors, models, outage

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

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        if not keys:
            return []
        with self._wrap():
            values: list[Any] = await self._client.mget([self._prefix + key for key in keys])
        return [
            None if v is None else v.decode("utf-8") if isinstance(v, bytes) else str(v)
            for v in values
        ]

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
        """Driver errors → ``errors.StoreUnavailable``; the outage is told once (``outage``)."""
        with outage.watched(outage.REDIS, "Redis"):
            try:
                yield
            except (
                redis.exceptions.ConnectionError,
                redis.exceptions.TimeoutError,
                OSError,
            ) as exc:
                raise errors.StoreUnavailable(f"Redis cache unavailable: {exc}") from exc


def _glob_escape(text: str) -> str:
    """Escape Redis glob metacharacters so a prefix matches literally."""
    return "".join(f"\\{ch}" if ch in "*?[]\\" else ch for ch in text)


#: the items of a history list newer than the reader's sequence number, or all of them when the
#: reader is too far behind (or the list was replaced or lost): KEYS list, sequence; ARGV the
#: reader's sequence (-1: none), the cap. Returns {sequence, whole list?, items}.
_SINCE = """
local seq = tonumber(redis.call('GET', KEYS[2]) or '0')
local last = tonumber(ARGV[1])
if last >= 0 and seq >= last and seq - last <= tonumber(ARGV[2]) then
    if seq == last then return {seq, 0, {}} end
    return {seq, 0, redis.call('LRANGE', KEYS[1], last - seq, -1)}
end
return {seq, 1, redis.call('LRANGE', KEYS[1], 0, -1)}
"""


@dataclasses.dataclass(slots=True)
class _Mirror:
    """This process's decoded copy of one stream's list, as of sequence number ``seq``."""

    seq: int = -1
    items: collections.deque[models.HistoryItem] = dataclasses.field(
        default_factory=collections.deque
    )


class RedisHistory:
    """``ports.WorkingHistory`` on Redis: a capped list per stream (JSON items), shared by every
    bot process of a channel. The transcript stays the truth; ``working.rebuild`` refills it.

    Each list has a sequence number (items ever appended; a replacement jumps it past the cap).
    A reader keeps a decoded copy and asks, in one round trip (a script), only for the items
    newer than its copy: reading the history each turn costs the new items, not the whole list.
    """

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        cap: int,
        prefix: str = "livememory:",
        ttl_seconds: int = 0,
    ) -> None:
        self._client = client
        self.cap = cap
        #: a stream's list (and its sequence number) expires this long after its last write
        #: (0: never); the transcript rebuilds it when the stream is served again
        self.ttl_seconds = ttl_seconds
        self._prefix = prefix + "history:"
        self._since = client.register_script(_SINCE)
        self._mirrors: dict[str, _Mirror] = {}

    def _key(self, stream: str) -> str:
        return self._prefix + stream

    def _seq_key(self, stream: str) -> str:
        return self._prefix + "seq:" + stream

    async def append(self, stream: str, items: Sequence[models.HistoryItem]) -> None:
        if not items:
            return
        key = self._key(stream)
        with RedisCache._wrap():
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.rpush(key, *[json.dumps(item.to_json()) for item in items])
                pipe.ltrim(key, -self.cap, -1)
                pipe.incrby(self._seq_key(stream), len(items))
                self._expire(pipe, stream)
                _, _, seq, *_ = await pipe.execute()
        mirror = self._mirrors.get(stream)
        if mirror is not None and mirror.seq == int(seq) - len(items):  # nobody wrote in between
            self._extend(mirror, items, int(seq))

    async def recent(self, stream: str, limit: int | None = None) -> list[models.HistoryItem]:
        if limit == 0:
            return []
        mirror = await self._sync(stream)
        items = list(mirror.items)
        return items[-min(limit, self.cap) :] if limit is not None else items

    async def _sync(self, stream: str) -> _Mirror:
        mirror = self._mirrors.setdefault(stream, _Mirror())
        with RedisCache._wrap():
            seq, whole, raw = await self._since(
                keys=[self._key(stream), self._seq_key(stream)], args=[mirror.seq, self.cap]
            )
        new = [models.HistoryItem.from_json(json.loads(value)) for value in raw]
        if whole:
            mirror.items.clear()
        self._extend(mirror, new, int(seq))
        return mirror

    def _extend(self, mirror: _Mirror, items: Sequence[models.HistoryItem], seq: int) -> None:
        mirror.items.extend(items)
        while len(mirror.items) > self.cap:
            mirror.items.popleft()
        mirror.seq = seq

    async def replace(self, stream: str, items: Sequence[models.HistoryItem]) -> None:
        key = self._key(stream)
        self._mirrors.pop(stream, None)
        with RedisCache._wrap():
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.delete(key)
                if items:
                    pipe.rpush(key, *[json.dumps(item.to_json()) for item in items[-self.cap :]])
                pipe.incrby(self._seq_key(stream), self.cap + 1)  # every reader reloads
                self._expire(pipe, stream)
                await pipe.execute()

    def _expire(self, pipe: Any, stream: str) -> None:
        """Both keys expire together: a reader then finds a lower sequence number and reloads."""
        if self.ttl_seconds > 0:
            pipe.expire(self._key(stream), self.ttl_seconds)
            pipe.expire(self._seq_key(stream), self.ttl_seconds)

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
