"""Outgoing chat: splitting, the per-channel limiter, 429 retries, drops, and the delivery records."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import asyncpg
import pytest
import twitchio
from hypothesis import given
from hypothesis import strategies as st
from twitchio.models import SentMessage

from bot.twitch import deliveries, helix, sending, tokens
from tests.fakes import clock as fake_clock

if TYPE_CHECKING:
    from memory.adapters import postgres


# -- splitting ---------------------------------------------------------------------------------
def test_short_text_is_one_part() -> None:
    assert sending.split_message("hello @alice") == ["hello @alice"]


def test_long_text_splits_on_word_boundaries_within_the_limit() -> None:
    words = [f"word{i}" for i in range(300)]
    parts = sending.split_message(" ".join(words))
    assert len(parts) > 1
    assert all(len(p) <= 500 for p in parts)
    assert " ".join(parts).split() == words
    # no word is cut: every part starts and ends on a whole word
    assert all(p.split()[0] in words and p.split()[-1] in words for p in parts)


def test_length_is_measured_on_the_raw_text_not_collapsed_whitespace() -> None:
    # TwitchIO measures " ".join(text.split()) but sends the raw text (reference §1.2)
    text = "a" + " " * 300 + "b" + " " * 300 + "c"
    parts = sending.split_message(text)
    assert all(len(p) <= 500 for p in parts)
    assert parts == ["a" + " " * 300 + "b", "c"]


def test_a_word_longer_than_the_limit_is_cut() -> None:
    parts = sending.split_message("x" * 1200)
    assert [len(p) for p in parts] == [500, 500, 200]


def test_line_breaks_become_spaces_and_blank_text_sends_nothing() -> None:
    assert sending.split_message("one\ntwo\r\nthree") == ["one two three"]
    assert sending.split_message("   \n ") == []


@given(st.lists(st.text(alphabet="abcdé🙂 ", min_size=1, max_size=60), max_size=40))
def test_split_property(chunks: list[str]) -> None:
    text = " ".join(chunks)
    parts = sending.split_message(text, 50)
    assert all(0 < len(p) <= 50 for p in parts)
    assert "".join("".join(parts).split()) == "".join(text.split())


# -- the limiter -------------------------------------------------------------------------------
async def test_limiter_waits_for_the_window_after_twenty_messages() -> None:
    clock = fake_clock.FakeClock()
    limiter = sending.RateLimiter(limit=20, privileged_limit=100, window=30.0, clock=clock)
    for _ in range(20):
        assert await limiter.acquire("2002") == 0.0
    clock.advance(10.0)
    waited = await limiter.acquire("2002")
    assert waited == pytest.approx(20.0)  # the oldest slot frees 30 s after it was taken
    # another channel has its own window
    assert await limiter.acquire("3003") == 0.0


async def test_limiter_allows_a_hundred_where_the_bot_is_moderator() -> None:
    clock = fake_clock.FakeClock()
    limiter = sending.RateLimiter(limit=20, privileged_limit=100, window=30.0, clock=clock)
    limiter.set_privileged("2002", True)
    for _ in range(100):
        await limiter.acquire("2002")
    assert clock.sleeps == []
    await limiter.acquire("2002")
    assert clock.sleeps == [pytest.approx(30.0)]
    limiter.set_privileged("2002", False)
    assert limiter.limit_for("2002") == 20


# -- the sender --------------------------------------------------------------------------------
class ScriptedTransport:
    """A transport answering from a script of exceptions (None: success)."""

    def __init__(self, *script: Exception | None) -> None:
        self.script = list(script)
        self.posts: list[tuple[str, str]] = []

    async def post(self, channel_id: str, text: str, *, reply_to: str | None = None) -> str:
        self.posts.append((channel_id, text))
        outcome = self.script.pop(0) if self.script else None
        if outcome is not None:
            raise outcome
        return f"msg-{len(self.posts)}"


def make_sender(
    transport: ScriptedTransport, clock: fake_clock.FakeClock, **kwargs: Any
) -> sending.Sender:
    limiter = sending.RateLimiter(limit=20, privileged_limit=100, window=30.0, clock=clock)
    return sending.Sender(transport, limiter, clock=clock, **kwargs)


async def test_429_is_waited_out_until_ratelimit_reset_and_retried() -> None:
    clock = fake_clock.FakeClock()
    transport = ScriptedTransport(sending.RateLimited(reset_at=clock.time() + 7.0))
    [delivery] = await make_sender(transport, clock).send("2002", "hello")
    assert delivery.status is sending.DeliveryStatus.SENT
    assert delivery.attempts == 2
    assert delivery.message_id == "msg-2"
    assert clock.sleeps == [pytest.approx(7.0)]
    assert delivery.waited_seconds == pytest.approx(7.0)


async def test_429_without_header_waits_a_fallback_and_a_reset_in_the_past_waits_nothing() -> None:
    clock = fake_clock.FakeClock()
    transport = ScriptedTransport(
        sending.RateLimited(None), sending.RateLimited(reset_at=clock.time() - 5)
    )
    [delivery] = await make_sender(transport, clock).send("2002", "hello")
    assert delivery.status is sending.DeliveryStatus.SENT
    assert clock.sleeps == [sending.FALLBACK_WAIT_SECONDS, 0.0]


async def test_429_retries_are_bounded_and_a_far_reset_is_capped() -> None:
    clock = fake_clock.FakeClock()
    transport = ScriptedTransport(*[sending.RateLimited(clock.time() + 3600)] * 10)
    [delivery] = await make_sender(transport, clock, max_retries=2, max_wait=60.0).send(
        "2002", "hello"
    )
    assert delivery.status is sending.DeliveryStatus.FAILED
    assert delivery.attempts == 3
    assert len(transport.posts) == 3
    assert clock.sleeps == [60.0, 60.0]


async def test_a_dropped_message_is_recorded_and_not_retried() -> None:
    clock = fake_clock.FakeClock()
    transport = ScriptedTransport(sending.MessageDropped("msg_duplicate", "duplicate"))
    [delivery] = await make_sender(transport, clock).send("2002", "hello")
    assert delivery.status is sending.DeliveryStatus.DROPPED
    assert delivery.error == "msg_duplicate"
    assert len(transport.posts) == 1


async def test_every_part_gets_its_result_and_a_failure_does_not_stop_the_rest() -> None:
    clock = fake_clock.FakeClock()
    transport = ScriptedTransport(None, sending.SendFailed("HTTP 500: boom"), None)
    text = " ".join(["lorem"] * 200)  # 1199 characters → 3 parts of ≤ 83 words
    results = await make_sender(transport, clock).send("2002", text, reply_to="m1")
    assert [r.part for r in results] == [0, 1, 2]
    assert [r.status for r in results] == [
        sending.DeliveryStatus.SENT,
        sending.DeliveryStatus.FAILED,
        sending.DeliveryStatus.SENT,
    ]
    assert results[1].error == "HTTP 500: boom"
    assert all(len(t) <= 500 for _, t in transport.posts)


async def test_the_limiter_paces_a_burst_of_parts() -> None:
    clock = fake_clock.FakeClock()
    limiter = sending.RateLimiter(limit=2, privileged_limit=100, window=30.0, clock=clock)
    sender = sending.Sender(ScriptedTransport(), limiter, clock=clock, limit=10)
    results = await sender.send("2002", "aaaa bbbb cccc dddd eeee")
    assert len(results) == 3
    assert clock.sleeps == [pytest.approx(30.0)]


# -- TwitchIO's exceptions → the sender's ------------------------------------------------------
def test_translate_twitchio_exceptions() -> None:
    limited = twitchio.HTTPException("429", status=429, extra={"message": "rate limited"})
    waited = helix.translate(limited, "1800000007")
    assert isinstance(waited, sending.RateLimited)
    assert waited.reset_at == 1_800_000_007.0
    garbage = helix.translate(limited, "garbage")
    assert isinstance(garbage, sending.RateLimited)
    assert garbage.reset_at is None
    sent = SentMessage(
        {
            "message_id": "",
            "is_sent": False,
            "drop_reason": {"code": "msg_duplicate", "message": "dup"},
        }
    )
    rejected = twitchio.MessageRejectedError("x", message=sent, channel=None, content="hi")  # type: ignore[arg-type]
    dropped = helix.translate(rejected)
    assert isinstance(dropped, sending.MessageDropped)
    assert (dropped.code, dropped.reason) == ("msg_duplicate", "dup")
    failed = helix.translate(twitchio.HTTPException("x", status=500, extra="oops"))
    assert isinstance(failed, sending.SendFailed)
    assert "HTTP 500" in str(failed)


# -- Postgres stores ---------------------------------------------------------------------------
async def test_deliveries_are_recorded_per_turn_and_append_only(db: postgres.Database) -> None:
    log = deliveries.DeliveryLog(db)
    results = [
        sending.Delivery(
            part=0,
            channel="2002",
            text="a",
            status=sending.DeliveryStatus.SENT,
            message_id="tw-1",
            attempts=2,
        ),
        sending.Delivery(
            part=1,
            channel="2002",
            text="b",
            status=sending.DeliveryStatus.DROPPED,
            error="msg_duplicate",
        ),
    ]
    await log.record("turn-1", results)
    rows = await log.of_turn("turn-1")
    assert [
        (r["part"], r["status"], r["twitch_message_id"], r["attempts"], r["error"]) for r in rows
    ] == [
        (0, "sent", "tw-1", 2, None),
        (1, "dropped", None, 1, "msg_duplicate"),
    ]
    with pytest.raises(asyncpg.RestrictViolationError, match="append-only"):
        await db.pool.execute("UPDATE turn_deliveries SET status = 'failed'")


async def test_token_store_round_trip(db: postgres.Database) -> None:
    store = tokens.TokenStore(db)
    await store.save("1001", "tok-1", "ref-1")
    await store.save("1001", "tok-2", "ref-1")
    [row] = await store.load()
    assert (row.user_id, row.token.get_secret_value(), row.refresh.get_secret_value()) == (
        "1001",
        "tok-2",
        "ref-1",
    )
    assert "tok-2" not in repr(row)
    await store.delete("1001")
    assert await store.load() == []
