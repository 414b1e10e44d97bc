"""Retention: texts older than the configured age are purged by a scheduled job, with an
audit row; the job is called directly with a cutoff (no waiting), and its scheduling is checked on
the job queue."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

import pytest

from memory import identity
from memory import runtime as services_module
from memory.consolidate import jobs
from memory.ops import retention
from tests import scan, test_operations
from tests import test_consolidation as helpers

if TYPE_CHECKING:
    from memory.adapters import postgres
    from tests.conftest import SettingsFactory

msg = helpers.msg
DAY = 24 * 3600
OLD, NEW = "zqoldword1234", "zqnewword5678"


@pytest.fixture
async def memory(db: postgres.Database, make_settings: SettingsFactory) -> test_operations.Memory:
    mem = test_operations.Memory(db, make_settings(bot_name="mnemo"))
    await mem.turn(
        msg("m1", "alice", f"I work as a baker, my word is {OLD}"),
        msg("m2", "bob", "I play the guitar", second=1),
        reply=f"@alice {OLD} noted",
    )
    await mem.turn(msg("m3", "alice", f"I moved to Turin, my word is {NEW}", second=10 * DAY))
    return mem


async def test_purge_erases_what_is_older_than_the_cutoff_and_audits_it(
    memory: test_operations.Memory,
) -> None:
    db = memory.db
    cutoff = helpers.T0 + timedelta(days=5)
    assert await scan.postgres_hits(db, OLD)
    report = await retention.purge(memory.ops, cutoff)

    assert (report.personal, report.episodic) == (2, 1)  # alice's and bob's statements, 1 episode
    assert report.erased["messages"] == 2 and report.erased["turns"] == 1
    assert [r.text for r in await memory.personal("1001")] == [
        f"I moved to Turin, my word is {NEW}"
    ]
    assert await memory.personal("1002") == []
    episodes = await memory.spaces.list(identity.episodic_key("s1"))
    assert [e.turn_id for e in episodes] == [memory.turns[1]]
    profile = await memory.profiles.get("1001")
    assert profile is not None and all(f.stated_at >= cutoff for f in profile.facts)
    texts = dict(await db.pool.fetch("SELECT id, text FROM messages ORDER BY id"))
    assert texts == {
        "m1": "[erased]",
        "m2": "[erased]",
        "m3": f"I moved to Turin, my word is {NEW}",
    }
    assert await scan.postgres_hits(db, OLD) == []
    assert await scan.postgres_hits(db, NEW)  # what is younger stays

    erasure = await db.pool.fetchrow("SELECT actor, scope, cutoff, counts FROM erasures")
    assert erasure is not None
    assert (erasure["actor"], erasure["scope"], erasure["cutoff"]) == (
        "retention",
        "retention",
        cutoff,
    )
    [audit] = [row for row in await memory.audit() if row["action"] == "retention"]
    assert audit["details"]["cutoff"] == cutoff.isoformat()
    assert audit["details"]["personal"] == 2 and audit["details"]["messages"] == 2

    again = await retention.purge(memory.ops, cutoff)  # idempotent: nothing left to purge
    assert (again.personal, again.episodic, again.erased["messages"]) == (0, 0, 0)


async def test_the_transcript_refuses_any_other_rewrite(db: postgres.Database) -> None:
    """Only the erase functions may rewrite it, and only to the placeholder."""
    await helpers.journal_turn(db, [msg("m1", "alice", "hello"), msg("m2", "bob", "hi")])
    await db.pool.execute("SELECT erase_viewer('1001', 'admin:test', 'forget', 200)")
    for statement in (
        "UPDATE messages SET text = 'changed'",
        "DELETE FROM messages",
        "UPDATE turn_outcomes SET reply = 'changed'",
        "UPDATE erasures SET actor = 'someone else'",
        "DELETE FROM erasures",
    ):
        with pytest.raises(Exception, match="append-only"):
            await db.pool.execute(statement)
    async with db.pool.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL livememory.erasing = 'on'")  # the flag alone is not enough:
        with pytest.raises(Exception, match="append-only"):  # a text changes to the placeholder
            await conn.execute("UPDATE messages SET text = 'rewritten history' WHERE id = 'm2'")


async def test_retention_is_off_by_default_and_scheduled_once_per_interval_when_on(
    make_settings: SettingsFactory,
) -> None:
    off = make_settings()
    assert off.retention.max_age_days is None
    async with services_module.lifespan(off, role="worker") as services:
        assert retention.JOB_KIND not in services.job_handlers
        assert await services.db.pool.fetchval("SELECT count(*) FROM jobs") == 0

    settings = make_settings(retention={"max_age_days": 36500, "interval_seconds": 3600})
    async with services_module.lifespan(settings, role="worker") as services:
        db = services.db
        await helpers.journal_turn(db, [msg("m1", "alice", f"my word is {OLD}")])
        await retention.start(db, settings)  # a second process starting: nothing new
        rows = await db.pool.fetch(
            "SELECT dedupe_key, status, scheduled_at FROM jobs WHERE kind = 'retention'"
            " ORDER BY scheduled_at"
        )
        assert len(rows) == 2
        assert rows[1]["scheduled_at"] - rows[0]["scheduled_at"] == timedelta(hours=1)
        await services.worker.run_until_empty()  # this interval's run is due, the next is not
        done = await jobs.by_dedupe_key(db, retention.JOB_KIND, rows[0]["dedupe_key"])
        assert done is not None and done.status is jobs.JobStatus.SUCCEEDED
        later = await jobs.by_dedupe_key(db, retention.JOB_KIND, rows[1]["dedupe_key"])
        assert later is not None and later.status is jobs.JobStatus.TODO
        # T0 is within the (century-long) age: kept; the run is audited either way
        assert await scan.postgres_hits(db, OLD)
        audit = await db.pool.fetchval(
            "SELECT details FROM memory_audit WHERE action = 'retention'"
        )
        assert audit is not None and '"messages": 0' in audit
