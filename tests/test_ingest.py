"""The ingest spool (SQLite in the data folder): bounded, durable, drained in order."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import prometheus_client

from memory import errors, ingest, metrics, models
from memory.adapters import spool as spool_module

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

T0 = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)


def chat(n: int) -> models.ChatEvent:
    return models.ChatEvent(
        id=f"m{n}", stream="s1", user_id="1001", login="alice", text=f"message {n}",
        ts=T0 + timedelta(seconds=n), badges=("subscriber",),
    )  # fmt: skip


class Postgres:
    """Stands in for the transcript write: up or down, and what reached it."""

    def __init__(self) -> None:
        self.up = False
        self.stored: list[str] = []

    async def store(self, event: models.ChatEvent) -> bool:
        if not self.up:
            raise errors.StoreUnavailable("Postgres is down")
        self.stored.append(event.id)
        return True


def make(path: Path, db: Postgres, accepted: list[str], capacity: int = 100) -> ingest.Ingest:
    async def miss(events: list[models.ChatEvent], waited: float) -> None:
        raise AssertionError("nothing is that old here")

    return ingest.Ingest(
        spool_module.SqliteSpool(path, capacity=capacity),
        store=db.store,
        accept=lambda e: accepted.append(e.id),
        miss=miss,
        max_age_seconds=60.0,
        retry_seconds=0.01,
    )


async def test_the_spool_survives_a_restart_and_drains_in_order(tmp_path: Path) -> None:
    db, accepted = Postgres(), list[str]()
    first = make(tmp_path / "spool.sqlite", db, accepted)
    for n in range(5):
        await first.feed(chat(n))
    assert first.waiting == 5 and db.stored == []
    await first.aclose()  # the process stops with chat in the spool
    first.spool.close()  # type: ignore[attr-defined]

    db.up = True
    second = make(tmp_path / "spool.sqlite", db, accepted)  # the next start drains it
    await second.feed(chat(5))  # new chat queues behind the spooled chat
    await asyncio.wait_for(second.drained.wait(), 10)
    assert db.stored == accepted == [f"m{n}" for n in range(6)]
    decoded = ingest.decode(ingest.encode(chat(3)))
    assert decoded == chat(3)


async def test_a_full_spool_refuses_loudly_and_counts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db, accepted = Postgres(), list[str]()
    registry = prometheus_client.CollectorRegistry()
    box = make(tmp_path / "spool.sqlite", db, accepted, capacity=3)
    box.metrics = metrics.ReliabilityMetrics(registry)
    with caplog.at_level(logging.ERROR):
        for n in range(5):
            await box.feed(chat(n))
    assert box.waiting == 3 and box.refused == 2
    assert "INGEST SPOOL FULL (3 messages waiting for Postgres): message m4" in caplog.text
    assert "2 message(s) refused so far" in caplog.text
    assert registry.get_sample_value("livememory_ingest_spool_refused_total") == 2
    assert registry.get_sample_value("livememory_ingest_spool_messages") == 3
    db.up = True
    await asyncio.wait_for(box.drained.wait(), 10)
    assert accepted == ["m0", "m1", "m2"]
    await box.aclose()


def test_a_drained_spool_keeps_no_byte_of_what_it_held(tmp_path: Path) -> None:
    """Once delivered, a spooled text is gone from the file and its write-ahead log
    (a forget later erases it from the transcript; the spool must not keep a copy)."""
    path = tmp_path / "spool.sqlite"
    spool = spool_module.SqliteSpool(path, capacity=10)
    try:
        assert spool.put("alice: my word is zqspooled1234")
        assert spool.put("bob: hello")
        files = [p for p in tmp_path.iterdir() if p.name.startswith("spool.sqlite")]
        assert any(b"zqspooled1234" in p.read_bytes() for p in files)
        first, second = spool.head(2)
        spool.remove([first.seq])
        spool.remove([second.seq])
        assert len(spool) == 0
        files = [p for p in tmp_path.iterdir() if p.name.startswith("spool.sqlite")]
        assert not any(b"zqspooled1234" in p.read_bytes() for p in files)
    finally:
        spool.close()
