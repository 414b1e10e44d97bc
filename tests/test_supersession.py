"""Supersession at consolidation (``memory.consolidate.marks``): a viewer's newer statement marks
the older memory superseded, by chat time, idempotently and audited; forgetting or correcting the
newer memory makes the older one current again."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from memory import identity
from memory.consolidate import consolidation
from memory.consolidate import profile as profile_module
from memory.ops import operations
from tests.test_consolidation import T0, consolidator, journal_turn, msg, settings, spaces

if TYPE_CHECKING:
    from memory.adapters import postgres
    from memory.spaces import records
    from tests.conftest import SettingsFactory
    from tests.fakes import spaces as fake_spaces

__all__ = ["consolidator", "settings", "spaces"]  # the fixtures of tests/test_consolidation.py

ALICE = identity.personal_key("1001")
WEEK = 7 * 24 * 3600


async def by_text(spaces: fake_spaces.InMemorySpaces) -> dict[str, records.MemoryRecord]:
    return {r.text: r for r in await spaces.list(ALICE)}


async def audit_rows(db: postgres.Database) -> list[Any]:
    return list(
        await db.pool.fetch(
            "SELECT actor, action, target, details FROM memory_audit "
            "WHERE action IN ('supersede', 'unsupersede') ORDER BY id"
        )
    )


async def rome_then_turin(db: postgres.Database) -> tuple[str, str]:
    old = await journal_turn(db, [msg("m1", "alice", "I live in Rome")])
    new = await journal_turn(db, [msg("m2", "alice", "I moved to Turin", second=WEEK)])
    return old, new


@pytest.fixture
async def moved(db: postgres.Database, consolidator: consolidation.Consolidator) -> str:
    """Alice said she lives in Rome, a week later that she moved to Turin: the newer turn id."""
    old, new = await rome_then_turin(db)
    await consolidator.consolidate(old)
    await consolidator.consolidate(new)
    return new


async def test_a_newer_statement_supersedes_the_older_memory(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    moved: str,
) -> None:
    held = await by_text(spaces)
    rome, turin = held["I live in Rome"], held["I moved to Turin"]
    assert (rome.superseded_by, rome.superseded_at) == (turin.id, T0 + timedelta(seconds=WEEK))
    assert turin.superseded_by is None
    hits = await spaces.search(ALICE, "where does alice live, Rome or Turin?", limit=5)
    assert [h.record.text for h in hits] == ["I moved to Turin"]
    [row] = await audit_rows(db)
    assert (row["actor"], row["action"], row["target"]) == ("consolidation", "supersede", rome.id)


async def test_a_retried_job_changes_no_mark_and_audits_nothing_more(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    consolidator: consolidation.Consolidator,
) -> None:
    old, new = await rome_then_turin(db)
    for turn_id in (old, new, new, old):
        await consolidator.consolidate(turn_id)
    rome = (await by_text(spaces))["I live in Rome"]
    assert rome.superseded_at == T0 + timedelta(seconds=WEEK)  # the statement's time, not a clock
    assert len(await audit_rows(db)) == 1


async def test_an_old_statement_consolidated_late_never_supersedes_a_newer_one(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    consolidator: consolidation.Consolidator,
) -> None:
    old, new = await rome_then_turin(db)
    await consolidator.consolidate(new)
    await consolidator.consolidate(old)  # an imported VOD, processed after the newer memory

    held = await by_text(spaces)
    assert held["I moved to Turin"].superseded_by is None
    assert held["I live in Rome"].superseded_by == held["I moved to Turin"].id


async def test_without_the_switch_nothing_is_superseded(
    db: postgres.Database, spaces: fake_spaces.InMemorySpaces, make_settings: SettingsFactory
) -> None:
    settings = make_settings(bot_name="mnemo", memory={"supersede": False})
    consolidator = consolidation.Consolidator(db, spaces, settings)
    for turn_id in await rome_then_turin(db):
        await consolidator.consolidate(turn_id)
    assert all(r.superseded_by is None for r in await spaces.list(ALICE))
    hits = await spaces.search(ALICE, "where does alice live, Rome or Turin?", limit=5)
    assert len(hits) == 2


async def test_forgetting_the_newer_memory_makes_the_older_current_again(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    moved: str,
) -> None:
    turin = (await by_text(spaces))["I moved to Turin"]

    await operations.Operations(db, spaces).forget_memory(turin.id, actor="twitch:alice")

    rome = (await by_text(spaces))["I live in Rome"]
    assert (rome.superseded_by, rome.superseded_at) == (None, None)
    assert [h.record.id for h in await spaces.search(ALICE, "Rome", limit=5)] == [rome.id]
    last = (await audit_rows(db))[-1]
    assert (last["actor"], last["action"], last["target"]) == (
        "twitch:alice",
        "unsupersede",
        rome.id,
    )


async def test_forgetting_the_newer_turn_makes_the_older_current_again(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    moved: str,
) -> None:
    await operations.Operations(db, spaces).forget_turn(moved, actor="admin:test")
    [rome] = await spaces.list(ALICE)
    assert rome.superseded_by is None


async def test_a_superseded_memory_is_still_found_to_be_forgotten_and_is_erasable(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    moved: str,
) -> None:
    ops = operations.Operations(db, spaces)
    hits = await ops.search_own("1001", "Rome")
    rome = next(h.record for h in hits if h.record.text == "I live in Rome")
    await ops.forget_memory(rome.id, actor="twitch:alice")
    assert [r.text for r in await spaces.list(ALICE)] == ["I moved to Turin"]
    assert [r["text"] for r in (await ops.export(await ops.viewer_by_id("1001")))["memories"]] == [
        "I moved to Turin"
    ]


async def test_correcting_the_newer_memory_moves_the_mark_to_the_correction(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    moved: str,
) -> None:
    turin = (await by_text(spaces))["I moved to Turin"]
    correction = await operations.Operations(db, spaces).correct(
        turin.id, "I moved to Milan", actor="twitch:alice"
    )
    rome = (await by_text(spaces))["I live in Rome"]
    assert rome.superseded_by == correction.id


async def test_the_profile_drops_what_a_superseded_memory_said_and_gets_it_back(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    consolidator: consolidation.Consolidator,
) -> None:
    old = await journal_turn(db, [msg("m1", "alice", "I study architecture")])
    line = "I don't study architecture anymore, I switched to graphic design"
    new = await journal_turn(db, [msg("m2", "alice", line, second=WEEK)])
    profiles = profile_module.ProfileStore(db)
    await consolidator.consolidate(old)
    first = await profiles.get("1001")
    assert first is not None and first.get("study") is not None
    await consolidator.consolidate(new)
    await consolidator.consolidate(old)  # a retried job of the older turn writes no fact back
    held = await profiles.get("1001")
    fact = held.get("study") if held is not None else None
    assert fact is not None and (fact.value, fact.origin_message_ids) == ("graphic design", ("m2",))

    switched = (await by_text(spaces))[line]
    await operations.Operations(db, spaces).forget_memory(switched.id, actor="twitch:alice")
    back = await profiles.get("1001")
    assert back is not None and back.lines() == ["study: architecture"]
