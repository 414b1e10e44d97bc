"""The sparse schemes of hybrid search: Qdrant's own BM25 (``qdrant_bm25``) as an encoder, and the
scheme a store records, which it keeps whatever ``memory.sparse_scheme`` says (never two in one)."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

import pytest

from memory import errors, identity
from memory.adapters import qdrant, qdrant_bm25, qdrant_edge, qdrant_hybrid, qdrant_reembed
from memory.adapters import qdrant_models as qm
from memory.spaces import embedders, lexical, recency
from memory.spaces import store as spaces
from tests.test_spaces import T0, edge_spaces, record, settings

if TYPE_CHECKING:
    from pathlib import Path

ALICE = identity.personal_key("1001")
BOB = identity.personal_key("1002")
BM25 = qdrant_bm25.encoder(qdrant_bm25.BM25)
TIMES = [T0 + timedelta(days=d) for d in (0, 90, 100)]


def ids(text: str) -> list[int]:
    return BM25.query(text)[0]


def test_bm25_stems_english_and_italian_with_snowball_and_drops_both_stopword_lists() -> None:
    assert ids("moved") == ids("moving") == ids("moves")
    assert ids("i miei gatti") == ids("il gatto")  # Italian text: the Italian stemmer
    assert ids("gatti") != ids("gatto")  # no Italian stopword: the English one
    assert ids("Città") == ids("citta")  # accents folded
    assert BM25.query("the and il la e lol") == ([], [])
    indices, values = BM25.query("where did Caroline move, Caroline?")
    assert len(indices) == 2 and values == [1.0, 1.0]  # distinct terms, weight 1
    assert qdrant_bm25.italian("dove sei andata ieri?") and not qdrant_bm25.italian("I went home")


def test_bm25_weights_are_saturated_term_frequencies_with_the_speaker_indexed() -> None:
    weights = dict(zip(*BM25.document("Gatti gatti, il gatto!", "miso_99"), strict=True))
    [cat], [miso] = ids("il gatto"), ids("il miso")  # the login stemmed as the text is
    assert set(weights) == set(ids("il gatto, miso 99"))
    assert weights[cat] > weights[miso]  # tf 3 vs 1
    assert BM25.document("") == ([], [])


def test_bm25_context_terms_come_only_from_a_question_and_weigh_half_an_own_word() -> None:
    assert BM25.context_terms("nice stream today") == ()
    terms = BM25.context_terms("where do you live?")
    assert terms == tuple(ids("live"))
    own = dict(zip(*BM25.document("I live in Rome"), strict=True))
    answered = dict(zip(*BM25.document("Rome", context=terms), strict=True))
    [rome], [live] = ids("Rome"), ids("live")
    assert answered[live] == pytest.approx(lexical.CONTEXT_WEIGHT * answered[rome])
    assert own[live] == pytest.approx(own[rome])
    [alone] = BM25.document("", context=terms)[1]  # an empty memory: a word of a 0-term line
    assert alone == pytest.approx(lexical.CONTEXT_WEIGHT * (lexical.K1 + 1) / (1 + lexical.K1 / 4))


def test_the_schemes_and_their_recorded_versions() -> None:
    assert qdrant_bm25.encoder("lexical") is lexical.ENCODER
    assert qdrant_bm25.for_version(lexical.VERSION) is lexical.ENCODER
    assert qdrant_bm25.for_version(qdrant_bm25.VERSION) is BM25
    assert qdrant_bm25.for_version(None) is None and qdrant_bm25.for_version("bm42") is None
    with pytest.raises(ValueError, match="unknown sparse scheme"):
        qdrant_bm25.encoder("bm42")


async def _recorded(opened: qdrant.QdrantSpaces, space: str) -> object:
    info = await opened.client.get_collection(opened.collection(space))
    sparse = info.config.params.sparse_vectors or {}
    assert sparse[lexical.SPARSE].modifier == qm.Modifier.IDF
    return (info.config.metadata or {})["livememory"]["lexical"]


@pytest.mark.parametrize("layout", ["per_space", "shared"])
@pytest.mark.parametrize(
    ("made", "configured"),
    [(qdrant_bm25.LEXICAL, qdrant_bm25.BM25), (qdrant_bm25.BM25, qdrant_bm25.LEXICAL)],
)
async def test_a_store_keeps_the_scheme_it_was_made_with(
    tmp_path: Path, layout: str, made: str, configured: str
) -> None:
    """Reopened with the other scheme configured, a store writes, searches and creates collections
    in its own scheme (the question terms of a memory too): no collection holds two."""
    kept = qdrant_bm25.encoder(made)
    async with edge_spaces(tmp_path, layout, sparse_scheme=made) as opened:
        await opened.upsert([record(ALICE, "I moved to Turin because of the mountains")])
    async with edge_spaces(tmp_path, layout, sparse_scheme=configured) as opened:
        assert opened.sparse is kept
        answer = record(
            BOB,
            "Sweden, four years ago!",
            context_terms=opened.sparse.context_terms("@bob where did you come from?"),
        )
        await opened.upsert([answer, record(BOB, "Norway is lovely in june")])
        assert await _recorded(opened, ALICE) == await _recorded(opened, BOB) == kept.version
        assert (await opened.search(ALICE, "when was the move", limit=1))[0].record.text.startswith(
            "I moved"
        )
        assert (await opened.search(BOB, "where did bob come from", limit=1))[0].record == answer


async def test_a_store_made_before_the_scheme_was_recorded_stays_lexical(tmp_path: Path) -> None:
    """The manifest of an earlier release records no scheme: its store is ``lexical``'s."""
    embedder = embedders.OfflineHashEmbedder()
    client = qdrant_edge.EdgeClient(tmp_path / "edge")
    await client.create_collection(
        spaces.manifest_collection("lm"),
        vectors_config=qm.VectorParams(size=1, distance=qm.Distance.COSINE),
        metadata={"livememory": spaces.embedder_metadata(embedder, layout="shared")},
    )
    await client.close()
    async with edge_spaces(tmp_path, "shared", sparse_scheme=qdrant_bm25.BM25) as opened:
        assert opened.sparse is lexical.ENCODER
        await opened.upsert([record(ALICE, "I live in Rome")])
        assert await _recorded(opened, ALICE) == lexical.VERSION


