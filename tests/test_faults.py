"""Fault injection: real servers of the test's own taken down and brought back while
chat flows, and for each fault the count of messages in vs stored vs answered vs consolidated.

- Postgres stopped for 10 s while the real TwitchIO bot (against the fake Twitch) receives 30
  messages: all 30 end in ``messages``, each answered (a reply sent to Twitch) or marked
  ``missed`` (it waited longer than the ingest max age); nothing duplicated, no turn pending.
- Redis stopped for 10 s mid-replay: the replay finishes, turns run meanwhile are ``degraded`` (never
  ``pending``), the working history is rebuilt once Redis is back, every message is consolidated.

Each test keeps its server down for 10 s of wall time because that is the fault being tested (an
outage of that length); everything else waits on state with a bounded deadline, never a sleep.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import asyncpg
import pytest

from bot.twitch import client, run
from memory import models, outage, session
from memory import runtime as services_module
from memory.consolidate import jobs
from tests import servers
from tests.fakes import twitch as fake_twitch
from tests.test_twitch_e2e import say, twitch_fake, twitch_settings

if TYPE_CHECKING:
    from tests.conftest import SettingsFactory
    from tests.fakes import ollama as fake_ollama_module

__all__ = ["twitch_fake"]  # the fixture, shared with the end-to-end test

OUTAGE_SECONDS = 10.0
#: a 10 s outage, server start-ups and the drain: over the suite's 60 s default on a loaded machine
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


#: what ``_settled`` saw last, told when the wait for it times out (a run that fails says how)
_last_outcomes: list[str] = []


async def until(check: object, what: str, deadline: float = 60.0) -> None:
    """Poll ``await check()`` until true, within ``deadline`` seconds."""
    end = time.monotonic() + deadline
    _last_outcomes.clear()
    while time.monotonic() < end:
        if await check():  # type: ignore[operator]
            return
        await asyncio.sleep(0.1)
    seen = f": {' '.join(_last_outcomes)}" if _last_outcomes else ""
    raise AssertionError(f"timed out waiting for {what}{seen}")


async def fetch(dsn: str, query: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(dsn)
    try:
        return list(await conn.fetch(query))
    finally:
        await conn.close()


OUTCOMES = """
SELECT m.id, t.id AS turn_id, coalesce(o.status::text, 'pending') AS status, o.reply,
       (SELECT count(*) FROM turn_deliveries d WHERE d.turn_id = t.id AND d.status = 'sent') AS sent
