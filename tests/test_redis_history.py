"""The Redis working history shared by several processes: each keeps a decoded copy and reads only
what is new, yet every reader sees what every writer wrote."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import pytest

from memory.adapters import redis as redis_adapter
from tests.test_working_history import item

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    import redis.asyncio as aioredis

    from memory import models
    from tests.conftest import SettingsFactory

CAP = 5


@pytest.fixture
async def client(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    client = await redis_adapter.connect(redis_url, attempts=1)
    yield client
    await client.aclose()


@pytest.fixture
async def prefix(client: aioredis.Redis) -> AsyncIterator[str]:
    prefix = f"lmtest:{uuid.uuid4().hex}:"
    yield prefix
    keys = [k async for k in client.scan_iter(match=prefix + "*")]
    if keys:
        await client.delete(*keys)


def ids(items: Sequence[models.HistoryItem]) -> list[str | None]:
    return [i.message_id for i in items]


async def test_readers_see_every_writer(client: aioredis.Redis, prefix: str) -> None:
    a = redis_adapter.RedisHistory(client, cap=CAP, prefix=prefix)
    b = redis_adapter.RedisHistory(client, cap=CAP, prefix=prefix)
    await a.append("s1", [item(1), item(2)])
    assert ids(await b.recent("s1")) == ["m1", "m2"]
    await b.append("s1", [item(3)])  # b's copy is current: extended without a read
    await a.append("s1", [item(4)])  # a's copy missed item 3: it reloads what is new
    assert ids(await a.recent("s1")) == ["m1", "m2", "m3", "m4"]
    assert ids(await b.recent("s1")) == ["m1", "m2", "m3", "m4"]
    await a.append("s1", [item(n) for n in range(5, 9)])  # past the cap
    assert ids(await b.recent("s1")) == ["m4", "m5", "m6", "m7", "m8"]
    assert ids(await b.recent("s1", 2)) == ["m7", "m8"]
    assert ids(await a.recent("s1")) == ids(await b.recent("s1"))


async def test_a_reader_far_behind_or_a_replaced_list_reloads_whole(
    client: aioredis.Redis, prefix: str
) -> None:
    a = redis_adapter.RedisHistory(client, cap=CAP, prefix=prefix)
    b = redis_adapter.RedisHistory(client, cap=CAP, prefix=prefix)
    await a.append("s1", [item(1)])
    assert ids(await b.recent("s1")) == ["m1"]
    await a.append("s1", [item(n) for n in range(2, 12)])  # b is 10 items (> cap) behind
    assert ids(await b.recent("s1")) == ["m7", "m8", "m9", "m10", "m11"]
    await a.replace("s1", [item(20), item(21)])
    assert ids(await b.recent("s1")) == ["m20", "m21"]
    await client.delete(prefix + "history:s1", prefix + "history:seq:s1")  # lost (FLUSHDB)
    assert await b.recent("s1") == []
    await a.append("s1", [item(30)])
    assert ids(await b.recent("s1")) == ["m30"]


async def test_history_keys_carry_the_configured_ttl(client: aioredis.Redis, prefix: str) -> None:
    """A stream's list and its sequence number expire together after the last write."""
    history = redis_adapter.RedisHistory(client, cap=CAP, prefix=prefix, ttl_seconds=600)
    await history.append("s1", [item(1)])
    keys = [f"{prefix}history:s1", f"{prefix}history:seq:s1"]
    for key in keys:
        assert 590 <= await client.ttl(key) <= 600, key
    await client.expire(keys[0], 5)  # a later write renews the expiry
    await history.replace("s1", [item(2)])
    for key in keys:
        assert 590 <= await client.ttl(key) <= 600, key
    # both gone (as when they expire): a reader with an old copy reloads, nothing stale is served
    await client.delete(*keys)
    await history.append("s1", [item(3)])
    assert ids(await history.recent("s1")) == ["m3"]
    never = redis_adapter.RedisHistory(client, cap=CAP, prefix=prefix + "x:")
    await never.append("s1", [item(1)])
    assert await client.ttl(f"{prefix}x:history:s1") == -1  # 0: no expiry


async def test_the_runtime_gives_the_history_the_settings_ttl(
    make_settings: SettingsFactory, redis_url: str, prefix: str, client: aioredis.Redis
) -> None:
    from memory import runtime

    settings = make_settings(redis_url=redis_url, redis={"key_prefix": prefix})
    assert settings.redis.history_ttl_seconds == 7 * 24 * 3600  # the documented default
    async with runtime.lifespan(settings, role="admin", no_llm=True) as services:
        await services.history.append("s1", [item(1)])
    assert 7 * 24 * 3600 - 10 <= await client.ttl(f"{prefix}history:s1") <= 7 * 24 * 3600
