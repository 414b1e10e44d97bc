"""The boundaries of the memory package, as Protocols.

Adapters in ``memory/adapters/`` implement them and are the only importers of drivers (asyncpg,
redis, qdrant_client, ollama). ``tests/fakes.py`` implements them in memory for unit tests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    import builtins
    from collections.abc import Collection, Mapping, Sequence
    from datetime import datetime

    from memory import models
    from memory.spaces import records


class WorkingHistory(Protocol):
    """The recent messages and replies of each stream, capped (Redis list or in-process)."""

    async def append(self, stream: str, items: Sequence[models.HistoryItem]) -> None: ...

    async def recent(self, stream: str, limit: int | None = None) -> list[models.HistoryItem]:
        """The newest ``limit`` items (all kept items when None), oldest first."""
        ...

    async def replace(self, stream: str, items: Sequence[models.HistoryItem]) -> None:
        """Replace a stream's history (rebuild from the transcript)."""
        ...

    async def length(self, stream: str) -> int: ...


class Cache(Protocol):
    """A string cache with a TTL per key (Redis or in-process)."""

    async def get(self, key: str) -> str | None: ...

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        """The values of ``keys`` in order (None: missing), in one round trip."""
        ...

    async def set(self, key: str, value: str, ttl_seconds: float) -> None: ...

    async def delete_prefix(self, prefix: str) -> int:
        """Delete every key starting with ``prefix``; returns how many."""
        ...


class ChatModel(Protocol):
    """A chat language model (Ollama, or any OpenAI-compatible server)."""

    #: the model's context window in tokens when known (configured, or told by the server at
    #: ``check``); None: prompts are not reduced to fit it
    context_tokens: int | None

    async def check(self) -> None:
        """Raise ``errors.ModelUnavailable`` when the model server cannot be reached."""
        ...

    async def chat(
        self,
        messages: Sequence[models.PromptMessage],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        model: str | None = None,
        max_tokens: int | None = None,
    ) -> models.ModelReply:
        """The model's answer; ``max_tokens``: the most it may write (None: the server's own)."""
        ...


#: what a text is embedded as: a stored text, or a search
EmbedKind = Literal["passage", "query"]


class Embedder(Protocol):
    """Turns texts into dense vectors."""

    #: identifies the embedder and its model; recorded on every collection
    name: str
    dim: int

    async def embed(
        self, texts: Sequence[str], *, kind: EmbedKind = "passage"
    ) -> list[list[float]]:
        """One vector per text. ``kind``: ``"passage"`` for a text that is stored, ``"query"``
        for a search (models trained with prefixes, as e5, embed the two differently; the
        others ignore it)."""
        ...


class SparseEncoder(Protocol):
    """A sparse scheme of hybrid search: the term weights of stored texts and of queries
    (``memory.spaces.lexical``; Qdrant's own BM25, ``memory.adapters.qdrant_bm25``)."""

    #: recorded on every memory collection: its points' sparse vectors, never two schemes in one
    version: str

    def document(
        self, text: str, speaker: str | None = None, context: Sequence[int] = ()
    ) -> tuple[list[int], list[float]]:
        """A stored text's vector (its speaker's login, and the ``context`` term ids of the question
        it answers at a lower weight, indexed with it)."""
        ...

    def query(self, text: str) -> tuple[list[int], list[float]]:
        """A query's vector (empty indices: no content word)."""
        ...

    def context_terms(self, question: str) -> tuple[int, ...]:
        """The term ids a memory answering ``question`` is also indexed with (empty: not a
        question)."""
        ...


class Planner(Protocol):
    """Decides, without any model call, which memory sources a batch needs."""

    def plan(self, batch: models.Batch, history: Sequence[models.HistoryItem]) -> models.Plan: ...


class ViewerLookup(Protocol):
    """Known viewers by name, read synchronously by the planner (``directory.ViewerDirectory``)."""

    def lookup(self, name: str, *, stream: str | None = None) -> tuple[str, str] | None:
        """(login, user id) of the viewer whose login or display name is ``name``, or None (of
        namesakes, the only one who chatted in ``stream``)."""
        ...


class Recall(Protocol):
    """What the memory stage brought back for one turn (read-only for its consumers)."""

    @property
    def items(self) -> list[models.RecallItem]:
        """Recall items in prompt order, with provenance."""
        ...

    @property
    def timings_ms(self) -> dict[str, float]:
        """Milliseconds per source key (``recall:alice``) and ``memory_total``."""
        ...

    @property
    def degraded(self) -> list[models.Degraded]: ...

    @property
    def block(self) -> str:
        """The assembled, sectioned memory block for the prompt ("" when nothing)."""
        ...

    @property
    def dropped(self) -> dict[str, int]:
        """Items the relevance floor left out, per source key (``memory.recall.relevance``)."""
        ...


