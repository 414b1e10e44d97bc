"""The admin commands an operator runs for months: dry runs and confirmations, ``--json`` on every
subcommand, listings, the job queue, short ids, Postgres-only commands beside a running bot."""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

from memory import identity
from memory.adapters import qdrant
from memory.consolidate import jobs
from memory.ops import admin
from memory.spaces import embedders, records
from tests import cli
from tests import test_admin as admin_tests
from tests import test_consolidation as helpers

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

    from config import settings as settings_module
    from memory.adapters import postgres

run = admin_tests.run
inspect = admin_tests.inspect
settings = admin_tests.settings
stream = admin_tests.stream
msg = helpers.msg


async def _memories(settings: settings_module.Settings) -> list[dict[str, Any]]:
    memories: list[dict[str, Any]] = (await inspect(settings))["memories"]
    return memories


async def test_every_destructive_command_dry_runs_asks_and_takes_yes(
    settings: settings_module.Settings, stream: list[str], tmp_path: Path
) -> None:
    [designer, cat] = await _memories(settings)
    lore_dir = tmp_path / "lore"
    lore_dir.mkdir()
    (lore_dir / "one.md").write_text("# x\n\n## Biscotto\nThe mascot pigeon.\n")
    destructive = [
        ("forget", "--memory-id", cat["id"]),
        ("forget", "--turn", stream[1]),
        ("forget", "--viewer", "alice"),
        ("correct", "--memory-id", designer["id"], "--text", "I draw comics"),
        ("lore", "load", str(lore_dir)),
        ("reembed", "--all", "--force"),
        ("reembed", "--viewer", "alice", "--force"),
    ]
    for argv in destructive:
        code, out, err = await run(settings, *argv, "--dry-run", "--json")
        assert (code, err) == (0, ""), argv
        assert json.loads(out)["dry_run"] is True, argv
        code, out, err = await run(settings, *argv, stdin="n\n")
        assert (code, out) == (1, ""), argv
        assert "Go ahead? [y/N]" in err and err.endswith("aborted: nothing changed\n"), argv
    assert await _memories(settings) == [designer, cat]  # nothing changed

    code, out, err = await run(settings, "forget", "--memory-id", cat["id"], "--dry-run")
    assert code == 0 and "my cat is called Miso" in out and "dry run: nothing changed" in out
    code, out, _ = await run(settings, "forget", "--memory-id", cat["id"], stdin="y\n")
    assert code == 0 and f"memory_id={cat['id']}" in out
    assert [m["id"] for m in await _memories(settings)] == [designer["id"]]


async def test_lore_load_shows_the_entries_added_removed_and_changed(
    settings: settings_module.Settings, tmp_path: Path
) -> None:
    first = tmp_path / "first"
    first.mkdir()
    (first / "a.md").write_text(
        "# x\n\n## Biscotto\nThe mascot pigeon.\n\n## Quill\nA professor.\n"
    )
    assert (await run(settings, "lore", "load", str(first), "--yes"))[0] == 0
    second = tmp_path / "second"
    second.mkdir()
    (second / "a.md").write_text("# x\n\n## Biscotto\nThe mascot crow.\n\n## Toaster\nIt burned.\n")

    code, out, _ = await run(settings, "lore", "load", str(second), "--dry-run", "--json")
    diff = json.loads(out)
    assert code == 0
    assert [a["title"] for a in diff["added"]] == ["Toaster"]
    assert [r["title"] for r in diff["removed"]] == ["Quill"]
    assert diff["changed"] == [
        {
            "title": "Biscotto",
            "old": "Biscotto: The mascot pigeon.",
            "new": "Biscotto: The mascot crow.",
        }
    ]
    code, out, _ = await run(settings, "lore", "load", str(second), "--dry-run")
    assert "+ Toaster: It burned." in out and "- Quill: A professor." in out
    assert "~ Biscotto" in out and "lore: 1 added, 1 removed, 1 changed, 0 unchanged" in out


