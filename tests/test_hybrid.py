"""Hybrid search: the sparse lexical vector (IDF in the store) fused with the dense one, over the
fake and both Qdrant layouts, in both sparse schemes (``lexical``, Qdrant's BM25); collections
made before it keep working (dense only)."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from typing import TYPE_CHECKING, Any

import pytest
from qdrant_client import AsyncQdrantClient
from qdrant_client import models as qm

from memory import identity
from memory.adapters import qdrant, qdrant_bm25
from memory.spaces import embedders, lexical, records
from memory.spaces import store as spaces
from tests.conftest import IsolatedSettings
from tests.fakes import spaces as fake_spaces
from tests.test_spaces import edge_spaces, record

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence
    from pathlib import Path

    from memory import ports

ALICE = identity.personal_key("1001")
STREAM = identity.episodic_key("s1")


class BlindEmbedder:
    """A dense embedder that sees nothing: every text gets the same vector."""

    name = "blind-test:4"
    dim = 4

    async def embed(
        self, texts: Sequence[str], *, kind: ports.EmbedKind = "passage"
    ) -> list[list[float]]:
        return [[0.5, 0.5, 0.5, 0.5] for _ in texts]


@pytest.fixture(
    params=[
        "fake",
        "per_space",
        "shared",
        "edge_per_space",
        "edge_shared",
        "fake_bm25",
        "shared_bm25",
        "edge_per_space_bm25",
        "edge_shared_bm25",
    ]
)
async def blind(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    """Spaces whose dense half is useless: whatever they find, the sparse half found."""
    param = request.param.removesuffix("_bm25")
    scheme = qdrant_bm25.BM25 if request.param.endswith("_bm25") else qdrant_bm25.LEXICAL
    if param == "fake":
        yield fake_spaces.InMemorySpaces(BlindEmbedder(), qdrant_bm25.encoder(scheme))
        return
    if param.startswith("edge_"):
        layout = param.removeprefix("edge_")
        async with edge_spaces(tmp_path, layout, BlindEmbedder(), scheme) as opened:
            yield opened
        return
    settings = IsolatedSettings(
        data_dir=tmp_path / "data", qdrant={"layout": param}, memory={"sparse_scheme": scheme}
    )
    opened = await qdrant.open_spaces(settings, BlindEmbedder(), location=":memory:")
    async with opened:
        yield opened


FILLER = [
    "I like long walks by the river",
    "my sister plays the violin",
    "we adopted two cats last spring",
    "I work night shifts at the hospital",
    "my favourite food is ramen",
    "I have been learning Italian for a year",
]


async def test_the_sparse_half_finds_a_rare_word_and_its_inflections(blind: Any) -> None:
    await blind.upsert([record(ALICE, text) for text in FILLER])
    target = record(ALICE, "I moved to Turin because of the mountains")
    await blind.upsert([target])
    hits = await blind.search(ALICE, "does she still live in turin?", limit=3)
    assert hits[0].record.id == target.id
    hits = await blind.search(ALICE, "when was the move", limit=3)  # "moved" / "move": one stem
    assert hits[0].record.id == target.id


async def test_an_answer_is_found_by_the_words_of_the_question_it_answers(blind: Any) -> None:
    await blind.upsert([record(ALICE, text) for text in FILLER])
    question = "@alice where did you move from?"
    answer = record(
        ALICE,
        "Sweden, four years ago!",
        context_terms=blind.sparse.context_terms(question),
        context_message_id="m1",
    )
    bare = record(ALICE, "Norway is lovely in june")  # the same kind of answer, no question
    await blind.upsert([answer, bare])
    hits = await blind.search(ALICE, "where did alice move from", limit=3)
    assert hits[0].record.id == answer.id
    assert hits[0].record.text == "Sweden, four years ago!"  # the question's words are not shown
    [stored] = await blind.get(ALICE, [answer.id])
    assert stored.context_terms == answer.context_terms and stored.context_message_id == "m1"


class RecordingEmbedder(BlindEmbedder):
    """The blind embedder, keeping every text it was given."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    async def embed(
        self, texts: Sequence[str], *, kind: ports.EmbedKind = "passage"
    ) -> list[list[float]]:
        self.texts.extend(texts)
        return await super().embed(texts, kind=kind)


