"""Memory spaces: vectors per viewer, per stream and for the lore.

Owns the memory spaces API over Qdrant (``store``; the driver code is ``adapters.qdrant``), the
embedders (``embedders``) and the lore loader (``lore``). Imports the shared top level only; exposes
the ``MemorySpaces`` and ``Embedder`` ports.
"""

from __future__ import annotations