async def test_a_short_id_from_chat_is_accepted_and_an_ambiguous_one_refused(
    settings: settings_module.Settings, stream: list[str]
) -> None:
    [_designer, cat] = await _memories(settings)
    code, out, _ = await run(settings, "forget", "--memory-id", cat["id"][:6], "--yes", "--json")
    assert code == 0 and json.loads(out)["memory_id"] == cat["id"]
    code, _, err = await run(settings, "correct", "--memory-id", "abc", "--text", "x", "--yes")
    assert code == 1 and "at least 4" in err
    memory = await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder())
    try:  # two memories whose ids share their first characters
        await memory.upsert(
            [
                records.MemoryRecord(
                    id=f"abcd{n}000-0000-4000-8000-000000000000",
                    space=identity.personal_key("1001"),
                    kind=records.MemoryKind.PERSONAL,
                    text=f"twin {n}",
                    user_id="1001",
                )
                for n in (1, 2)
            ]
        )
    finally:
        await memory.close()
    code, _, err = await run(settings, "forget", "--memory-id", "abcd", "--yes")
    assert code == 1 and err.count("\n") == 1
    assert "the prefix matches 2 memories, give more of it" in err
    code, out, _ = await run(settings, "forget", "--memory-id", "ABCD1", "--yes")
    assert code == 0 and "abcd1000" in out


async def test_every_subcommand_answers_json(
    settings: settings_module.Settings, stream: list[str], db: postgres.Database
) -> None:
    for argv in (
        ("inspect", "--viewer", "alice"),
        ("inspect", "--user-id", "1001"),
        ("export", "--user-id", "1001"),
        ("list", "viewers"),
        ("list", "streams"),
        ("jobs",),
        ("audit",),
        ("pause", "--stream", "s1"),
        ("resume", "--stream", "s1"),
        ("reembed", "--all"),
        ("reembed", "--user-id", "1001", "--force", "--yes"),
    ):
        code, out, err = await run(settings, *argv, "--json")
        assert (code, err) == (0, ""), argv
        json.loads(out)  # one JSON document
    viewers = json.loads((await run(settings, "list", "viewers", "--json"))[1])
    by_login = {v["login"]: v for v in viewers}
    assert by_login["alice"]["memories"] == 2 and by_login["alice"]["messages"] == 2
    assert by_login["bob"]["memories"] == 0 and by_login["bob"]["messages"] == 1
    found = json.loads((await run(settings, "list", "viewers", "--search", "AL", "--json"))[1])
    assert [v["login"] for v in found] == ["alice"]
    [s1] = json.loads((await run(settings, "list", "streams", "--json"))[1])
    assert (s1["id"], s1["messages"], s1["turns"], s1["paused"]) == ("s1", 3, 2, False)


async def test_pause_refuses_an_unknown_stream(
    settings: settings_module.Settings, db: postgres.Database
) -> None:
    code, out, err = await run(settings, "pause", "--stream", "nope")
    assert (code, out) == (1, "")
    assert err == "error: unknown stream 'nope' (python -m memory.admin list streams shows them)\n"
    assert await db.pool.fetchval("SELECT count(*) FROM memory_paused_streams") == 0


async def test_jobs_lists_the_queue_and_retries_a_failed_job(
    settings: settings_module.Settings, db: postgres.Database
) -> None:
    await jobs.enqueue(db.pool, "consolidate_turn", "t-bad", {"turn_id": "t-bad"}, 1)
    await jobs.enqueue(db.pool, "consolidate_turn", "t-ok", {"turn_id": "t-ok"}, 5)
    worker_id = await jobs.register_worker(db, "test")
    job = await jobs.claim(db, worker_id)
    assert job is not None and job.dedupe_key == "t-bad"
    await jobs.fail(db, job.id, worker_id, "boom: the turn is gone")

    code, out, _ = await run(settings, "jobs", "--json")
    status = json.loads(out)
    assert code == 0
    assert status["counts"]["failed"] == 1 and status["counts"]["todo"] == 1
    assert status["oldest_todo_seconds"] is not None and status["oldest_todo_seconds"] >= 0
    [failed] = status["failed"]
    assert (failed["id"], failed["last_error"]) == (job.id, "boom: the turn is gone")
    code, out, _ = await run(settings, "jobs")
    assert "failed=1" in out and "boom: the turn is gone" in out

    code, out, _ = await run(settings, "jobs", "retry", str(job.id))
    assert (code, out) == (0, f"job {job.id}: queued again\n")
    again = await jobs.get(db, job.id)
    assert again is not None and (again.status, again.attempts) == (jobs.JobStatus.TODO, 0)
    code, _, err = await run(settings, "jobs", "retry", str(job.id))
    assert code == 1 and "is todo: only failed or cancelled jobs are retried" in err
    code, _, err = await run(settings, "jobs", "retry", "999999")
    assert code == 1 and err == "error: unknown job 999999\n"
    audit = json.loads((await run(settings, "audit", "--json"))[1])
    assert (audit[0]["action"], audit[0]["target"]) == ("job_retry", str(job.id))


