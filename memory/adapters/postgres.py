"""Postgres: the connection pool, the embedded default, and driver-error translation."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import asyncpg

from memory import errors, outage
from memory.adapters import pg_embedded

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from config.settings import Settings

logger = logging.getLogger(__name__)

#: the driver's types, for the modules that take a row, a connection or a pool (only adapters
#: import the driver)
Record = asyncpg.Record
Connection = asyncpg.Connection
Pool = asyncpg.Pool

#: what asyncpg's pool raises (``InterfaceError``, no class of its own) once this process closes it
POOL_CLOSED = frozenset({"pool is closing", "pool is closed"})
#: driver errors that mean "the server is not there (yet)"
CONNECT_ERRORS = (OSError, asyncpg.CannotConnectNowError, asyncpg.ConnectionDoesNotExistError)


@dataclass(frozen=True, slots=True)
class Database:
    """An open asyncpg pool and the DSN it came from (workers need the DSN for LISTEN)."""

    pool: asyncpg.Pool
    dsn: str
    embedded: bool = False


@contextlib.contextmanager
def wrap_errors(action: str) -> Iterator[None]:
    """Translate driver errors into ``errors.StoreUnavailable`` at the boundary; an outage is told
    once when it starts and once when it ends (``memory.outage``)."""
    with outage.watched(outage.POSTGRES, "Postgres"), _translate(action):
        yield


@contextlib.contextmanager
def _translate(action: str) -> Iterator[None]:
    try:
        yield
    except CONNECT_ERRORS as exc:
        raise errors.StoreUnavailable(f"Postgres is unavailable ({action}): {exc}") from exc
    except (asyncpg.InterfaceError, asyncpg.InternalClientError) as exc:
        if str(exc) in POOL_CLOSED:
            raise errors.StoreClosed(f"Postgres pool closed ({action}): {exc}") from exc
        # InternalClientError: the server went away in the middle of an operation ("cannot switch
        # to state …; another operation is in progress")
        raise errors.StoreUnavailable(f"Postgres connection failed ({action}): {exc}") from exc
    except (asyncpg.PostgresConnectionError, asyncpg.exceptions.OperatorInterventionError) as exc:
        # the server restarts or shuts down under us: transient, a retry can succeed
        raise errors.StoreUnavailable(f"Postgres went away ({action}): {exc}") from exc


#: the embedded Postgres (``pg_embedded``): started here, or ahead by the entry points
start_embedded = pg_embedded.start_embedded


class _RefillFailures(logging.Filter):
    """asyncpg logs a traceback each time it cannot refill its pool while Postgres is down
    ("Failed to restore the pool connection floor"): that is the outage, told once by Postgres's
    condition (``memory.outage``), its traceback at DEBUG. Anything else it logs passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, CONNECT_ERRORS):
            outage.conditions.failed(outage.POSTGRES, exc, what="Postgres")
            return False
        return True


_REFILL_FAILURES = _RefillFailures()


async def connect_pool(dsn: str, settings: Settings) -> asyncpg.Pool:
    """Open a pool with bounded, logged retries (services under compose start in any order)."""
    pool_logger = logging.getLogger("asyncpg.pool")
    if _REFILL_FAILURES not in pool_logger.filters:
        pool_logger.addFilter(_REFILL_FAILURES)
    attempts = settings.postgres.connect_attempts
    for attempt in range(1, attempts + 1):
        try:
            pool = await asyncpg.create_pool(
                dsn,
                min_size=settings.postgres.pool_min_size,
                max_size=settings.postgres.pool_max_size,
            )
        except (*CONNECT_ERRORS, asyncpg.InvalidCatalogNameError) as exc:
            if attempt == attempts:
                raise errors.StoreUnavailable(
                    f"cannot connect to Postgres after {attempts} attempts: {exc}"
                ) from exc
            logger.warning(
                "Postgres not reachable (%s), %d attempt(s) left", exc, attempts - attempt
            )
            await asyncio.sleep(settings.postgres.connect_retry_seconds)
        else:
            assert pool is not None
            return pool
    raise AssertionError("unreachable")


@contextlib.asynccontextmanager
async def open_database(settings: Settings) -> AsyncIterator[Database]:
    """Open the configured database (embedded when ``DATABASE_URL`` is unset: started, or
    adopted, here and stopped at the end of the block when no other process of the data folder
    uses it).

    ``memory.migrate.open_database`` opens it migrated (what every process but the migration
    command and the worker healthcheck wants).
    """
    embedded = settings.database_url is None
    if embedded:
        early = pg_embedded.take_early(settings.data_dir)
        if early is not None:  # started by the entry point while it imported the rest
            dsn = await asyncio.wrap_future(early)
        else:  # starting the bundled server is a one-time subprocess launch, not a client call
            dsn = await asyncio.to_thread(start_embedded, settings.data_dir)
    else:
        assert settings.database_url is not None
        dsn = settings.database_url.get_secret_value()
    try:
        pool = await connect_pool(dsn, settings)
        try:
            yield Database(pool=pool, dsn=dsn, embedded=embedded)
        finally:
            await pool.close()
    finally:
        if embedded:  # the last use of the last process stops the server (``pg_embedded``)
            pg_embedded.release(settings.data_dir)


async def connect_standalone(dsn: str) -> asyncpg.Connection:
    """A connection outside the pool (LISTEN needs one of its own)."""
    with wrap_errors("connect"):
        return await asyncpg.connect(dsn)


def record(row: asyncpg.Record | None) -> dict[str, Any] | None:
    return dict(row) if row is not None else None
