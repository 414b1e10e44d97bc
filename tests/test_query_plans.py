"""Every per-message and per-turn query uses an index on a channel's whole life.

A database with 100,000 finished turns (a message each, 10,000 viewers, 100,000 consolidation
jobs) is built in SQL (``generate_series``); each hot query is then planned twice — with the
parameters (a custom plan) and as the generic plan asyncpg's prepared statements settle on — and a
sequential scan of a table that grows with the channel's life fails the test.
"""

from __future__ import annotations

import json
import shutil
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import asyncpg
import pytest

from memory import migrate, sql
from memory.adapters import postgres
from tests import conftest

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

TURNS = 100_000
LATER = datetime(2027, 1, 1, tzinfo=UTC)

#: tables whose size grows with every message, turn or viewer the channel ever had
GROWING = {
    "turns",
    "messages",
    "turn_outcomes",
    "turn_messages",
    "turn_deliveries",
    "jobs",
    "viewers",
}

BUILD = f"""
SET session_replication_role = replica;  -- bulk load: no per-row triggers or foreign-key checks
INSERT INTO streams (id) SELECT 's' || i FROM generate_series(0, 9) AS i;
INSERT INTO viewers (user_id, login, last_seen)
SELECT 'u' || i, 'viewer' || i, now() FROM generate_series(0, 9999) AS i;
INSERT INTO messages (id, stream, user_id, login, text, ts)
SELECT 'm' || i, 's' || (i % 10), 'u' || (i % 10000), 'viewer' || (i % 10000),
       'message ' || i, timestamptz '2026-01-01' + i * interval '2 second'
FROM generate_series(0, {TURNS - 1}) AS i;
INSERT INTO turns (id, stream, message_ids)
SELECT 't' || j, 's' || (j % 10), ARRAY['m' || j]
FROM generate_series(0, {TURNS - 1}) AS j;
INSERT INTO turn_messages (message_id, turn_id)
SELECT unnest(message_ids), id FROM turns;
INSERT INTO turn_outcomes (turn_id, status, reply, ts)
SELECT 't' || j, 'completed', 'reply ' || j, timestamptz '2026-01-01' + (2 * j + 1) * interval '1 second'
FROM generate_series(0, {TURNS - 1}) AS j;
INSERT INTO turn_deliveries (turn_id, part, channel, twitch_message_id, status)
SELECT 't' || j, 0, 'c0', 'tw' || j, 'sent' FROM generate_series(0, {TURNS - 1}) AS j;
INSERT INTO jobs (kind, dedupe_key, payload, status)
SELECT 'consolidate_turn', 't' || j, '{{}}', 'succeeded' FROM generate_series(0, {TURNS - 1}) AS j;
INSERT INTO message_redactions (message_id, user_id, actor)
SELECT 'm' || i, 'u' || (i % 10000), 'test' FROM generate_series(0, 999) AS i;
INSERT INTO viewer_profiles (user_id, slot, value, statement, memory_id, turn_id, stated_at)
SELECT 'u' || i, 'job', 'designer', 'I am a designer', 'mem' || i, 't' || i, now()
FROM generate_series(0, 9999) AS i;
RESET session_replication_role;
ANALYZE;
"""

#: hot query → its parameters (a turn and messages near the end of the channel's life)
HOT: dict[str, tuple[Any, ...]] = {
    "transcript_insert_message": (
        "new1",
        "s1",
        "u1",
        "viewer1",
        None,
        [],
        "hi",
        LATER,
        "message",
        None,
        None,
        [],
    ),
    "transcript_upsert_viewer": ("u1", "viewer1", None, LATER),
    "transcript_insert_turn": ("new-turn", "s1", ["m1"]),
    "transcript_get_turn": ("t99990",),
    "transcript_get_messages": (["m99990", "m99980"],),
    "transcript_answered_message_ids": (["m99990"],),
    "transcript_recent_history": ("s3", 200),
    "transcript_redacted_ids": (["m99990", "m5"],),
    "transcript_viewer_by_login": ("viewer42",),
    "transcript_viewer_by_id": ("u42",),
    "transcript_stream_spans": (50,),
    "memory_turn_messages": (["m99990", "m99980"],),
    "memory_turn_authors": ("t99990",),
    "memory_tombstones_for_turn": (["t99990", "t5"], ["mem1"], ["u1"]),
    "memory_messages_before": ("s1", "m99990"),
    "memory_profile_get": ("u42",),
    "memory_stream_paused": ("s1",),
    "state_turn_message_ids": (["t99990", "t5"],),
    "state_turn_chat_time": ("t99990",),
    "state_next_tool_seq": ("t99990",),
    "state_tool_calls": ("t99990",),
    "state_barrier_for_turn": ("t99990",),
    "state_latest_summary": ("s1",),
    "state_channel_of_stream": ("s1",),
    "state_viewer_by_login": ("viewer42",),
    "jobs_enqueue": ("consolidate_turn", "t-new", "{}", 5),
    "memory_bot_replies": (["tw99990", "unknown"],),
    "memory_bot_questions": ("s1", "t99991", ["u1", "u2"]),
    "reply_is_bot_message": ("tw99990",),
    "jobs_claim": (1, "consolidation"),
    "jobs_by_dedupe_key": ("consolidate_turn", "t99990"),
}


