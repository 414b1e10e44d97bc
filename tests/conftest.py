"""Shared fixtures: real Postgres (a template database with the migrations, cloned per test), Redis
(a key prefix per test), embedded Qdrant, and a protocol-faithful fake Ollama on 127.0.0.1.

Postgres is ``DATABASE_URL`` when set (CI), else an embedded Postgres started once per session.
Redis is ``REDIS_URL``; without it the Redis tests are skipped, unless ``LIVEMEMORY_REQUIRE_SERVICES``
is set (CI), where a missing service fails them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import hypothesis
import pytest

from config import settings as settings_module
from memory import migrate
from memory.adapters import pg_embedded, postgres
from tests.fakes import ollama as fake_ollama_module

if TYPE_CHECKING:
    from pathlib import Path

REQUIRE_SERVICES = bool(os.environ.get("LIVEMEMORY_REQUIRE_SERVICES"))

#: the real small model server of the ``realmodel`` tests (``real_model``, one per session)
pytest_plugins = ["tests.model_server"]

# The fuzz suite (tests/test_fuzz.py): bounded and reproducible by default (CI); a long run is
# ``pytest tests/test_fuzz.py --hypothesis-profile=long`` (docs/reliability.md).
hypothesis.settings.register_profile(
    "ci", max_examples=100, deadline=None, derandomize=True, database=None
)
hypothesis.settings.register_profile("long", max_examples=20_000, deadline=None)
hypothesis.settings.load_profile("ci")


def with_database(dsn: str, name: str) -> str:
    """The same DSN pointing at another database."""
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(path=f"/{name}"))


@pytest.fixture(scope="session")
def server_dsn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A DSN of a Postgres server the tests may create databases on."""
    dsn = os.environ.get("DATABASE_URL")
    if dsn:
        yield dsn
        return
    folder = tmp_path_factory.mktemp("embedded-pg")
    yield pg_embedded.start_embedded(folder)
    # stopped here, not at exit: the exit hook's log line would find pytest's output closed
    pg_embedded.stop_embedded(folder)


async def _create_template(server: str, name: str) -> None:
    conn = await asyncpg.connect(server)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    pool = await asyncpg.create_pool(with_database(server, name), min_size=1, max_size=2)
    try:
        await migrate.apply(postgres.Database(pool=pool, dsn=with_database(server, name)))
    finally:
        await pool.close()


async def _drop(server: str, name: str) -> None:
    conn = await asyncpg.connect(server)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def template_db(server_dsn: str) -> Iterator[str]:
    """A database with every migration applied, cloned by each test."""
    name = f"lm_tmpl_{os.getpid()}"
    asyncio.run(_create_template(server_dsn, name))
    yield name
    asyncio.run(_drop(server_dsn, name))


@contextlib.asynccontextmanager
async def fresh_database(server_dsn: str, template_db: str) -> AsyncIterator[str]:
    """A fresh, migrated database (``CREATE DATABASE … TEMPLATE``), dropped after the block."""
    name = f"lm_test_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(server_dsn)
    try:
        await conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template_db}"')
    finally:
        await conn.close()
    yield with_database(server_dsn, name)
    await _drop(server_dsn, name)


@pytest.fixture
async def database_url(server_dsn: str, template_db: str) -> AsyncIterator[str]:
    """A fresh, migrated database of this test's own."""
    async with fresh_database(server_dsn, template_db) as url:
        yield url


@pytest.fixture
def redis_url() -> str:
    url = os.environ.get("REDIS_URL")
    if not url:
        if REQUIRE_SERVICES:
            pytest.fail("REDIS_URL is not set but LIVEMEMORY_REQUIRE_SERVICES is")
        pytest.skip("REDIS_URL is not set")
    return url


@pytest.fixture
async def fake_ollama() -> AsyncIterator[fake_ollama_module.FakeOllama]:
    """A fake Ollama server on 127.0.0.1 speaking Ollama's wire format (scriptable)."""
    server = fake_ollama_module.FakeOllama()
    await server.start()
    yield server
    await server.stop()


SettingsFactory = Callable[..., settings_module.Settings]


class IsolatedSettings(settings_module.Settings):
    """``Settings`` that read only their arguments: no environment, no ``.env``."""

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: Any, init_settings: Any, *args: Any, **kwargs: Any
    ) -> tuple[Any, ...]:
        return (init_settings,)


@pytest.fixture
def make_settings(tmp_path: Path, database_url: str) -> SettingsFactory:
    """Build ``Settings`` for a test: its own database and data folder, offline embedder, no .env."""

    def factory(**overrides: Any) -> settings_module.Settings:
        values: dict[str, Any] = {
            "database_url": database_url,
            "data_dir": tmp_path / "data",
            "ollama_host": "http://127.0.0.1:9",
            "memory": {"embedder": "offline"},
            "worker": {"in_process": False, "backoff_base_seconds": 0.0},
            # every batch answered, as without a reply policy: tests of memory get
            # a turn per batch; tests of the policy ask for ``addressed`` / ``ambient``
            "reply": {"policy": "always"},
        }
        for key, value in overrides.items():
            if isinstance(value, dict) and isinstance(values.get(key), dict):
                values[key] = {**values[key], **value}
            else:
                values[key] = value
        return IsolatedSettings(**values)

    return factory


@pytest.fixture
async def db(make_settings: SettingsFactory) -> AsyncIterator[postgres.Database]:
    async with migrate.open_database(make_settings()) as database:
        yield database


@pytest.fixture
def env(database_url: str, tmp_path: Path) -> dict[str, str]:
    """The environment of a command run as a user would (``tests.cli.run``): this test's database
    and data folder, the offline embedder, no Ollama."""
    return {
        "DATABASE_URL": database_url,
        "LIVEMEMORY_DATA_DIR": str(tmp_path / "data"),
        "OLLAMA_HOST": "http://127.0.0.1:9",
        "LIVEMEMORY_MEMORY__EMBEDDER": "offline",
        # a report with plan and recall for every batch, as without a reply policy
        "LIVEMEMORY_REPLY__POLICY": "always",
    }
