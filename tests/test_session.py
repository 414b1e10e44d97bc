"""Sessions on the real composition root (embedded Qdrant in the test's folder, no model)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from memory import errors, identity, models, session
from memory import runtime as services_module
from memory.adapters import qdrant
from memory.spaces import records

if TYPE_CHECKING:
    from tests.conftest import SettingsFactory

T0 = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)


def event(n: int, seconds: float, text: str, **kw: object) -> models.ChatEvent:
    kind = models.EventKind.COMMAND if text.startswith("!") else models.EventKind.MESSAGE
    return models.ChatEvent(
        id=f"m{n}",
        stream="s1",
        user_id="1001",
        login="alice",
        text=text,
        ts=T0 + timedelta(seconds=seconds),
        kind=kind,
        **kw,  # type: ignore[arg-type]
    )


async def test_forget_last_in_the_same_batch_forgets_the_statement_just_made(
    make_settings: SettingsFactory,
) -> None:
    settings = make_settings()
    reports: list[models.TurnReport] = []

    async def deliver(report: models.TurnReport) -> None:
        reports.append(report)

    async with services_module.lifespan(settings, no_llm=True, background_worker=False) as svc:
        replay = session.Replay(svc, deliver, commands=svc.commands, sync_consolidation=True)
        await replay.feed(event(1, 0, "I work as a graphic designer"))
        await replay.feed(event(2, 10, "I live in Rome"))  # closes the first batch
        await replay.feed(event(3, 10.5, "!forget last"))  # same batch as "I live in Rome"
        await replay.finish()
        kept = [m.text for m in await svc.spaces.list(identity.personal_key("1001"))]
    assert "I work as a graphic designer" in kept
    assert "I live in Rome" not in kept
    command = next(r for r in reports if r.command == "!forget last")
    assert command.reply and "Rome" not in command.reply  # no private detail in public


async def test_embedded_qdrant_in_use_is_a_clear_error(make_settings: SettingsFactory) -> None:
    settings = make_settings()
    from memory.spaces import embedders

    embedder = embedders.OfflineHashEmbedder()
    first = await qdrant.open_spaces(settings, embedder)
    try:
        with pytest.raises(errors.StoreUnavailable, match="in use by another process"):
            await qdrant.open_spaces(settings, embedder)
    finally:
        await first.close()


async def test_the_bot_serves_prometheus_metrics_of_its_turns(
    make_settings: SettingsFactory,
) -> None:
    import socket
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = make_settings(metrics_port=port)
    reports: list[models.TurnReport] = []

    async def deliver(report: models.TurnReport) -> None:
        reports.append(report)

    async with services_module.lifespan(settings, no_llm=True, background_worker=False) as svc:
        replay = session.Replay(svc, deliver, commands=svc.commands)
        await replay.feed(event(1, 0, "I work as a graphic designer"))
        await replay.feed(event(2, 5, "Mnemo, what do you remember about me?"))
        await replay.finish()
        url = f"http://127.0.0.1:{port}/metrics"
        body = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=5).read())
    text = body.decode()
    assert 'livememory_turns_total{status="completed"} 2.0' in text
    assert "livememory_memory_stage_seconds_bucket" in text
    assert "livememory_prompt_messages_sent_count 2.0" in text


async def test_a_stored_message_opens_its_viewers_spaces_before_its_batch_closes(
    make_settings: SettingsFactory,
) -> None:
    settings = make_settings(  # a shard per viewer: warming opens it (Qdrant Edge)
        batch={"window_seconds": 60.0, "max_messages": 20}, qdrant={"layout": "per_space"}
    )

    def memory(user_id: str, text: str) -> records.MemoryRecord:
        return records.MemoryRecord(
            id=str(uuid.uuid4()),
            space=identity.personal_key(user_id),
            kind=records.MemoryKind.PERSONAL,
            text=text,
            turn_id=f"turn-{user_id}",
            user_id=user_id,
            created_at=T0,
        )

    async def deliver(report: models.TurnReport) -> None:
        return None

    def said(n: int, user_id: str, login: str, text: str) -> models.ChatEvent:
        return models.ChatEvent(
            id=f"p{n}", stream="s1", user_id=user_id, login=login, text=text, ts=T0
        )

    people = {"2001": "alice", "2002": "bob", "2003": "carol"}
    async with services_module.lifespan(settings, no_llm=True, background_worker=False) as svc:
        replay = session.Replay(svc, deliver)
        for n, (user_id, login) in enumerate(people.items()):
            await replay.feed(said(n, user_id, login, "hello"))  # known to the channel
        await replay.finish()
        for user_id in people:
            await svc.spaces.upsert([memory(user_id, "I keep bees")])
    async with services_module.lifespan(settings, no_llm=True, background_worker=False) as svc:
        assert isinstance(svc.spaces, qdrant.QdrantSpaces) and svc.prefetch is not None
        folders = svc.spaces.client.engine
        replay = session.Replay(svc, deliver)
        await replay.feed(said(10, "2001", "alice", "@bob do you still keep bees?"))
        await svc.prefetch.settle()
        assert replay.batcher.pending() == 1  # the batch is still open
        opened = set(folders.open_names())
        assert {svc.spaces.collection(identity.personal_key(u)) for u in ("2001", "2002")} <= opened
        assert svc.spaces.collection(identity.personal_key("2003")) not in opened
        await replay.finish()
