"""An in-memory ``ports.MemorySpaces`` for unit tests.

Same rules as the Qdrant adapter (``memory.spaces.store``: key and id validation, correction marks,
ranking with the lexical signal), checked by the contract tests in ``tests/test_spaces.py``, which
run over this fake and both Qdrant layouts. Vectors come from the given embedder (default: the
offline hashing embedder), so search results are real similarity results.

    spaces = InMemorySpaces()
    await spaces.upsert([record])
    hits = await spaces.search("viewer:42", "where does she live")
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from memory.spaces import embedders, records
from memory.spaces import store as spaces_module

if TYPE_CHECKING:
    import builtins
    from collections.abc import Collection, Sequence

    from memory import ports


@dataclasses.dataclass(slots=True)
class _Point:
    record: records.MemoryRecord
    vector: np.ndarray
    corrected_by: str | None = None


class InMemorySpaces:
    """``ports.MemorySpaces`` in a dict; ``upserts`` counts upsert calls (for tests)."""

    def __init__(self, embedder: ports.Embedder | None = None) -> None:
        self.embedder = embedder or embedders.OfflineHashEmbedder()
        self.embedder_name = self.embedder.name
        self._spaces: dict[str, dict[str, _Point]] = {}
        self.upserts = 0

    async def close(self) -> None:
        return None

    async def upsert(self, records: Sequence[records.MemoryRecord]) -> None:
        for record in records:
            spaces_module.validate_record(record)
        self.upserts += 1
        vectors = await self.embedder.embed([r.text for r in records])
        for record, vector in zip(records, vectors, strict=True):
            points = self._spaces.setdefault(record.space, {})
            old = points.get(record.id)
            points[record.id] = _Point(
                record=record,
                vector=np.asarray(vector, dtype=np.float64) / (np.linalg.norm(vector) or 1.0),
                corrected_by=old.corrected_by if old else None,
            )
        for record in records:
            target = self._spaces[record.space].get(record.corrects or "")
            if target is not None:
                target.corrected_by = record.id

    async def search(
        self,
        space: str,
        query: str,
        *,
        limit: int = 5,
        kinds: Collection[records.MemoryKind] | None = None,
    ) -> builtins.list[records.MemoryHit]:
        spaces_module.space_kind(space)
        points = self._spaces.get(space, {})
        if limit <= 0 or not points:
            return []
        [vector] = await self.embedder.embed([query])
        q = np.asarray(vector, dtype=np.float64)
        q = q / (np.linalg.norm(q) or 1.0)
        scored = sorted(
            (
                spaces_module.Candidate(
                    record=p.record, score=float(p.vector @ q), corrected_by=p.corrected_by
                )
                for p in points.values()
            ),
            key=lambda c: -c.score,
        )
        fetch = spaces_module.fetch_size(limit)
        candidates = scored[:fetch]
        matching = [c for c in candidates if kinds is not None and c.record.kind in kinds]
        if kinds is not None and len(candidates) == fetch and len(matching) < limit:
            candidates += [c for c in scored if c.record.kind in kinds][:fetch]  # as the adapter
        corrections = {
            c.corrected_by: points[c.corrected_by].record
            for c in candidates
            if c.corrected_by and c.corrected_by in points
        }
        return spaces_module.rank(query, candidates, corrections, limit=limit, kinds=kinds)

    async def get(self, space: str, ids: Sequence[str]) -> builtins.list[records.MemoryRecord]:
        spaces_module.space_kind(space)
        points = self._spaces.get(space, {})
        return [points[i].record for i in dict.fromkeys(ids) if i in points]

    async def list(self, space: str, *, limit: int = 1000) -> builtins.list[records.MemoryRecord]:
        spaces_module.space_kind(space)
        records = sorted(
            (p.record for p in self._spaces.get(space, {}).values()),
            key=lambda r: (r.created_at, r.id),
        )
        return records[:limit]

    async def find(
        self, memory_id: str, *, spaces: Collection[str] | None = None
    ) -> records.MemoryRecord | None:
        for space, points in self._spaces.items():
            if spaces is not None and space not in spaces:
                continue
            if memory_id in points:
                return points[memory_id].record
        return None

    async def delete(self, space: str, ids: Sequence[str]) -> int:
        spaces_module.space_kind(space)
        points = self._spaces.get(space, {})
        return sum(1 for i in dict.fromkeys(ids) if points.pop(i, None) is not None)

    async def delete_turn(self, turn_id: str, *, spaces: Collection[str] | None = None) -> int:
        removed = 0
        for space, points in self._spaces.items():
            if spaces is not None and space not in spaces:
                continue
            for memory_id in [i for i, p in points.items() if p.record.turn_id == turn_id]:
                del points[memory_id]
                removed += 1
        return removed

    async def drop(self, space: str) -> int:
        spaces_module.space_kind(space)
        return len(self._spaces.pop(space, {}))

    async def count(self, space: str) -> int:
        spaces_module.space_kind(space)
        return len(self._spaces.get(space, {}))

    async def spaces(self) -> builtins.list[str]:
        return sorted(space for space, points in self._spaces.items() if points)