def seq_scans(plan: Any) -> Iterator[str]:
    """Tables a plan (EXPLAIN FORMAT JSON) reads with a sequential scan."""
    if isinstance(plan, dict):
        if plan.get("Node Type") == "Seq Scan":
            yield str(plan.get("Relation Name"))
        for value in plan.values():
            yield from seq_scans(value)
    elif isinstance(plan, list):
        for value in plan:
            yield from seq_scans(value)


def literal(value: Any) -> str:
    """A parameter of the table above as an SQL literal (EXECUTE takes expressions, not $n)."""
    if value is None:
        return "NULL"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "ARRAY[" + ", ".join(literal(v) for v in value) + "]::text[]"
    text = value.isoformat() if isinstance(value, datetime) else str(value)
    return "'" + text.replace("'", "''") + "'"


async def plan_of(conn: asyncpg.Connection, name: str, *, generic: bool) -> Any:
    query = sql.queries[name]
    params = ", ".join(literal(value) for value in HOT[name])
    mode = "force_generic_plan" if generic else "force_custom_plan"
    async with conn.transaction():
        await conn.execute(f"SET LOCAL plan_cache_mode = {mode}")
        await conn.execute(f"PREPARE hot AS {query}")
        try:
            execute = f"EXPLAIN (FORMAT JSON) EXECUTE hot({params})" if params else "EXECUTE hot"
            return json.loads(await conn.fetchval(execute))
        finally:
            await conn.execute("DEALLOCATE hot")


@pytest.fixture
async def channel_life(db: postgres.Database) -> postgres.Database:
    async with db.pool.acquire() as conn:
        await conn.execute(BUILD)
    return db


@pytest.mark.timeout(120)
async def test_hot_queries_use_indexes_at_100k_turns(channel_life: postgres.Database) -> None:
    found: dict[str, list[str]] = {}
    async with channel_life.pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM turn_messages") == TURNS
        for name in HOT:
            for generic in (False, True):
                plan = await plan_of(conn, name, generic=generic)
                scans = sorted(set(seq_scans(plan)) & GROWING)
                if scans:
                    found[f"{name} ({'generic' if generic else 'custom'})"] = scans
    assert found == {}


async def test_answered_lookup_finds_only_finished_turns(channel_life: postgres.Database) -> None:
    pool = channel_life.pool
    await pool.execute(
        "INSERT INTO messages (id, stream, user_id, login, text, ts) "
        "VALUES ('late', 's1', 'u1', 'viewer1', 'x', now())"
    )
    await pool.execute(sql.queries["transcript_insert_turn"], "open-turn", "s1", ["late"])
    rows = await pool.fetch(
        sql.queries["transcript_answered_message_ids"], ["m99990", "late", "unknown"]
    )
    assert {r["id"] for r in rows} == {"m99990"}


async def test_migration_indexes_the_turns_already_stored(server_dsn: str, tmp_path: Path) -> None:
    """Turns written before the index existed are found by it (the migration backfills)."""
    migrations = migrate.discover()
    index = next(m for m in migrations if m.path.name.endswith("_turn_message_index.sql"))
    for m in migrations:
        if m.version < index.version:
            shutil.copy(m.path, tmp_path / m.path.name)
    name = f"lm_backfill_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(server_dsn)
    await admin.execute(f'CREATE DATABASE "{name}"')
    dsn = conftest.with_database(server_dsn, name)
    pool = await asyncpg.create_pool(dsn, min_size=1, max_size=2)
    try:
        db = postgres.Database(pool=pool, dsn=dsn)
        await migrate.apply(db, tmp_path)
        await pool.execute("INSERT INTO streams (id) VALUES ('s1')")
        await pool.execute(sql.queries["transcript_insert_turn"], "old", "s1", ["a", "b", "a"])
        shutil.copy(index.path, tmp_path / index.path.name)
        assert await migrate.apply(db, tmp_path) == [index.version]
        rows = await pool.fetch("SELECT message_id, turn_id FROM turn_messages ORDER BY 1")
        assert [tuple(r) for r in rows] == [("a", "old"), ("b", "old")]
    finally:
        await pool.close()
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
