"""Embedding calls made in batches: ``BatchingEmbedder`` around any ``ports.Embedder``.

A semantic model costs far less a text in a batch than alone (e5 on 2 cores: ~8 short texts a
second one by one, ~30 in batches of 64), and a turn asks for several embeddings at once: one
query per planned source, the stored texts of several consolidation jobs. Requests of one kind
(query or passage) that arrive while the event loop runs one iteration, or while the previous
call of that kind is still running, become one call of the inner embedder, each distinct text
once: an idle embedder adds no wait, a busy one gathers what comes meanwhile. The last query
vectors are kept (a question is searched in several spaces, and again by the next batch's
prefetch); stored texts are not, each is embedded once.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from memory import ports

#: texts of one call at most (what is left goes in the next)
MAX_BATCH = 64


class _Lane:
    """The pending texts of one kind and the task that embeds them."""

    def __init__(self) -> None:
        self.pending: dict[str, asyncio.Future[list[float]]] = {}
        self.task: asyncio.Task[None] | None = None


class BatchingEmbedder:
    """``ports.Embedder``: batched calls of ``inner`` (module docstring); ``calls`` counts them."""

    def __init__(self, inner: ports.Embedder, *, cache_size: int = 2048) -> None:
        self.inner = inner
        self.name = inner.name
        self.cache_size = cache_size
        self._cache: dict[str, list[float]] = {}
        self._lanes: dict[ports.EmbedKind, _Lane] = {"query": _Lane(), "passage": _Lane()}
        #: inner calls made, by kind
        self.calls: dict[ports.EmbedKind, int] = {"query": 0, "passage": 0}

    @property
    def dim(self) -> int:  # an Ollama embedder learns its dimension from its first call
        return self.inner.dim

    @dim.setter
    def dim(self, value: int) -> None:
        self.inner.dim = value

    async def embed(
        self, texts: Sequence[str], *, kind: ports.EmbedKind = "passage"
    ) -> list[list[float]]:
        waiting = [self._ask(text, kind) for text in texts]
        # shielded: a caller that times out leaves the call to the others waiting on it
        return [await asyncio.shield(future) for future in waiting]

    def _ask(self, text: str, kind: ports.EmbedKind) -> asyncio.Future[list[float]]:
        loop = asyncio.get_running_loop()
        cached = self._cache.get(text) if kind == "query" else None
        if cached is not None:
            done: asyncio.Future[list[float]] = loop.create_future()
            done.set_result(cached)
            return done
        lane = self._lanes[kind]
        future = lane.pending.get(text)
        if future is None:
            future = lane.pending[text] = loop.create_future()
        if lane.task is None:  # after the rest of this iteration: its requests join the call
            lane.task = loop.create_task(self._drain(kind, lane), name=f"embed-{kind}")
        return future

    async def _drain(self, kind: ports.EmbedKind, lane: _Lane) -> None:
        try:
            while lane.pending:
                texts = list(lane.pending)[:MAX_BATCH]
                batch = {text: lane.pending.pop(text) for text in texts}
                await self._call(kind, batch)
        finally:
            lane.task = None

    async def _call(
        self, kind: ports.EmbedKind, batch: dict[str, asyncio.Future[list[float]]]
    ) -> None:
        self.calls[kind] += 1
        try:
            vectors = await self.inner.embed(list(batch), kind=kind)
        except asyncio.CancelledError:
            for future in batch.values():
                future.cancel()
            raise
        except Exception as exc:  # every waiter gets the inner embedder's error
            for future in batch.values():
                if not future.done():
                    future.set_exception(exc)
            return
        for (text, future), vector in zip(batch.items(), vectors, strict=True):
            if kind == "query":
                self._remember(text, vector)
            if not future.done():
                future.set_result(vector)

    def _remember(self, text: str, vector: list[float]) -> None:
        if len(self._cache) >= self.cache_size:
            del self._cache[next(iter(self._cache))]  # the oldest first (insertion order)
        self._cache[text] = vector

    def close(self) -> None:
        """Let the inner embedder's threads go, where it has some (e5's engines)."""
        closing = getattr(self.inner, "close", None)
        if closing is not None:
            closing()
