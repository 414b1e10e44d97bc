from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING

import asyncpg
import pytest

from memory import errors, migrate
from memory.adapters import postgres
from tests import conftest

if TYPE_CHECKING:
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


async def test_all_migrations_apply_to_an_empty_database_and_a_second_run_does_nothing(
    server_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="memory.migrate")
    name = f"lm_migration_test_{uuid.uuid4().hex[:8]}"  # the server may be shared
    conn = await asyncpg.connect(server_dsn)
    await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.close()
    dsn = conftest.with_database(server_dsn, name)
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
        conn = await asyncpg.connect(server_dsn)
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.close()


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
