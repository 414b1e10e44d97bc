from __future__ import annotations

import io
import json
import uuid
from typing import TYPE_CHECKING, Any

import pytest

from memory import identity
from memory.adapters import qdrant
from memory.adapters import redis as redis_adapter
from memory.consolidate import consolidation
from memory.ops import admin
from memory.recall import retrieval
from memory.spaces import embedders
from tests import cli
from tests import test_consolidation as helpers

if TYPE_CHECKING:
    from pathlib import Path

    from config import settings as settings_module
    from memory.adapters import postgres
    from tests.conftest import SettingsFactory

msg = helpers.msg


@pytest.fixture
def settings(make_settings: SettingsFactory) -> settings_module.Settings:
    return make_settings(bot_name="mnemo")


@pytest.fixture
async def stream(db: postgres.Database, settings: settings_module.Settings) -> list[str]:
    """Two consolidated turns in embedded Qdrant (data folder), the spaces closed again."""
    memory = await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder())
    try:
        consolidator = consolidation.Consolidator(db, memory, settings)
        turns = []
        for events in (
            [
                msg("m1", "bob", "Alice lives in Rome"),
                msg("m2", "alice", "I work as a graphic designer", second=1),
            ],
            [msg("m3", "alice", "my cat is called Miso", second=5)],
        ):
            turn_id = await helpers.journal_turn(db, events, reply="@alice nice")
            await consolidator.consolidate(turn_id)
            turns.append(turn_id)
    finally:
        await memory.close()
    return turns


async def run(
    settings: settings_module.Settings, *argv: str, stdin: str = ""
) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = await admin.run(
        list(argv), settings=settings, stdin=io.StringIO(stdin), stdout=out, stderr=err
    )
    return code, out.getvalue(), err.getvalue()


async def inspect(settings: settings_module.Settings, login: str = "alice") -> dict[str, Any]:
    code, out, err = await run(settings, "inspect", "--viewer", login, "--json")
    assert (code, err) == (0, "")
    data: dict[str, Any] = json.loads(out)
    return data


async def test_inspect_lists_only_the_viewers_own_statements_with_provenance(
    settings: settings_module.Settings, stream: list[str]
) -> None:
    data = await inspect(settings)

    assert data["viewer"] == {"user_id": "1001", "login": "alice"}
    memories = data["memories"]
    assert [(m["text"], m["origin_message_ids"]) for m in memories] == [
        ("I work as a graphic designer", ["m2"]),
        ("my cat is called Miso", ["m3"]),
    ]
    assert all(m["user_id"] == "1001" and m["turn_id"] in stream for m in memories)
    assert "Rome" not in json.dumps(data)
    code, out, _ = await run(settings, "inspect", "--viewer", "ALICE")
    assert code == 0 and "I work as a graphic designer" in out and memories[0]["id"] in out


async def test_inspect_and_export_show_the_superseded_mark(
    db: postgres.Database, settings: settings_module.Settings, stream: list[str]
) -> None:
    memory = await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder())
    try:
        later = [msg("m4", "alice", "I work as a software tester now", second=7 * 86_400)]
        turn_id = await helpers.journal_turn(db, later)
        await consolidation.Consolidator(db, memory, settings).consolidate(turn_id)
    finally:
        await memory.close()

    designer, _, tester = (await inspect(settings))["memories"]
    assert (designer["superseded_by"], designer["superseded_at"][:10]) == (
        tester["id"],
        "2026-12-06",
    )
    code, out, _ = await run(settings, "inspect", "--viewer", "alice")
    assert code == 0 and f"superseded by {tester['id']} on 2026-12-06" in out
    code, out, _ = await run(settings, "export", "--viewer", "alice")
    assert code == 0
    exported = {m["text"]: m for m in json.loads(out)["memories"]}
    assert exported["I work as a graphic designer"]["superseded_by"] == tester["id"]


async def test_inspect_shows_the_question_a_memory_answers(
    db: postgres.Database, settings: settings_module.Settings, stream: list[str]
) -> None:
    """An answer with no "I" in it is the viewer's memory for the question it answers: inspect
    says which, so a moderator reads it as the viewer meant it."""
    memory = await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder())
    try:
        asked = [
            msg("m4", "bob", "@alice what do you do on weekends?", second=9),
            msg("m5", "alice", "hiking in the Dolomites mostly", second=10),
        ]
        turn_id = await helpers.journal_turn(db, asked)
        await consolidation.Consolidator(db, memory, settings).consolidate(turn_id)
    finally:
        await memory.close()

    [hiking] = [m for m in (await inspect(settings))["memories"] if m["text"].startswith("hiking")]
    assert hiking["context_question"] == "what do you do on weekends?"
    code, out, _ = await run(settings, "inspect", "--viewer", "alice")
    assert code == 0
    assert (
        f'hiking in the Dolomites mostly  (answering "what do you do on weekends?", turn {turn_id}'
        in out
    )
    assert out.count("answering") == 1


async def test_unknown_viewer_or_id_is_one_line_on_stderr_and_exit_1(
    settings: settings_module.Settings, stream: list[str]
) -> None:
    for argv in (
        ("inspect", "--viewer", "nobody"),
        ("export", "--viewer", "nobody"),
        ("forget", "--viewer", "nobody", "--yes"),
        ("forget", "--memory-id", str(uuid.uuid4())),
        ("forget", "--turn", "no-such-turn"),
        ("correct", "--memory-id", str(uuid.uuid4()), "--text", "x"),
    ):
        code, out, err = await run(settings, *argv)
        assert code == 1, argv
        assert out == ""
        assert err.count("\n") == 1 and err.startswith("error: unknown "), err
    assert len((await inspect(settings))["memories"]) == 2


