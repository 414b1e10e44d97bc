"""One contract for every ``ports.WorkingHistory``: in-process and Redis."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from memory import models, ports
from memory.adapters import redis as redis_adapter
from memory.history import working

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

T0 = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)


def item(n: int, **kw: Any) -> models.HistoryItem:
    return models.HistoryItem(
        role=models.Role.USER,
        text=f"t{n}",
        ts=T0 + timedelta(seconds=n),
        login="alice",
        user_id="1001",
        message_id=f"m{n}",
        **kw,
    )


@pytest.fixture(params=["in_process", "redis"])
async def history(request: pytest.FixtureRequest) -> AsyncIterator[ports.WorkingHistory]:
    if request.param == "in_process":
        yield working.InProcessHistory(cap=5)
        return
    url = request.getfixturevalue("redis_url")
    client = await redis_adapter.connect(url, attempts=1)
    prefix = f"lmtest:{uuid.uuid4().hex}:"
    try:
        yield redis_adapter.RedisHistory(client, cap=5, prefix=prefix)
    finally:
        keys = [k async for k in client.scan_iter(match=prefix + "*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()


async def test_append_recent_and_cap(history: ports.WorkingHistory) -> None:
    await history.append("s1", [item(n) for n in range(3)])
    await history.append("s1", [item(n) for n in range(3, 8)])
    assert [i.text for i in await history.recent("s1")] == ["t3", "t4", "t5", "t6", "t7"]
    assert [i.text for i in await history.recent("s1", 2)] == ["t6", "t7"]
    assert await history.recent("s1", 0) == []
    assert await history.length("s1") == 5


async def test_streams_never_see_each_other(history: ports.WorkingHistory) -> None:
    await history.append("a", [item(1)])
    await history.append("b", [item(2)])
    assert [i.text for i in await history.recent("a")] == ["t1"]
    assert await history.recent("nothing") == []


async def test_replace_and_round_trip_of_every_field(history: ports.WorkingHistory) -> None:
    call = models.ToolCall(id="c1", name="set_relationship", arguments={"a": "alice"})
    rich = models.HistoryItem(
        role=models.Role.ASSISTANT, text="", ts=T0, turn_id="t1", tool_calls=(call,)
    )
    result = models.HistoryItem(
        role=models.Role.TOOL, text='{"ok": true}', ts=T0, tool_call_id="c1", tool_name="x"
    )
    await history.append("s1", [item(1)])
    await history.replace("s1", [rich, result])
    assert await history.recent("s1") == [rich, result]
