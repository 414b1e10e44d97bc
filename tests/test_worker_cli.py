"""The worker's command line (``python -m memory.worker``): healthcheck, errors, burst mode."""

from __future__ import annotations

import asyncio
import contextlib
import types
from typing import TYPE_CHECKING, Any

import asyncpg

from memory import migrate
from memory.consolidate import jobs, worker_cli
from tests import cli

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    import pytest

    from config.settings import Settings
    from tests.conftest import SettingsFactory

KIND = "consolidate_turn"


def _sql(dsn: str, query: str, *args: Any) -> Any:
    async def go() -> Any:
        conn = await asyncpg.connect(dsn)
        try:
            return await conn.fetchval(query, *args)
        finally:
            await conn.close()

    return asyncio.run(go())


def test_check_reports_live_workers(
    make_settings: SettingsFactory, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = make_settings()
    assert worker_cli.main(["--check", "--name", "cli-"], settings) == 1
    assert "no live worker" in capsys.readouterr().err

    _sql(database_url, "INSERT INTO workers (name) VALUES ('cli-1')")
    assert worker_cli.main(["--check", "--name", "cli-"], settings) == 0
    assert "cli-1" in capsys.readouterr().out

    _sql(database_url, "UPDATE workers SET last_heartbeat = now() - interval '1 hour'")
    assert worker_cli.main(["--check", "--name", "cli-"], settings) == 1


def test_postgres_down_is_one_line_and_exit_code_1(
    make_settings: SettingsFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = make_settings(
        database_url="postgresql://postgres@127.0.0.1:1/nowhere",
        postgres={"connect_attempts": 1, "connect_retry_seconds": 0},
    )
    assert worker_cli.main(["--check"], settings) == 1
    err = capsys.readouterr().err
    assert err.startswith("memory.worker: cannot connect to Postgres")
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_until_empty_runs_the_handlers_of_the_services(
    make_settings: SettingsFactory,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = make_settings()
    for key in ("t1", "t2"):
        _sql(
            database_url,
            "INSERT INTO jobs (kind, dedupe_key, payload) VALUES ($1, $2, $3::jsonb)",
            KIND,
            key,
            f'{{"turn_id": "{key}"}}',
        )
    done: list[str] = []
    roles: list[str] = []

    async def handler(job: jobs.Job) -> None:
        done.append(job.dedupe_key)

    @contextlib.asynccontextmanager
    async def lifespan(settings: Settings, *, role: str) -> AsyncIterator[Any]:
        roles.append(role)
        async with migrate.open_database(settings) as db:
            yield types.SimpleNamespace(db=db, job_handlers={KIND: handler})

    # stands in for the composition root (memory/runtime.py) that owns the real handlers
    fake = types.SimpleNamespace(lifespan=lifespan)
    monkeypatch.setattr(worker_cli, "runtime", fake)

    assert worker_cli.main(["--until-empty", "--concurrency", "2"], settings) == 0

    assert sorted(done) == ["t1", "t2"]
    assert roles == ["worker"]
    assert "succeeded=2" in capsys.readouterr().out


def test_python_m_memory_worker_runs_the_command_line(database_url: str, tmp_path: Path) -> None:
    env = {"DATABASE_URL": database_url, "LIVEMEMORY_DATA_DIR": str(tmp_path / "data")}
    result = cli.run("memory.worker", "--check", "--name", "nobody-", env=env, cwd=tmp_path)
    assert result.code == 1, result.err
    assert "no live worker named nobody-" in result.err