async def test_forget_viewer_asks_first_and_then_forgets_everything(
    settings: settings_module.Settings, stream: list[str], db: postgres.Database
) -> None:
    code, _, err = await run(settings, "forget", "--viewer", "alice", stdin="n\n")
    assert code == 1 and "aborted" in err
    assert len((await inspect(settings))["memories"]) == 2

    code, out, _ = await run(settings, "forget", "--viewer", "alice", "--json", stdin="y\n")
    assert code == 0
    assert json.loads(out)["memories"] == 2
    assert (await inspect(settings))["memories"] == []
    code, out, _ = await run(settings, "export", "--viewer", "alice")
    exported = json.loads(out)
    assert (exported["memories"], exported["profile"]) == ([], None)
    assert len(exported["episodes"]) == 2  # the public record stays without --everywhere
    audit = await db.pool.fetch("SELECT actor, action, target FROM memory_audit")
    assert [tuple(r) for r in audit] == [("admin:cli", "forget_viewer", "1001")]


async def test_forget_viewer_invalidates_the_bots_redis_cache(
    make_settings: SettingsFactory, redis_url: str, db: postgres.Database
) -> None:
    prefix = f"lm-test-{uuid.uuid4().hex[:8]}:"
    settings = make_settings(redis_url=redis_url, redis={"key_prefix": prefix})
    await helpers.journal_turn(db, [msg("m1", "alice", "I moved to Turin")])
    cache = redis_adapter.RedisCache.from_url(redis_url, prefix=f"{prefix}cache:")
    try:
        key = f"{retrieval.CACHE_VERSION}:v:1001:profile:abc"
        await cache.set(key, "[]", 60)
        await cache.set(f"{retrieval.CACHE_VERSION}:v:1002:profile:abc", "[]", 60)
        code, _, _ = await run(settings, "forget", "--viewer", "alice", "--yes")
        assert code == 0
        assert await cache.get(key) is None
        assert await cache.get(f"{retrieval.CACHE_VERSION}:v:1002:profile:abc") == "[]"
    finally:
        await cache.delete_prefix("")
        await cache.aclose()


async def test_forget_memory_turn_and_correct(
    settings: settings_module.Settings, stream: list[str]
) -> None:
    [designer, cat] = (await inspect(settings))["memories"]
    code, out, _ = await run(
        settings,
        "correct",
        "--memory-id",
        designer["id"],
        "--text",
        "I work as an illustrator",
        "--json",
        "--yes",
    )
    assert code == 0
    correction = json.loads(out)
    assert (correction["kind"], correction["corrects"], correction["turn_id"]) == (
        "correction",
        designer["id"],
        stream[0],
    )
    texts = [m["text"] for m in (await inspect(settings))["memories"]]
    assert texts == ["I work as an illustrator", "my cat is called Miso"]

    assert (await run(settings, "forget", "--memory-id", cat["id"], "--yes"))[0] == 0
    code, out, _ = await run(settings, "forget", "--turn", stream[0], "--yes")
    assert code == 0 and "memories=2" in out  # the correction and the episode
    assert (await inspect(settings))["memories"] == []


async def test_lore_load_replaces_the_lore_space(
    settings: settings_module.Settings, tmp_path: Path
) -> None:
    code, out, _ = await run(settings, "lore", "load", str(settings.lore_dir), "--yes")
    assert code == 0 and "lore loaded" in out
    small = tmp_path / "lore"
    small.mkdir()
    (small / "one.md").write_text("# x\n\n## Biscotto\nThe mascot pigeon.\nEntities: Bisco\n")
    code, out, _ = await run(settings, "lore", "load", str(small), "--yes")
    assert (code, out.strip()) == (0, f"lore loaded: 1 entry from {small}")
    memory = await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder())
    try:
        [entry] = await memory.list(identity.LORE_KEY)
    finally:
        await memory.close()
    assert entry.text == "Biscotto: The mascot pigeon."
    assert entry.extra["entities"] == ["Biscotto", "Bisco"]
    code, _, err = await run(settings, "lore", "load", str(tmp_path / "missing"))
    assert code == 1 and "does not exist" in err


async def test_pause_and_resume(settings: settings_module.Settings, db: postgres.Database) -> None:
    await helpers.journal_turn(db, [msg("m1", "alice", "hello")])
    assert (await run(settings, "pause", "--stream", "s1"))[:2] == (0, "stream s1: paused\n")
    assert await db.pool.fetchval("SELECT paused_by FROM memory_paused_streams") == "admin:cli"
    assert (await run(settings, "resume", "--stream", "s1"))[:2] == (0, "stream s1: resumed\n")
    assert await db.pool.fetchval("SELECT count(*) FROM memory_paused_streams") == 0


def test_the_module_exits_1_without_a_traceback_for_an_unknown_viewer(
    database_url: str, tmp_path: Path
) -> None:
    result = cli.run(
        "memory.ops.admin",
        "inspect",
        "--viewer",
        "nobody",
        env={
            "DATABASE_URL": database_url,
            "LIVEMEMORY_DATA_DIR": str(tmp_path / "data"),
            "LIVEMEMORY_MEMORY__EMBEDDER": "offline",
        },
        cwd=tmp_path,
    )
    assert result.code == 1
    assert result.err.strip() == "error: unknown viewer 'nobody'"
    assert "Traceback" not in result.err


def test_the_example_lore_names_its_canon_entities(settings: settings_module.Settings) -> None:
    from memory.spaces import lore

    names = lore.entities(settings.lore_dir)
    for name in (
        "Mnemo",
        "Professor Quill",
        "Biscotto",
        "The Great Toaster Incident",
        "Lag Goblin",
    ):
        assert name in names
