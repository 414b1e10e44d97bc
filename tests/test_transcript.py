from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import asyncpg
import pytest

from memory import errors, models
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
    # a retry after a commit whose answer was lost: the outcome written first stays
    await store.finish_turn(turn_id, **{**kwargs, "error": "retried"})
    row = await store.turn(turn_id)
    assert row is not None and row.error == "boom"


def failing_turn_inserts(monkeypatch: pytest.MonkeyPatch, *modes: str) -> None:
    """The driver's next turn inserts fail with the connection, one per mode: ``after`` the
    server ran the insert (Postgres stopping under it commits, then drops the connection; the
    bot's fault test once met it), or ``before`` it reached the server."""
    real = asyncpg.pool.Pool.execute
    pending = list(modes)

    async def execute(self: asyncpg.pool.Pool, query: str, *args: Any, **kw: Any) -> str:
        if pending and query.lstrip().startswith("INSERT INTO turns"):
            if pending.pop(0) == "after":
                await real(self, query, *args, **kw)
            raise asyncpg.InterfaceError(
                "cannot switch to state 15; another operation (2) is in progress"
            )
        status: str = await real(self, query, *args, **kw)
        return status

    monkeypatch.setattr(asyncpg.pool.Pool, "execute", execute)


async def turn_ids(db: postgres.Database, stream: str) -> list[str]:
    rows = await db.pool.fetch("SELECT id FROM turns WHERE stream = $1 ORDER BY seq", stream)
    return [row["id"] for row in rows]


@pytest.mark.parametrize("mode", ["after", "before"])
async def test_a_turn_whose_opening_failed_opens_again_under_its_id(
    db: postgres.Database, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    store = transcript.Transcript(db)
    await store.append_events([chat(1), chat(2)])
    failing_turn_inserts(monkeypatch, mode)
    with pytest.raises(errors.StoreUnavailable, match="open turn"):
        await store.start_turn("s1", ["m1", "m2"])
    written = await turn_ids(db, "s1")
    assert len(written) == (1 if mode == "after" else 0)
    turn_id = await store.start_turn("s1", ["m1", "m2"])  # the retry of the same batch
    assert await turn_ids(db, "s1") == [turn_id]
    assert written in ([], [turn_id])
    await store.finish_turn(
        turn_id, stream="s1", status=models.TurnStatus.MISSED, reply=None, error="late",
        ts=T0, report={}, consolidate=True,
    )  # fmt: skip
    assert await store.answered(["m1", "m2"]) == {"m1", "m2"}
    assert await store.start_turn("s1", ["m1", "m2"]) != turn_id  # a new turn from then on


async def test_a_turn_whose_opening_failed_ends_failed_when_the_next_holds_other_messages(
    db: postgres.Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = transcript.Transcript(db)
    await store.append_events([chat(1), chat(2), chat(3)])
    failing_turn_inserts(monkeypatch, "after")
    with pytest.raises(errors.StoreUnavailable):
        await store.start_turn("s1", ["m1", "m2"])
    [orphan] = await turn_ids(db, "s1")
    turn_id = await store.start_turn("s1", ["m3"])
    assert await turn_ids(db, "s1") == [orphan, turn_id]
    ended = await store.turn(orphan)
    assert ended is not None and ended.status is models.TurnStatus.FAILED
    assert ended.error is not None and "opening failed" in ended.error
    assert await jobs.by_dedupe_key(db, transcript.CONSOLIDATE_TURN, orphan) is None
    assert await store.close_pending("s1", reason="crash") == [turn_id]  # the orphan is not pending


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