async def test_an_unknown_recorded_scheme_refuses_to_open_with_one_line(tmp_path: Path) -> None:
    embedder = embedders.OfflineHashEmbedder()
    client = qdrant_edge.EdgeClient(tmp_path / "edge")
    metadata = spaces.embedder_metadata(embedder, layout="shared", lexical="bm42-v9")
    await client.create_collection(
        spaces.manifest_collection("lm"),
        vectors_config=qm.VectorParams(size=1, distance=qm.Distance.COSINE),
        metadata={"livememory": metadata},
    )
    try:
        with pytest.raises(errors.EmbedderMismatch, match="sparse scheme 'bm42-v9'"):
            await qdrant.open_spaces(settings(tmp_path), embedder, client=client)
    finally:
        await client.close()


async def test_reembed_rebuilds_in_the_store_s_scheme(tmp_path: Path) -> None:
    """``memory.admin reembed`` on a lexical store with BM25 configured: nothing to do (current),
    and a forced rebuild keeps the store's scheme."""
    made = settings(
        tmp_path, qdrant={"layout": "shared"}, memory={"sparse_scheme": qdrant_bm25.LEXICAL}
    )
    embedder = embedders.OfflineHashEmbedder()
    memory = record(ALICE, "I live in Rome")
    async with await qdrant.open_spaces(made, embedder) as opened:
        await opened.upsert([memory])
        # as an earlier release wrote it: no stored terms
        await opened.client.set_payload(
            opened.collection(ALICE), payload={spaces.TERMS_KEY: None}, points=[memory.id]
        )
    configured = settings(
        tmp_path, qdrant={"layout": "shared"}, memory={"sparse_scheme": qdrant_bm25.BM25}
    )
    async with qdrant_reembed.open_reembedder(configured, embedder) as job:
        assert await job.plan(None) == []
        [task] = await job.plan(None, force=True)
        await job.run(task)
    async with await qdrant.open_spaces(configured, embedder) as opened:
        assert opened.sparse is lexical.ENCODER
        assert await _recorded(opened, ALICE) == lexical.VERSION
        assert [h.record.text for h in await opened.search(ALICE, "Rome", limit=1)] == [
            "I live in Rome"
        ]
        [point] = await opened.client.retrieve(
            opened.collection(ALICE), ids=[memory.id], with_payload=True
        )
        kept = (point.payload or {})[spaces.TERMS_KEY]
        assert recency.read_terms(kept, lexical.ENCODER) == recency.indexed_terms(memory)


@pytest.mark.parametrize("made", [qdrant_bm25.LEXICAL, qdrant_bm25.BM25])
async def test_points_keep_their_indexed_terms_and_rank_alike_without_them(
    tmp_path: Path, made: str
) -> None:
    """A search reads a candidate's stored terms (``spaces.TERMS_KEY``) instead of tokenizing it;
    a point without them (written by an earlier release) ranks the same."""
    question = "how long have I been using my Fitbit?"
    memories = [
        record(ALICE, text, user_id="1001", login="alice", first_ts=at, last_ts=at)
        for text, at in (
            ("I've been using my Fitbit for 6 months now", TIMES[0]),
            ("I have been using my Fitbit for 9 months, it says I sleep badly", TIMES[1]),
            ("I walked 12,000 steps on Sunday", TIMES[2]),
        )
    ]
    async with edge_spaces(tmp_path, "shared", sparse_scheme=made) as opened:
        await opened.upsert(memories)
        name = opened.collection(ALICE)
        points = await opened.client.retrieve(name, ids=[m.id for m in memories], with_payload=True)
        kept = {str(p.id): (p.payload or {})[spaces.TERMS_KEY] for p in points}
        for memory in memories:
            assert recency.read_terms(kept[memory.id], opened.sparse) == recency.indexed_terms(
                memory, opened.sparse
            )
        ranked = await opened.search(ALICE, question, limit=3)
        assert ranked[0].record.text.startswith("I have been")  # the newer, by recency
        await opened.client.set_payload(
            name, payload={spaces.TERMS_KEY: None}, points=[m.id for m in memories]
        )
        assert await opened.search(ALICE, question, limit=3) == ranked


async def test_the_engine_makes_the_candidates_its_scored_points_make(tmp_path: Path) -> None:
    """Embedded, a search's candidates come from Edge's points directly
    (``EdgeEngine.query_candidates``); they are the ones ``query_points`` gives."""
    async with edge_spaces(tmp_path, "shared", sparse_scheme=qdrant_bm25.BM25) as opened:
        await opened.upsert([record(ALICE, f"I have {n} cats and a parrot") for n in range(6)])
        [vector] = await opened.embedder.embed(["how many cats"])
        where = qm.Filter(
            must=[qm.FieldCondition(key=spaces.TENANT_KEY, match=qm.MatchValue(value=ALICE))]
        )
        arguments = qdrant_hybrid.request(vector, BM25.query("how many cats"), 4, where)
        name = opened.collection(ALICE)
        assert isinstance(opened.client, qdrant_edge.EdgeEngine)
        direct = await opened.client.query_candidates(name, **arguments)
        scored = (await opened.client.query_points(name, **arguments)).points
        assert len(direct) == 4 and direct == qdrant_hybrid.candidates(scored)