async def test_postgres_only_commands_work_while_a_bot_holds_the_embedded_qdrant(
    settings: settings_module.Settings, db: postgres.Database
) -> None:
    await helpers.journal_turn(db, [msg("m1", "alice", "hello")])
    held = await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder())
    try:
        for argv in (
            ("pause", "--stream", "s1"),
            ("resume", "--stream", "s1"),
            ("audit",),
            ("jobs",),
            ("list", "streams"),
        ):
            code, _, err = await run(settings, *argv)
            assert (code, err) == (0, ""), argv
        code, _, err = await run(settings, "inspect", "--viewer", "alice")
        assert code == 1 and "in use by another process" in err
    finally:
        await held.close()


async def test_chat_memory_summary_never_cuts_an_id(
    settings: settings_module.Settings, db: postgres.Database
) -> None:
    from memory.ops import chat_operations

    long = [
        records.MemoryRecord(
            id=str(uuid.uuid4()),
            space=identity.personal_key("1001"),
            kind=records.MemoryKind.PERSONAL,
            text=f"statement {n} " + "very long words " * 20,
            user_id="1001",
        )
        for n in range(5)
    ]
    summary = chat_operations.summarise(long)
    assert len(summary) <= chat_operations.SUMMARY_CHARS + 20
    shown = [r for r in long if f"[{r.id[: chat_operations.SHORT_ID]}]" in summary]
    assert shown and summary.endswith(f"(+{len(long) - len(shown)} more)")
    assert summary.count("[") == summary.count("]") == len(shown)


def test_settings_errors_are_one_readable_line_per_field(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(
        "LIVEMEMORY_DATA_DIR=/srv/lm\nLIVEMEMORY_MEMORY__BUDGET_MS=fast\nLIVEMEMORY_BATCH__WINDW=2\n"
    )
    result = cli.run("memory.ops.admin", "audit", env={}, cwd=tmp_path)
    assert result.code == 2
    assert sorted(result.err.splitlines()) == [
        "error: invalid setting LIVEMEMORY_BATCH__WINDW: unknown setting (a typo? see .env.example)",
        "error: invalid setting LIVEMEMORY_MEMORY__BUDGET_MS: Input should be a valid integer, "
        "unable to parse string as an integer (got 'fast')",
    ]


def test_data_dir_is_accepted_in_dotenv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from config import settings as settings_module

    monkeypatch.delenv("LIVEMEMORY_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("LIVEMEMORY_DATA_DIR=/srv/lm\n")
    assert str(settings_module.Settings().data_dir) == "/srv/lm"


def test_migrate_help_prints_help_and_migrates_nothing(tmp_path: Path) -> None:
    result = cli.run(
        "memory.migrate",
        "--help",
        env={"DATABASE_URL": "postgresql://nobody@127.0.0.1:1/x"},
        cwd=tmp_path,
    )
    assert result.code == 0
    assert result.out.startswith("usage: python -m memory.migrate")
    assert "advisory lock" in result.out


def test_admin_help_lists_every_subcommand() -> None:
    text = admin.build_parser().format_help()
    for name in (
        "inspect",
        "export",
        "forget",
        "correct",
        "lore",
        "list",
        "pause",
        "resume",
        "jobs",
        "audit",
        "reembed",
    ):
        assert name in text
