from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import time
import uuid
from typing import TYPE_CHECKING

import asyncpg
import pytest

from memory import errors, migrate, stopping
from memory.adapters import postgres
from tests import cli, conftest, live_bot

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

MIGRATIONS = migrate.discover()


@pytest.mark.parametrize("migration", MIGRATIONS, ids=lambda m: m.path.name)
def test_migration_properly_named(migration: migrate.Migration) -> None:
    assert migrate.NAME_PATTERN.match(migration.path.name)


def test_migrations_numbered_without_gaps_or_duplicates() -> None:
    versions = [int(m.version) for m in MIGRATIONS]
    assert versions == list(range(1, len(versions) + 1))


def test_badly_named_migration_is_refused(tmp_path: Path) -> None:
    (tmp_path / "0001_Bad-Name.sql").write_text("select 1")
    with pytest.raises(errors.MigrationError, match="NNNN_snake_case"):
        migrate.discover(tmp_path)


@contextlib.asynccontextmanager
async def _fresh_database(server_dsn: str) -> AsyncIterator[str]:
    """The DSN of a new empty database, dropped at the end (the server may be shared)."""
    name = f"lm_migration_test_{uuid.uuid4().hex[:8]}"
    conn = await asyncpg.connect(server_dsn)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    try:
        yield conftest.with_database(server_dsn, name)
    finally:
        conn = await asyncpg.connect(server_dsn)
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.close()


async def test_all_migrations_apply_to_an_empty_database_and_a_second_run_does_nothing(
    server_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="memory.migrate")
    async with _fresh_database(server_dsn) as dsn:
        pool = await asyncpg.create_pool(dsn, min_size=1, max_size=2)
        try:
            db = postgres.Database(pool=pool, dsn=dsn)
            first = await migrate.apply(db)
            assert first == [m.version for m in MIGRATIONS]
            # one summary line, not one a migration
            [line] = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
            assert line == f"applied {len(first)} migration(s), {first[0]} to {first[-1]}"
            assert await migrate.apply(db) == []
            assert len([r for r in caplog.records if r.levelno >= logging.INFO]) == 1
            rows = await pool.fetch("SELECT version FROM schema_migrations ORDER BY version")
            assert [r["version"] for r in rows] == first
        finally:
            await pool.close()


#: the sessions of a database waiting for an advisory lock
WAITING_FOR_THE_LOCK = (
    "SELECT count(*) FROM pg_stat_activity"
    " WHERE datname = current_database() AND wait_event = 'advisory'"
)


@pytest.mark.parametrize("start", ["terminal", "background"])
async def test_a_signal_stops_the_command_as_ctrl_c_does_and_applies_nothing_half(
    server_dsn: str, tmp_path: Path, start: str
) -> None:
    """``python -m memory.migrate`` stopped by SIGTERM while it waits for another process's
    migration (the advisory lock, held here): one line, exit 130, no traceback, its connection
    gone and nothing applied; also as a shell's background job, where SIGINT is ignored."""
    argv = {"terminal": live_bot.AS_FROM_A_TERMINAL, "background": live_bot.AS_A_BACKGROUND_JOB}
    async with _fresh_database(server_dsn) as dsn:
        holder = await asyncpg.connect(dsn)
        try:
            await holder.execute("SELECT pg_advisory_lock($1)", migrate.LOCK_KEY)
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                argv[start],
                "-m",
                "memory.migrate",
                env={**cli.environment(), "DATABASE_URL": dsn},
                cwd=tmp_path,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            try:
                deadline = time.monotonic() + 60
                while await holder.fetchval(WAITING_FOR_THE_LOCK) == 0:
                    assert process.returncode is None, await process.communicate()
                    assert time.monotonic() < deadline, "memory.migrate never waited for the lock"
                    await asyncio.sleep(0.05)  # a state of the server, not work: polled
                process.send_signal(signal.SIGTERM)
                out, err = (
                    stream.decode()
                    for stream in await asyncio.wait_for(process.communicate(), timeout=60)
                )
            finally:
                if process.returncode is None:
                    process.kill()
                    await process.wait()
            assert process.returncode == stopping.EXIT_INTERRUPTED, err
            assert err == (
                "interrupted: the migrations applied before are kept; run it again for the rest\n"
            )
            assert out == ""
            assert await holder.fetchval(WAITING_FOR_THE_LOCK) == 0
            assert await holder.fetchval("SELECT to_regclass('schema_migrations')") is None
        finally:
            await holder.close()


async def test_failed_migration_rolls_back_and_says_which(
    db: postgres.Database, tmp_path: Path
) -> None:
    (tmp_path / "0001_ok.sql").write_text("CREATE TABLE ok_table (x int);")
    (tmp_path / "0002_broken.sql").write_text("CREATE TABLE half (x int); SELECT nonsense_column;")
    await db.pool.execute("DROP TABLE schema_migrations")
    with pytest.raises(errors.MigrationError, match=r"0002_broken\.sql"):
        await migrate.apply(db, tmp_path)
    assert await db.pool.fetchval("SELECT to_regclass('half')") is None
    assert await db.pool.fetchval("SELECT to_regclass('ok_table')") is not None


async def test_transcript_is_append_only(db: postgres.Database) -> None:
    await db.pool.execute("INSERT INTO streams (id) VALUES ('s1')")
    await db.pool.execute(
        "INSERT INTO messages (id, stream, user_id, login, text, ts)"
        " VALUES ('m1', 's1', '1', 'a', 'hi', now())"
    )
    with pytest.raises(asyncpg.RestrictViolationError, match="append-only"):
        await db.pool.execute("UPDATE messages SET text = 'changed'")
    with pytest.raises(asyncpg.RestrictViolationError):
        await db.pool.execute("DELETE FROM messages")
