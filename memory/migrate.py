"""Apply ``migrations/NNNN_name.sql`` in order: each in a transaction, under an advisory lock, recorded
in ``schema_migrations``. A second run does nothing.

``python -m memory.migrate`` runs it against the configured database (embedded when ``DATABASE_URL``
is unset); the bot and the workers also run it at start-up.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memory import errors, logs, stopping
from memory.adapters import pg_embedded, postgres

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from config.settings import Settings

logger = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"
NAME_PATTERN = re.compile(r"^(?P<version>\d{4})_(?P<name>[a-z0-9]+(?:_[a-z0-9]+)*)\.sql$")
#: pg_advisory_lock key (any constant; "livememory" in ASCII, truncated to a bigint)
LOCK_KEY = 0x6C6976656D656D


@dataclass(frozen=True, slots=True, kw_only=True)
class Migration:
    version: str
    name: str
    path: Path

    @property
    def sql(self) -> str:
        return self.path.read_text(encoding="utf-8")


def discover(directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    """The migrations of ``directory`` in order; a badly named file is an error."""
    found: list[Migration] = []
    for path in sorted(directory.iterdir()):
        if path.suffix != ".sql":
            continue
        match = NAME_PATTERN.match(path.name)
        if not match:
            raise errors.MigrationError(
                f"{path.name}: migration names are NNNN_snake_case_description.sql"
            )
        found.append(Migration(version=match["version"], name=match["name"], path=path))
    return found


async def apply(db: postgres.Database, directory: Path = MIGRATIONS_DIR) -> list[str]:
    """Apply the pending migrations; returns the versions applied now."""
    migrations = discover(directory)
    applied_now: list[str] = []
    async with db.pool.acquire() as conn:
        await conn.execute("SELECT pg_advisory_lock($1)", LOCK_KEY)
        try:
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version text PRIMARY KEY, name text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            done = {r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations")}
            for migration in migrations:
                if migration.version in done:
                    continue
                logger.debug(
                    "applying migration %s_%s",
                    migration.version,
                    migration.name,
                    extra={"action": "migrate"},
                )
                try:
                    async with conn.transaction():
                        await conn.execute(migration.sql)
                        await conn.execute(
                            "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                            migration.version,
                            migration.name,
                        )
                except Exception as exc:
                    raise errors.MigrationError(
                        f"migration {migration.path.name} failed: {exc}"
                    ) from exc
                applied_now.append(migration.version)
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", LOCK_KEY)
    if applied_now:  # one line, not one a migration
        logger.info(
            "applied %d migration(s), %s to %s",
            len(applied_now),
            applied_now[0],
            applied_now[-1],
            extra={"action": "migrate", "versions": applied_now},
        )
    return applied_now


@contextlib.asynccontextmanager
async def open_database(settings: Settings) -> AsyncIterator[postgres.Database]:
    """The configured database (``postgres.open_database``) with every migration applied."""
    async with postgres.open_database(settings) as db:
        await apply(db)
        yield db


def parser() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(
        prog="python -m memory.migrate",
        description="Apply the pending migrations (migrations/NNNN_name.sql) to the configured "
        "database: DATABASE_URL, or the embedded Postgres in LIVEMEMORY_DATA_DIR. Each runs in "
        "its own transaction under an advisory lock; a second run does nothing. The bot and the "
        "workers also do this at start-up.",
    )


async def _main(argv: list[str] | None = None) -> int:
    from config import settings as settings_module

    parser().parse_args(argv)
    settings = settings_module.load_or_exit()
    logs.configure(settings.log_level, settings.log_format)
    try:
        async with postgres.open_database(settings) as db:
            applied = await apply(db)
    except errors.MemoryServiceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"applied {len(applied)} migration(s)" if applied else "database is up to date")
    return 0


def main(argv: list[str] | None = None) -> int:
    """The command line. SIGTERM and SIGHUP stop it as Ctrl-C does (``stopping.run``),
    also where SIGINT is ignored (a shell's background job): the migration under way is rolled
    back (each is one transaction), the lock released, and an embedded Postgres it started
    stopped; the ones applied before are kept."""
    pg_embedded.EXITING = "this migration"
    try:
        return stopping.run(_main(argv))
    except KeyboardInterrupt:
        print(
            "interrupted: the migrations applied before are kept; run it again for the rest",
            file=sys.stderr,
        )
        return stopping.EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
