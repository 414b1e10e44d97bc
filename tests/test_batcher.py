from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory import models
from memory.history import batcher

T0 = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)


def event(n: int, seconds: float, stream: str = "s1") -> models.ChatEvent:
    return models.ChatEvent(
        id=f"m{n}",
        stream=stream,
        user_id=str(1000 + n % 3),
        login=f"viewer{n % 3}",
        text=f"message {n}",
        ts=T0 + timedelta(seconds=seconds),
    )


def ids(batches: list[models.Batch]) -> list[list[str]]:
    return [b.message_ids for b in batches]


def test_batch_closes_when_the_window_of_chat_time_has_passed() -> None:
    b = batcher.Batcher(window_seconds=2.0, max_messages=20)
    assert b.feed(event(1, 0.0)) == []
    assert b.feed(event(2, 1.9)) == []
    closed = b.feed(event(3, 2.0))
    assert ids(closed) == [["m1", "m2"]]
    assert ids(b.flush()) == [["m3"]]


def test_batch_closes_at_max_messages_first() -> None:
    b = batcher.Batcher(window_seconds=60.0, max_messages=3)
    out: list[models.Batch] = []
    for n in range(7):
        out += b.feed(event(n, n * 0.1))
    assert ids(out) == [["m0", "m1", "m2"], ["m3", "m4", "m5"]]
    assert b.pending() == 1


def test_streams_are_batched_independently() -> None:
    b = batcher.Batcher(window_seconds=2.0, max_messages=20)
    b.feed(event(1, 0.0, "a"))
    b.feed(event(2, 0.5, "b"))
    closed = b.feed(event(3, 2.1, "a"))
    assert ids(closed) == [["m1"]]
    assert sorted(ids(b.flush())) == [["m2"], ["m3"]]


def test_due_batches_close_on_the_wall_clock_for_live_chat() -> None:
    b = batcher.Batcher(window_seconds=2.0, max_messages=20)
    b.feed(event(1, 0.0, "a"))
    b.feed(event(2, 1.0, "b"))
    assert b.next_deadline() == T0 + timedelta(seconds=2)
    assert b.close_due(T0 + timedelta(seconds=1.5)) == []
    assert ids(b.close_due(T0 + timedelta(seconds=2.5))) == [["m1"]]
    assert b.due(T0 + timedelta(seconds=3)) == ["b"]


def test_flush_of_a_stream_without_open_batch_is_empty() -> None:
    b = batcher.Batcher(window_seconds=2.0, max_messages=20)
    assert b.flush(["nothing"]) == []