FROM messages m
LEFT JOIN turns t ON m.id = ANY(t.message_ids)
LEFT JOIN turn_outcomes o ON o.turn_id = t.id
WHERE m.kind <> 'command'
ORDER BY m.seq
"""


async def test_postgres_down_10s_under_the_twitch_bot_loses_no_chat(
    make_settings: SettingsFactory,
    twitch_fake: fake_twitch.FakeTwitch,
    fake_ollama: fake_ollama_module.FakeOllama,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    fake = twitch_fake
    fake.live[fake_twitch.OWNER_ID] = "777"
    with servers.postgres_server() as pg:
        settings = twitch_settings(
            make_settings,
            fake,
            database_url=pg.dsn,
            ollama_host=fake_ollama.url,
            batch={"max_messages": 5, "window_seconds": 0.3},
            # chat that waited longer than this during the outage is marked missed
            ingest={"max_age_seconds": 5.0, "retry_seconds": 0.2},
        )
        settings = settings.model_copy(
            update={"twitch": settings.twitch.model_copy(update={"rate_limit_messages": 100})}
        )
        sent_ids: list[str] = []
        stop = asyncio.Event()

        async def push(n: int) -> None:
            event = say(f"viewer{n % 7}", f"30{n % 7:02d}", f"message number {n}")
            sent_ids.append(str(event["message_id"]))
            await fake.push_chat(event)

        async def scenario(bot: client.LiveMemoryBot) -> None:
            try:
                await fake.wait_subscriptions(1)
                for n in range(10):
                    await push(n)
                # answered before the outage: a turn still running when Postgres stops waits
                # the outage out, longer than the max age, and is missed by design
                await until(lambda: _settled(pg.dsn, 10), "the first 10 messages answered", 120)
                pg.stop()
                down_at = time.monotonic()
                for n in range(10, 20):  # right after the stop: they wait the whole outage
                    await push(n)
                await bot.flush_chat()
                # the outage lasts 10 s of wall time: that is the fault under test
                await asyncio.sleep(max(0.0, down_at + OUTAGE_SECONDS - 3 - time.monotonic()))
                for n in range(20, 30):  # shortly before Postgres returns: answered late
                    await push(n)
                await bot.flush_chat()
                await asyncio.sleep(max(0.0, down_at + OUTAGE_SECONDS - time.monotonic()))
                pg.start()
                await until(lambda: _settled(pg.dsn, 30), "all 30 answered or missed", 180)
            finally:
                stop.set()

        async with services_module.lifespan(settings) as services:
            code = await asyncio.wait_for(
                run.run_bot(settings, services, stop=stop, ready=scenario), 280
            )
            await services.worker.run_until_empty()
        rows = await fetch(pg.dsn, OUTCOMES)
        consolidated = await fetch(
            pg.dsn, "SELECT status::text AS status, count(*) AS n FROM jobs GROUP BY status"
        )

    assert code == 0
    ids = [r["id"] for r in rows]
    assert ids == sent_ids  # all 30 stored, in the order they were said, none twice
    by_status = {r["id"]: r["status"] for r in rows}
    answered = [r["id"] for r in rows if r["status"] in ("completed", "degraded") and r["sent"]]
    missed = [r["id"] for r in rows if r["status"] == "missed"]
    assert sorted(answered + missed) == sorted(sent_ids), by_status  # each answered or missed
    assert set(sent_ids[:10]) <= set(answered), by_status  # before the outage
    # which of the outage's messages waited longer than the max age depends on the machine's
    # speed (the last ones waited about 3 s plus the drain); the first waited the whole outage
    assert sent_ids[10] in missed, by_status
    assert {r["status"] for r in consolidated} == {"succeeded"}
    # the outage is one line when it starts and one when it ends, without a traceback
    assert not [r.getMessage() for r in caplog.records if r.exc_info]
    actions = [
        getattr(r, "action", None)
        for r in caplog.records
        if getattr(r, "condition", None) == outage.POSTGRES
    ]
    assert actions == ["outage_start", "outage_end"]
    print(  # the counts of the fault (pytest -s shows them)
        f"postgres down {OUTAGE_SECONDS:g} s: in 30, stored {len(ids)}, answered {len(answered)}, "
        f"missed {len(missed)}, consolidation jobs {sum(r['n'] for r in consolidated)} succeeded"
    )


async def _settled(dsn: str, expected: int) -> bool:
    """Every message stored and in a finished turn (answered and delivered, or missed)."""
    try:
        rows = await fetch(dsn, OUTCOMES)
    except (OSError, asyncpg.PostgresError) as exc:
        _last_outcomes[:] = [f"outcomes unreadable: {exc!r}"]
        return False
    done = [r for r in rows if r["status"] == "missed" or (r["status"] != "pending" and r["sent"])]
    _last_outcomes[:] = [
        f"{len(rows)} rows, {len(done)} settled; not settled: "
        + ", ".join(
            f"{r['id']} (turn {r['turn_id']}, {r['status']}, sent {r['sent']})"
            for r in rows
            if r not in done
        )
    ]
    return len(rows) == expected and len(done) == expected


T0 = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)


def chat(n: int) -> models.ChatEvent:
    login = ("alice", "bob", "carla")[n % 3]
    return models.ChatEvent(
        id=f"r{n}", stream="s1", user_id=f"id-{login}", login=login,
        text=f"I collect rare stamps number {n}", ts=T0 + timedelta(seconds=3 * n),
    )  # fmt: skip


async def test_redis_down_10s_mid_replay_ends_every_turn_and_consolidates_all(
    make_settings: SettingsFactory,
) -> None:
    with servers.redis_server() as redis:
        settings = make_settings(redis_url=redis.url, batch={"max_messages": 2})
        reports: list[models.TurnReport] = []

        async def deliver(report: models.TurnReport) -> None:
            reports.append(report)

        async with services_module.lifespan(settings, no_llm=True) as svc:
            replay = session.Replay(svc, deliver)
            for n in range(10):
                await replay.feed(chat(n))
            redis.stop()
            down_at = time.monotonic()
            for n in range(10, 20):
                await replay.feed(chat(n))
            # the outage lasts 10 s of wall time: that is the fault under test
            await asyncio.sleep(max(0.0, down_at + OUTAGE_SECONDS - time.monotonic()))
            redis.start()
            for n in range(20, 30):
                await replay.feed(chat(n))
            await replay.finish()
            await replay.consolidate_now()
            turns = await svc.transcript.turns("s1")
            counts = await jobs.counts(svc.db)
            in_history = await svc.history.recent("s1")
            fallbacks = svc.reliability.history_fallbacks if svc.reliability else None

    statuses = [t.status for t in turns]
    message_ids = [m for t in turns for m in t.message_ids]
    assert message_ids == [f"r{n}" for n in range(30)]  # all stored, once, in order
    assert models.TurnStatus.PENDING not in statuses
    assert models.TurnStatus.DEGRADED in statuses  # turns of the outage
    assert statuses[-1] is models.TurnStatus.COMPLETED  # Redis is back
    assert counts[jobs.JobStatus.SUCCEEDED] == len(turns)  # every turn consolidated
    assert sum(counts.values()) == len(turns)
    # the working history was rebuilt from the transcript: the outage's messages are in it
    assert {f"r{n}" for n in range(30)} <= {i.message_id for i in in_history}
    assert fallbacks is not None
    print(
        f"redis down {OUTAGE_SECONDS:g} s mid-replay: in 30, stored {len(message_ids)}, turns "
        f"{len(turns)} ({statuses.count(models.TurnStatus.DEGRADED)} degraded, 0 pending), "
        f"consolidated {counts[jobs.JobStatus.SUCCEEDED]}"
    )
