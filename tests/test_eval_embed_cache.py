"""The evaluation's embedding cache: the embedder's own vectors back, kept across runs, never
those of another embedder, version or kind; and the harness replays through it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from memory import models
from memory.eval import embed_cache, harness, synthetic
from memory.spaces import embedders
from tests import conftest

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence
    from pathlib import Path


class Counting:
    """A ``ports.Embedder``: the offline embedder under another name, counting what it embeds."""

    def __init__(self, name: str = "counting-v1:384", version: str = "") -> None:
        self.inner = embedders.OfflineHashEmbedder()
        self.name = name
        self.dim = self.inner.dim
        self.version = version
        self.embedded: list[str] = []
        self.kinds: list[str] = []
        self.calls = 0

    async def embed(self, texts: Sequence[str], *, kind: str = "passage") -> list[list[float]]:
        self.calls += 1
        self.embedded.extend(texts)
        self.kinds.extend(kind for _ in texts)
        return await self.inner.embed(texts)


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.iterdir())


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)


TEXTS = ["my dog Biscuit chews my slippers", "sono un'infermiera", "I'm a nurse"]


async def test_a_hit_returns_the_very_vector_the_embedder_returned(tmp_path: Path) -> None:
    inner = Counting()
    cached = embed_cache.EmbeddingCache(tmp_path).wrap(inner)
    first = await cached.embed(TEXTS)
    assert first == await inner.inner.embed(TEXTS)
    again = await cached.embed([TEXTS[1], TEXTS[1], TEXTS[0]])
    assert again == [first[1], first[1], first[0]]  # equal floats, bit for bit
    assert inner.embedded == TEXTS and inner.calls == 1


async def test_the_vectors_are_kept_across_runs(tmp_path: Path) -> None:
    run = embed_cache.EmbeddingCache(tmp_path)
    first = await run.wrap(Counting()).embed(TEXTS)
    run.flush()
    later = Counting()
    next_run = embed_cache.EmbeddingCache(tmp_path)
    cached = next_run.wrap(later)
    assert await cached.embed([*TEXTS, "a new one"]) == [
        *first,
        *await later.inner.embed(["a new one"]),
    ]
    assert later.embedded == ["a new one"]  # one call, for the text never seen
    assert next_run.stats() == {"embed_cache_hits": 3, "embed_cache_misses": 1}


async def test_another_version_or_name_of_the_embedder_misses(tmp_path: Path) -> None:
    run = embed_cache.EmbeddingCache(tmp_path)
    await run.wrap(Counting(version="1.0")).embed(TEXTS)
    run.flush()
    for other in (Counting(version="1.1"), Counting(name="counting-v2:384", version="1.0")):
        cache = embed_cache.EmbeddingCache(tmp_path)
        await cache.wrap(other).embed(TEXTS)
        cache.flush()
        assert other.embedded == TEXTS, other.name
    assert len(_entries(tmp_path)) == 3  # a folder per name and version
    same = Counting(version="1.0")
    await embed_cache.EmbeddingCache(tmp_path).wrap(same).embed(TEXTS)
    assert same.embedded == []


async def test_a_query_is_embedded_every_time_and_never_as_the_cached_passage(
    tmp_path: Path,
) -> None:
    """The memory stage's times of a run are what the bot pays: its queries are never cached."""
    inner = Counting()
    cached = embed_cache.EmbeddingCache(tmp_path).wrap(inner)
    assert isinstance(cached, embed_cache.CachedEmbedder)
    await cached.embed(TEXTS[:1])
    await cached.embed(TEXTS[:1], kind="query")
    await cached.embed(TEXTS[:1], kind="query")
    assert inner.embedded == TEXTS[:1] * 3 and inner.kinds == ["passage", "query", "query"]
    assert cached.misses_by_kind == {"passage": 1, "query": 2}


async def test_segments_are_written_as_they_fill_and_only_whole_ones_are_read(
    tmp_path: Path,
) -> None:
    cache = embed_cache.EmbeddingCache(tmp_path, flush_every=2)
    await cache.wrap(Counting()).embed(TEXTS)  # three new vectors: a segment of three
    [folder] = _entries(tmp_path)
    assert len([p for p in _entries(folder) if p.name.startswith("segment-")]) == 1
    _write(folder / "partial-left-by-a-killed-run.npz", b"not a segment")
    later = Counting()
    await embed_cache.EmbeddingCache(tmp_path).wrap(later).embed(TEXTS)
    assert later.embedded == []


def test_the_offline_hashing_embedder_is_not_cached_by_default(tmp_path: Path) -> None:
    offline = embedders.OfflineHashEmbedder()
    assert embed_cache.EmbeddingCache(tmp_path).wrap(offline) is offline
    assert embed_cache.EmbeddingCache(tmp_path, skip=()).wrap(offline) is not offline


@pytest.fixture
async def second_database_url(server_dsn: str, template_db: str) -> AsyncIterator[str]:
    """Another fresh, migrated database, for a second replay."""
    async with conftest.fresh_database(server_dsn, template_db) as url:
        yield url


@pytest.mark.timeout(240)
async def test_the_harness_replays_through_the_cache(
    database_url: str, second_database_url: str, tmp_path: Path
) -> None:
    """A second replay of the same stream, in stores of its own, embeds no stored text again:
    every one was cached by the first (a query may be new: the prefetch asks by timing)."""
    case = harness.from_synthetic(synthetic.generate(seed=4, viewers=3, noise_per_item=(0, 1)))
    caches = []
    for run, url in enumerate((database_url, second_database_url)):
        cache = embed_cache.EmbeddingCache(tmp_path / "cache", skip=())
        settings = harness.eval_settings(tmp_path / f"run{run}", database_url=url)
        reports = await harness.run_full(case, settings, cache=cache)
        assert reports and all(r.status is not models.TurnStatus.FAILED for r in reports)
        caches.append(cache)
    first, second = (c.wrapped[0] for c in caches)
    assert first.misses_by_kind["passage"] > 0 and first.misses > 0
    assert second.misses_by_kind.get("passage", 0) == 0
    assert second.misses <= first.misses // 10 and second.hits >= first.misses - second.misses