@pytest.mark.parametrize("layout", ["fake", "per_space", "shared"])
async def test_an_answer_s_dense_vector_is_made_with_the_question_it_answers(
    layout: str, tmp_path: Path
) -> None:
    embedder = RecordingEmbedder()
    answer = record(ALICE, "Sweden!", context_message_id="m1", context_question="where from?")
    async with contextlib.AsyncExitStack() as stack:
        store: Any = fake_spaces.InMemorySpaces(embedder)
        if layout != "fake":
            store = await stack.enter_async_context(edge_spaces(tmp_path, layout, embedder))
        await store.upsert([answer, record(ALICE, "I love pizza")])
        assert embedder.texts[-2:] == ["where from? Sweden!", "I love pizza"]
        [stored] = await store.get(ALICE, [answer.id])
        assert stored.text == "Sweden!" and stored.context_question == "where from?"
        # without the question (its author forgotten), the vector is the memory's own text again
        await store.upsert([dataclasses.replace(stored, context_question=None)])
        assert embedder.texts[-1] == "Sweden!"


def test_context_terms_come_only_from_a_question_and_weigh_less_than_own_words() -> None:
    assert lexical.context_terms("nice stream today") == ()
    terms = lexical.context_terms("where do you live?")
    [rome, live] = [lexical.term_id(term) for term in embedders.terms("Rome live")]
    assert terms == (live,)
    own = dict(zip(*lexical.document("I live in Rome"), strict=True))
    answered = dict(zip(*lexical.document("Rome", context=terms), strict=True))
    assert answered[live] == pytest.approx(lexical.CONTEXT_WEIGHT * answered[rome])
    assert own[live] == pytest.approx(own[rome])


async def test_the_speaker_is_indexed_with_the_text(blind: Any) -> None:
    episodes = [
        record(STREAM, text, kind=records.MemoryKind.EPISODIC, login=login)
        for text, login in [
            ("talked about the weather", "marco"),
            ("talked about the game", "giulia"),
            ("talked about dinner", "caroline"),
        ]
    ]
    await blind.upsert(episodes)
    hits = await blind.search(STREAM, "what did Caroline say", limit=3)
    assert hits[0].record.login == "caroline"


async def test_new_collections_hold_a_sparse_vector_with_the_idf_modifier(tmp_path: Path) -> None:
    for layout in ("per_space", "shared"):
        settings = IsolatedSettings(data_dir=tmp_path / layout, qdrant={"layout": layout})
        async with await qdrant.open_spaces(
            settings, embedders.OfflineHashEmbedder(), location=":memory:"
        ) as opened:
            await opened.upsert([record(ALICE, "I live in Rome")])
            info = await opened.client.get_collection(opened.collection(ALICE))
            sparse = info.config.params.sparse_vectors or {}
            assert sparse[lexical.SPARSE].modifier == qm.Modifier.IDF
            # a new store's default scheme: Qdrant's BM25
            assert (info.config.metadata or {})["livememory"]["lexical"] == qdrant_bm25.VERSION


async def test_a_collection_made_before_hybrid_search_keeps_working(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An old collection (one unnamed dense vector) is searched dense-only, with a clear warning."""
    embedder = embedders.OfflineHashEmbedder()
    client = AsyncQdrantClient(location=":memory:")
    name = spaces.space_collection("lm", ALICE)
    await client.create_collection(
        name,
        vectors_config=qm.VectorParams(size=embedder.dim, distance=qm.Distance.COSINE),
        metadata={"livememory": spaces.embedder_metadata(embedder, layout="per_space")},
    )
    settings = IsolatedSettings(data_dir=tmp_path / "data")
    with caplog.at_level(logging.WARNING):
        async with await qdrant.open_spaces(settings, embedder, client=client) as opened:
            old = record(ALICE, "I live in Rome")
            await opened.upsert([old, record(ALICE, "my dog is called Rex")])
            hits = await opened.search(ALICE, "where do you live, Rome?", limit=1)
    await client.close()
    assert hits[0].record.id == old.id
    assert any("predates hybrid search" in r.getMessage() for r in caplog.records)


def test_sparse_vectors_are_bm25_weights_of_stemmed_terms() -> None:
    indices, values = lexical.document("Gatti gatti, il gatto!", "Miso")
    weights = dict(zip(indices, values, strict=True))
    assert set(weights) == {lexical.term_id("gatt"), lexical.term_id("mis")}
    assert weights[lexical.term_id("gatt")] > weights[lexical.term_id("mis")]  # tf 3 vs 1
    assert lexical.query("il la e") == ([], [])
    assert lexical.fuse([["a", "b"], ["b"]]) == {"a": 0.5, "b": 1 / 3 + 1 / 2}
