"""``ports.Cache`` contract over the in-process cache and Redis, and the single-flight helper."""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING

import pytest

from memory.adapters import redis as redis_adapter
from memory.recall import cache as cache_module

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from memory import ports


@pytest.fixture(params=["memory", "redis"])
async def cache(request: pytest.FixtureRequest) -> AsyncIterator[ports.Cache]:
    if request.param == "memory":
        yield cache_module.InProcessCache()
        return
    url = request.getfixturevalue("redis_url")
    redis_cache = redis_adapter.RedisCache.from_url(url, prefix=f"lmtest:{uuid.uuid4().hex}:")
    try:
        yield redis_cache
    finally:
        await redis_cache.delete_prefix("")
        await redis_cache.aclose()


async def test_missing_key_is_none(cache: ports.Cache) -> None:
    assert await cache.get("nope") is None


async def test_set_then_get_and_overwrite(cache: ports.Cache) -> None:
    await cache.set("k", "città ✓", 60)
    assert await cache.get("k") == "città ✓"
    await cache.set("k", "second", 60)
    assert await cache.get("k") == "second"


async def test_zero_ttl_stores_nothing_and_clears(cache: ports.Cache) -> None:
    await cache.set("k", "v", 60)
    await cache.set("k", "other", 0)
    assert await cache.get("k") is None


async def test_delete_prefix_deletes_only_matching(cache: ports.Cache) -> None:
    for key in ("v:10:recall:a", "v:10:profile:b", "v:100:recall:c", "s:episodic:x"):
        await cache.set(key, key, 60)
    assert await cache.delete_prefix("v:10:") == 2
    assert await cache.get("v:10:recall:a") is None
    assert await cache.get("v:10:profile:b") is None
    assert await cache.get("v:100:recall:c") == "v:100:recall:c"
    assert await cache.get("s:episodic:x") == "s:episodic:x"
    assert await cache.delete_prefix("v:10:") == 0


async def test_delete_prefix_is_literal(cache: ports.Cache) -> None:
    await cache.set("a*b", "1", 60)
    await cache.set("axb", "2", 60)
    await cache.set("a[x]b", "3", 60)
    assert await cache.delete_prefix("a*") == 1
    assert await cache.delete_prefix("a[x]") == 1
    assert await cache.get("axb") == "2"


async def test_in_process_ttl_expires_with_the_clock() -> None:
    now = [100.0]
    memory_cache = cache_module.InProcessCache(clock=lambda: now[0])
    await memory_cache.set("short", "s", 10)
    await memory_cache.set("long", "l", 600)
    now[0] += 11
    assert await memory_cache.get("short") is None
    assert await memory_cache.get("long") == "l"


async def test_in_process_cache_is_bounded() -> None:
    memory_cache = cache_module.InProcessCache(max_entries=2)
    await memory_cache.set("a", "1", 60)
    await memory_cache.set("b", "2", 60)
    assert await memory_cache.get("a") == "1"  # a is now the most recently used
    await memory_cache.set("c", "3", 60)
    assert await memory_cache.get("b") is None
    assert await memory_cache.get("a") == "1"
    assert len(memory_cache) == 2


async def test_redis_ttl_is_set_on_the_key(redis_url: str) -> None:
    prefix = f"lmtest:{uuid.uuid4().hex}:"
    redis_cache = redis_adapter.RedisCache.from_url(redis_url, prefix=prefix)
    try:
        await redis_cache.set("k", "v", 30)
        ttl_ms = await redis_cache._client.pttl(prefix + "k")
        assert 0 < ttl_ms <= 30_000
    finally:
        await redis_cache.delete_prefix("")
        await redis_cache.aclose()


# --- single-flight -----------------------------------------------------------------------------


async def test_single_flight_shares_one_call() -> None:
    flight: cache_module.SingleFlight[str] = cache_module.SingleFlight()
    release = asyncio.Event()
    calls = 0

    async def load() -> str:
        nonlocal calls
        calls += 1
        await release.wait()
        return "value"

    first = asyncio.create_task(flight.run("k", load))
    second = asyncio.create_task(flight.run("k", load))
    other = asyncio.create_task(flight.run("other", load))
    await asyncio.sleep(0)
    assert flight.in_flight("k")
    release.set()
    assert await first == ("value", False)
    assert await second == ("value", True)
    assert await other == ("value", False)
    assert calls == 2
    assert not flight.in_flight("k")


async def test_single_flight_one_waiter_leaving_does_not_cancel_the_call() -> None:
    flight: cache_module.SingleFlight[str] = cache_module.SingleFlight()
    release = asyncio.Event()

    async def load() -> str:
        await release.wait()
        return "value"

    leaving = asyncio.create_task(flight.run("k", load))
    staying = asyncio.create_task(flight.run("k", load))
    await asyncio.sleep(0)
    leaving.cancel()
    with pytest.raises(asyncio.CancelledError):
        await leaving
    release.set()
    assert await staying == ("value", True)


async def test_single_flight_last_waiter_leaving_cancels_the_call() -> None:
    flight: cache_module.SingleFlight[str] = cache_module.SingleFlight()
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def load() -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    waiter = asyncio.create_task(flight.run("k", load))
    await started.wait()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    await asyncio.wait_for(cancelled.wait(), timeout=5)
    for _ in range(10):  # the done callback runs a loop iteration after the task ends
        if not flight.in_flight("k"):
            break
        await asyncio.sleep(0)
    assert not flight.in_flight("k")


async def test_single_flight_error_reaches_every_waiter() -> None:
    flight: cache_module.SingleFlight[str] = cache_module.SingleFlight()
    release = asyncio.Event()

    async def load() -> str:
        await release.wait()
        raise ValueError("boom")

    tasks = [asyncio.create_task(flight.run("k", load)) for _ in range(3)]
    await asyncio.sleep(0)
    release.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert all(isinstance(r, ValueError) for r in results)
    assert not flight.in_flight("k")
