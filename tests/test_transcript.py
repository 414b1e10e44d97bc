from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from memory import models
from memory.consolidate import jobs
from memory.history import transcript, working
from tests.fakes import history as fake_history

if TYPE_CHECKING:
    from memory.adapters import postgres

T0 = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)


def chat(n: int, login: str = "alice", user_id: str = "1001", **kw: Any) -> models.ChatEvent:
    return models.ChatEvent(
        id=f"m{n}",
        stream="s1",
        user_id=user_id,
        login=login,
        text=f"text {n}",
        ts=T0 + timedelta(seconds=n),
        **kw,
    )


async def test_append_is_idempotent_by_message_id(db: postgres.Database) -> None:
    store = transcript.Transcript(db)
    assert await store.append_events([chat(1), chat(2)]) == ["m1", "m2"]
    assert await store.append_events([chat(2), chat(3)]) == ["m3"]
    assert [e.id for e in await store.messages(["m3", "m1", "m2"])] == ["m1", "m2", "m3"]


async def test_finish_turn_writes_outcome_and_consolidation_job_atomically(
    db: postgres.Database,
) -> None:
    store = transcript.Transcript(db)
    await store.append_events([chat(1), chat(2)])
    turn_id = await store.start_turn("s1", ["m1", "m2"])
    row = await store.turn(turn_id)
    assert row is not None and row.status is models.TurnStatus.PENDING
    await store.finish_turn(
        turn_id,
        stream="s1",
        status=models.TurnStatus.COMPLETED,
        reply="hi",
        error=None,
        ts=T0,
        report={"timings_ms": {"memory_total": 1.5}},
        consolidate=True,
    )
    row = await store.turn(turn_id)
    assert row is not None and row.status is models.TurnStatus.COMPLETED and row.reply == "hi"
    assert row.timings == {"memory_total": 1.5}
    job = await jobs.by_dedupe_key(db, transcript.CONSOLIDATE_TURN, turn_id)
    assert job is not None and job.payload == {"turn_id": turn_id, "stream": "s1"}
    assert await store.answered(["m1", "m2", "m9"]) == {"m1", "m2"}


async def test_a_turn_outcome_is_written_once(db: postgres.Database) -> None:
    store = transcript.Transcript(db)
    await store.append_events([chat(1)])
    turn_id = await store.start_turn("s1", ["m1"])
    kwargs: dict[str, Any] = {
        "stream": "s1",
        "status": models.TurnStatus.FAILED,
        "reply": None,
        "error": "boom",
        "ts": T0,
        "report": {},
        "consolidate": False,
    }
    await store.finish_turn(turn_id, **kwargs)
    with pytest.raises(Exception, match="duplicate key"):
        await store.finish_turn(turn_id, **kwargs)
    row = await store.turn(turn_id)
    assert row is not None and row.error == "boom"


async def test_history_rebuild_orders_messages_and_replies_and_skips_commands(
    db: postgres.Database,
) -> None:
    store = transcript.Transcript(db)
    command = chat(3, kind=models.EventKind.COMMAND)
    await store.append_events([chat(1), chat(2, "bob", "1002"), command])
    turn_id = await store.start_turn("s1", ["m1", "m2"])
    await store.finish_turn(
        turn_id,
        stream="s1",
        status=models.TurnStatus.COMPLETED,
        reply="hello both",
        error=None,
        ts=T0 + timedelta(seconds=2),
        report={},
        consolidate=False,
    )
    await store.append_events([chat(4)])
    history = fake_history.InProcess(cap=10)
    assert await working.rebuild(history, store, "s1", cap=10) == 4
    items = await history.recent("s1")
    assert [(i.role.value, i.text) for i in items] == [
        ("user", "text 1"),
        ("user", "text 2"),
        ("assistant", "hello both"),
        ("user", "text 4"),
    ]
    assert items[0].turn_id == turn_id and items[1].login == "bob"
    assert [i.text for i in await store.history("s1", 2)] == ["hello both", "text 4"]


async def test_viewer_rename_keeps_the_user_id(db: postgres.Database) -> None:
    store = transcript.Transcript(db)
    await store.append_events([chat(1, "Alice_Old", "1001")])
    await store.append_events([chat(2, "alice_new", "1001")])
    assert await store.viewer_by_login("alice_old") is None
    viewer = await store.viewer_by_login("@Alice_New")
    assert viewer is not None and viewer["user_id"] == "1001"
