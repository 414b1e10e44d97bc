"""An embedding cache for evaluation runs, kept across runs in a folder.

A slow semantic embedder makes a whole LongMemEval run impractical: its haystacks repeat the same
sessions across questions, and every run embeds them again. ``EmbeddingCache.wrap`` puts a
``ports.Embedder`` around the evaluated one that looks each text up first, by the embedder's name
(which names its vectors, ``offline-hash-v1:384``), its ``version`` when it has one (a package
release), the kind of embedding and the text; only the texts it has never seen go to the
embedder, each once, in one call. The vectors are those the embedder returned, as 64-bit floats
(every float a Python float holds, exactly). Only stored passages are cached: a search's query is
embedded every time, so the memory stage's times in a run are what the bot pays live.

Layout: ``<root>/<embedder>-<digest of name and version>/`` holds ``embedder.json`` (what made the
vectors) and segments ``segment-<unique>.npz`` (``keys``: the SHA-256 of kind and text, ``vectors``):
each flush writes a segment of its own, under a temporary name renamed into place, so the
processes of one run (``--jobs``) never write the same file and a run stopped halfway leaves
whole segments only. Opening reads every segment of the embedder's folder.

The cache is for evaluation only: the bot never reads it. The offline hashing embedder is left
unwrapped by default (``SKIP``): computing its vectors is cheaper than reading them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence

    from memory import ports

logger = logging.getLogger(__name__)

#: where evaluation runs keep their vectors unless told otherwise
DEFAULT_ROOT = Path.home() / ".cache" / "livememory" / "embeddings"
#: embedders (name prefixes) not worth caching
SKIP = ("offline-hash-",)
#: new vectors kept in memory before they are written as a segment
FLUSH_EVERY = 4096
PASSAGE = "passage"


def folder_name(name: str, version: str) -> str:
    """``<name, filesystem-safe>-<12 hex digits of name and version>``."""
    digest = hashlib.sha256(f"{name}\x00{version}".encode()).hexdigest()[:12]
    return f"{re.sub(r'[^A-Za-z0-9._-]+', '_', name)}-{digest}"


def key(kind: str, text: str) -> bytes:
    return hashlib.sha256(f"{kind}\x00{text}".encode()).digest()


class CachedEmbedder:
    """``ports.Embedder`` around ``inner``: vectors looked up in the folder's segments first."""

    def __init__(self, inner: ports.Embedder, folder: Path, *, flush_every: int = FLUSH_EVERY):
        self.inner = inner
        self.name = inner.name
        self.folder = folder
        self.flush_every = flush_every
        self._known: dict[bytes, np.ndarray[Any, Any]] | None = None
        self._new: dict[bytes, np.ndarray[Any, Any]] = {}
        self.hits = 0
        self.misses = 0
        #: kind → texts embedded
        self.misses_by_kind: dict[str, int] = {}

    @property
    def dim(self) -> int:  # an Ollama embedder learns its dimension from its first call
        return self.inner.dim

    @dim.setter
    def dim(self, value: int) -> None:
        self.inner.dim = value

    def _load(self) -> dict[bytes, np.ndarray[Any, Any]]:
        if self._known is None:
            self._known = {}
            for path in sorted(self.folder.glob("segment-*.npz")):
                with np.load(path) as segment:
                    keys, vectors = segment["keys"], segment["vectors"]
                    self._known.update(zip((bytes(k) for k in keys), vectors, strict=True))
            logger.info("embedding cache %s: %d vectors", self.folder, len(self._known))
        return self._known

    async def embed(self, texts: Sequence[str], *, kind: str = PASSAGE) -> list[list[float]]:
        if kind != PASSAGE:
            # a search's query goes to the embedder every time: the memory stage a run times is
            # what the bot pays live (a cached query made e5's look like the hash embedder's)
            self.misses_by_kind[kind] = self.misses_by_kind.get(kind, 0) + len(texts)
            return await self._inner_embed(list(texts), kind)
        known = self._load()
        keys = [key(kind, text) for text in texts]
        missing: dict[bytes, str] = {}
        for k, text in zip(keys, texts, strict=True):
            if k not in known and k not in self._new:
                missing.setdefault(k, text)
        self.misses += len(missing)
        self.misses_by_kind[kind] = self.misses_by_kind.get(kind, 0) + len(missing)
        self.hits += len(texts) - sum(1 for k in keys if k in missing)
        if missing:
            vectors = await self._inner_embed(list(missing.values()), kind)
            for k, vector in zip(missing, vectors, strict=True):
                self._new[k] = np.asarray(vector, dtype=np.float64)
            if len(self._new) >= self.flush_every:
                self.flush()
        return [(self._new[k] if k in self._new else known[k]).tolist() for k in keys]

    async def _inner_embed(self, texts: list[str], kind: str) -> list[list[float]]:
        if kind == PASSAGE:  # the port's default: every embedder takes it without a keyword
            return await self.inner.embed(texts)
        # a query: only an embedder whose port tells the two apart is asked for one
        embedder: Any = self.inner
        vectors: list[list[float]] = await embedder.embed(texts, kind=kind)
        return vectors

    def flush(self) -> None:
        """Write the vectors not yet on disk as a new segment."""
        if not self._new:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        meta = self.folder / "embedder.json"
        if not meta.exists():
            meta.write_text(
                json.dumps({"name": self.name, "version": version_of(self.inner)}) + "\n",
                encoding="utf-8",
            )
        unique = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        final = self.folder / f"segment-{unique}.npz"
        partial = self.folder / f"partial-{unique}.npz"
        keys = np.frombuffer(b"".join(self._new), dtype="S32")
        with partial.open("wb") as out:
            np.savez(out, keys=keys, vectors=np.stack(list(self._new.values())))
        partial.replace(final)
        self._load().update(self._new)
        self._new = {}


def version_of(embedder: ports.Embedder) -> str:
    """The embedder's ``version`` (a package release), "" when it has none."""
    return str(getattr(embedder, "version", "") or "")


class EmbeddingCache:
    """The cache folder of a run: one ``CachedEmbedder`` per embedder wrapped."""

    def __init__(
        self,
        root: Path = DEFAULT_ROOT,
        *,
        skip: Sequence[str] = SKIP,
        flush_every: int = FLUSH_EVERY,
    ) -> None:
        self.root = root
        self.skip = tuple(skip)
        self.flush_every = flush_every
        self.wrapped: list[CachedEmbedder] = []

    def wrap(self, inner: ports.Embedder) -> ports.Embedder:
        """``inner`` behind the cache (``inner`` itself when its name is one of ``skip``)."""
        if inner.name.startswith(self.skip):
            return inner
        folder = self.root / folder_name(inner.name, version_of(inner))
        cached = CachedEmbedder(inner, folder, flush_every=self.flush_every)
        self.wrapped.append(cached)
        return cached

    def flush(self) -> None:
        for cached in self.wrapped:
            cached.flush()

    def stats(self) -> dict[str, int]:
        """Texts found in the cache and texts embedded, over every embedder wrapped."""
        return {
            "embed_cache_hits": sum(c.hits for c in self.wrapped),
            "embed_cache_misses": sum(c.misses for c in self.wrapped),
        }
