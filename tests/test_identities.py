"""Unambiguous identities: a login resolves to exactly one user id or is refused with
the candidates, in admin commands, chat commands and the planner. ``alice``, ``ALICE`` and
``alice`` + zero-width space are three people whose logins normalise alike."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from memory import models
from memory.adapters import qdrant
from memory.consolidate import consolidation
from memory.history import transcript
from memory.ops import admin, chat_operations
from memory.ops import operations as operations_module
from memory.recall import directory
from memory.spaces import embedders

if TYPE_CHECKING:
    from config.settings import Settings
    from memory.adapters import postgres
    from tests.conftest import SettingsFactory

T0 = datetime(2026, 11, 20, 20, 0, tzinfo=UTC)
LOOKALIKES = [("1001", "alice"), ("2003", "ALICE"), ("3005", "alice\u200b")]


def said(n: int, user_id: str, login: str, text: str) -> models.ChatEvent:
    return models.ChatEvent(
        id=f"m{n}", stream="s1", user_id=user_id, login=login, text=text,
        ts=T0 + timedelta(days=n),
    )  # fmt: skip


async def seed(db: postgres.Database, settings: Settings) -> None:
    """Each look-alike says something about themself; consolidated into embedded Qdrant."""
    store = transcript.Transcript(db)
    spaces = await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder())
    try:
        consolidator = consolidation.Consolidator(db, spaces, settings)
        for n, (user_id, login) in enumerate(LOOKALIKES):
            event = said(n, user_id, login, f"I work as a baker number {n}")
            await store.append_events([event])
            turn_id = await store.start_turn("s1", [event.id])
            await store.finish_turn(
                turn_id, stream="s1", status=models.TurnStatus.COMPLETED, reply="ok",
                error=None, ts=event.ts, report={}, consolidate=False,
            )  # fmt: skip
            await consolidator.consolidate(turn_id)
    finally:
        await spaces.close()


async def admin_run(settings: Settings, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = await admin.run(
        list(argv), settings=settings, stdin=io.StringIO(""), stdout=out, stderr=err
    )
    return code, out.getvalue(), err.getvalue()


async def test_admin_refuses_an_ambiguous_login_and_takes_a_user_id(
    db: postgres.Database, make_settings: SettingsFactory
) -> None:
    settings = make_settings()
    await seed(db, settings)
    code, out, err = await admin_run(settings, "forget", "--viewer", "alice", "--yes")
    assert code != 0 and out == ""
    assert "'alice' names 3 viewers: user 3005 ('alice\\u200b', seen 2026-11-22), user 2003 " in err
    assert "user 1001 ('alice', seen 2026-11-20); name one by user id" in err
    assert "Traceback" not in err
    for user_id, _ in LOOKALIKES:  # nobody was forgotten
        code, out, _ = await admin_run(settings, "inspect", "--user-id", user_id, "--json")
        assert code == 0 and "baker" in out

    code, out, err = await admin_run(settings, "forget", "--user-id", "2003", "--dry-run")
    assert code == 0, err
    assert "(user 2003)" in out  # the confirmation names the user id
    code, out, err = await admin_run(settings, "forget", "--user-id", "2003", "--yes")
    assert code == 0, err
    kept = {}
    for user_id, _ in LOOKALIKES:
        _, out, _ = await admin_run(settings, "inspect", "--user-id", user_id, "--json")
        kept[user_id] = "baker" in out
    assert kept == {"1001": True, "2003": False, "3005": True}
    # a user id is never looked up as a login, and an unknown one says so
    code, _, err = await admin_run(settings, "inspect", "--user-id", "alice")
    assert code != 0 and "unknown user id 'alice'" in err


async def test_a_chat_command_on_an_ambiguous_login_lists_the_candidates(
    db: postgres.Database, make_settings: SettingsFactory
) -> None:
    settings = make_settings()
    await seed(db, settings)
    spaces = await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder())
    handler = chat_operations.build(settings, operations_module.Operations(db, spaces))
    mod = models.ChatEvent(
        id="c1", stream="s1", user_id="9", login="mod", badges=("moderator",),
        text="!forget @alice all confirm", ts=T0 + timedelta(days=9),
    )  # fmt: skip
    try:
        reply = await handler.handle(mod, models.Batch(stream="s1", events=(mod,)))
    finally:
        await spaces.close()
    assert reply is not None and "names 3 viewers: user 3005" in reply
    assert "user 1001 ('alice', seen 2026-11-20)" in reply


async def test_the_planner_directory_never_guesses_between_two_people(
    db: postgres.Database,
) -> None:
    store = transcript.Transcript(db)
    await store.append_events([said(n, u, login, "hi") for n, (u, login) in enumerate(LOOKALIKES)])
    await store.append_events([said(5, "4004", "bob", "hi")])
    viewers = await directory.load(store)
    assert viewers.lookup("@alice") is None
    assert viewers.lookup("ALICE") is None
    assert viewers.lookup("bob") == ("bob", "4004")
    assert viewers.lookup("\u200b") is None  # a name normalising to nothing names nobody
    viewers.register("3005", "carla")  # a rename frees the name
    viewers.register("2003", "dave")
    assert viewers.lookup("alice") == ("alice", "1001")
