"""Find a string anywhere the system keeps data: every text/json/array column of every Postgres
table, every Redis key under a prefix, and every file of the data folder (embedded Qdrant's storage).
Used by the redaction and forget tests: "nowhere" must mean nowhere."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import redis.asyncio as aioredis

if TYPE_CHECKING:
    from pathlib import Path

    from memory.adapters import postgres

#: column types whose text a scan reads (arrays of text and jsonb included)
_TEXTUAL = ("text", "character varying", "json", "jsonb", "ARRAY", "USER-DEFINED")


async def postgres_hits(db: postgres.Database, *needles: str) -> list[str]:
    """``table.column: needle`` for every needle some row value of a column contains."""
    columns = await db.pool.fetch(
        "SELECT table_name, column_name FROM information_schema.columns"
        " WHERE table_schema = 'public' AND data_type = ANY($1::text[])"
        " AND table_name IN (SELECT table_name FROM information_schema.tables"
        "   WHERE table_schema = 'public' AND table_type = 'BASE TABLE')",
        list(_TEXTUAL),
    )
    hits = []
    for row in columns:
        table, column = row["table_name"], row["column_name"]
        found = await db.pool.fetch(
            "SELECT n FROM unnest($1::text[]) AS n WHERE EXISTS ("
            f' SELECT 1 FROM "{table}" WHERE strpos("{column}"::text, n) > 0)',
            list(needles),
        )
        hits += [f"{table}.{column}: {r['n']}" for r in found]
    return hits


async def redis_hits(url: str, prefix: str, *needles: str) -> list[str]:
    """``key: needle`` for keys under ``prefix`` (``""``: every key of the database) whose name or
    value (string, list, hash, set, sorted set, stream) contains a needle."""
    client = aioredis.Redis.from_url(url)
    hits: list[str] = []
    try:
        async for key in client.scan_iter(match=prefix + "*"):
            kind = _text(await client.type(key))
            values: list[Any]
            if kind == "string":
                values = [await client.get(key)]
            elif kind == "list":
                values = await client.lrange(key, 0, -1)
            elif kind == "hash":
                values = [v for pair in (await client.hgetall(key)).items() for v in pair]
            elif kind == "set":
                values = list(await client.smembers(key))
            elif kind == "zset":
                values = list(await client.zrange(key, 0, -1))
            elif kind == "stream":
                entries = await client.xrange(key) or []
                values = [
                    v for _, fields in entries for pair in (fields or {}).items() for v in pair
                ]
            else:
                values = [await client.dump(key)]  # another type: its serialized bytes
            text = " ".join(_text(v or b"") for v in [key, *values])
            hits += [f"{_text(key)}: {needle}" for needle in needles if needle in text]
    finally:
        await client.aclose()
    return hits


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def file_hits(folder: Path, *needles: str) -> list[str]:
    """``file: needle`` for files under ``folder`` (embedded Qdrant's SQLite storage, …) whose
    bytes contain a needle."""
    hits = []
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            hits += [f"{path}: {n}" for n in needles if n.encode() in data]
    return hits
