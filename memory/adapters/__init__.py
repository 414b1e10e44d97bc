"""Adapters: the only modules that import the drivers (asyncpg, redis, qdrant_client, ollama)."""

from __future__ import annotations

from memory.adapters import qdrant_import

qdrant_import.install()  # before any adapter imports qdrant_client (qdrant_import)