class Retriever(Protocol):
    """Fetches the planned sources in parallel under the budget and assembles the memory block."""

    async def retrieve(
        self,
        plan: models.Plan,
        batch: models.Batch,
        history: Sequence[models.HistoryItem],
    ) -> Recall: ...


class Reducer(Protocol):
    """Working history → what the prompt shows (a read-side view; the transcript keeps everything).

    ``items`` may start with a system item; it is always kept and not counted.
    """

    async def reduce(
        self, stream: str, items: Sequence[models.HistoryItem]
    ) -> list[models.HistoryItem]: ...


class MemorySpaces(Protocol):
    """Semantic memory spaces on Qdrant: personal, episodic, lore.

    ``space`` is a storage key from ``identity``: ``viewer:<user id>``, ``stream:<stream id>`` or
    ``lore``. Records carry their key in ``MemoryRecord.space``. Texts are embedded by the spaces.
    """

    #: the embedder whose vectors the spaces hold
    embedder_name: str

    @property
    def sparse(self) -> SparseEncoder:
        """The store's sparse scheme: the term ids a memory keeps of the question it answers
        (``MemoryRecord.context_terms``) are its."""
        ...

    async def upsert(self, records: Sequence[records.MemoryRecord]) -> None:
        """Insert or replace records (same id → replaced, so retries make no duplicates)."""
        ...

    async def search(
        self,
        space: str,
        query: str,
        *,
        limit: int = 5,
        kinds: Collection[records.MemoryKind] | None = None,
        window: records.TimeWindow | None = None,
        include_superseded: bool = False,
    ) -> list[records.MemoryHit]:
        """The best ``limit`` memories of ``space`` for ``query``.

        ``window``: only memories said inside it (``MemoryRecord.said_at``; a payload datetime
        filter in the store). Superseded memories (``supersede``) are left out unless
        ``include_superseded`` (a question about the past)."""
        ...

    async def search_spaces(
        self,
        spaces: Sequence[str],
        query: str,
        *,
        limit: int = 5,
        kinds: Collection[records.MemoryKind] | None = None,
        window: records.TimeWindow | None = None,
    ) -> list[records.MemoryHit]:
        """The best ``limit`` current memories of several spaces of one kind (the episodes of a
        channel's earlier streams), ranked as if they were one space: the query embedded once;
        in the shared layout one query filtered by a set of tenants."""
        ...

    async def supersede(self, space: str, ids: Sequence[str], *, by: str, at: datetime) -> int:
        """Mark memories of ``space`` superseded by the newer memory ``by`` (``superseded_by``,
        ``superseded_at`` on the stored points); returns how many were marked. Marking again
        moves the mark; the memories stay stored, listed and erasable."""
        ...

    async def unsupersede(self, space: str, ids: Sequence[str]) -> int:
        """Clear the superseded mark of memories of ``space`` (their superseding memory is gone):
        they are recalled as current again; returns how many carried a mark."""
        ...

    async def get(self, space: str, ids: Sequence[str]) -> list[records.MemoryRecord]: ...

    async def list(self, space: str, *, limit: int = 1000) -> list[records.MemoryRecord]: ...

    async def find(
        self, memory_id: str, *, spaces: Collection[str] | None = None
    ) -> records.MemoryRecord | None:
        """Look a memory up by id in ``spaces`` (None: every space, which embedded Qdrant must
        open one by one)."""
        ...

    async def delete(self, space: str, ids: Sequence[str]) -> int: ...

    async def delete_turn(self, turn_id: str, *, spaces: Collection[str] | None = None) -> int:
        """Delete every memory that came from one turn, in ``spaces`` (None: every space)."""
        ...

    async def drop(self, space: str) -> int:
        """Delete a whole space; returns how many memories it held."""
        ...

    async def count(self, space: str) -> int: ...

    async def spaces(self) -> builtins.list[str]: ...

    async def vacuum(self, spaces: Collection[str]) -> int:
        """Make deleted and replaced memories of ``spaces`` physically gone from storage (forget,
        retention); returns how many storage files were rewritten."""
        ...

    async def warm(self, spaces: Collection[str]) -> int:
        """Get ``spaces`` ready to search ahead of use (embedded Qdrant opens their folders);
        returns how many were opened. A no-op where nothing needs opening."""
        ...


class CommandHandler(Protocol):
    """Answers chat commands (``!forget …``); returns the public reply (or None)."""

    async def handle(self, event: models.ChatEvent, batch: models.Batch) -> str | None: ...
