"""Adapters: the only modules that import the drivers (asyncpg, redis, qdrant_client, ollama)."""

from __future__ import annotations
