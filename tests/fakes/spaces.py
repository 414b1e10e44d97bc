"""An in-memory ``ports.MemorySpaces`` for unit tests.

Same rules as the Qdrant adapter (``memory.spaces.store``: key and id validation, correction marks,
ranking with the lexical signal; ``memory.spaces.lexical``: the sparse lexical vector with IDF over
the space, fused with the dense ranking by reciprocal rank), checked by the contract tests in ``tests/test_spaces.py``, which
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

from memory.spaces import embedders, lexical, records
from memory.spaces import store as spaces_module

if TYPE_CHECKING:
    import builtins
    from collections.abc import Collection, Sequence
    from datetime import datetime

    from memory import ports


@dataclasses.dataclass(slots=True)
class _Point:
    record: records.MemoryRecord
    vector: np.ndarray
    corrected_by: str | None = None
    sparse: dict[int, float] = dataclasses.field(default_factory=dict)


class InMemorySpaces:
    """``ports.MemorySpaces`` in a dict; ``upserts`` counts upsert calls (for tests)."""

    def __init__(
        self, embedder: ports.Embedder | None = None, sparse: ports.SparseEncoder | None = None
    ) -> None:
        self.embedder = embedder or embedders.OfflineHashEmbedder()
        self.sparse: ports.SparseEncoder = sparse or lexical.ENCODER
        self.embedder_name = self.embedder.name
        self._spaces: dict[str, dict[str, _Point]] = {}
        self.upserts = 0

    async def close(self) -> None:
        return None

    async def warm(self, spaces: Collection[str]) -> int:
        return 0  # nothing to open

    async def upsert(self, records: Sequence[records.MemoryRecord]) -> None:
        for record in records:
            spaces_module.validate_record(record)
        self.upserts += 1
        vectors = await self.embedder.embed([r.dense_text for r in records])
        for record, vector in zip(records, vectors, strict=True):
            points = self._spaces.setdefault(record.space, {})
            old = points.get(record.id)
            if old is not None and record.superseded_by is None:  # a retry keeps the mark
                record = dataclasses.replace(
                    record,
                    superseded_by=old.record.superseded_by,
                    superseded_at=old.record.superseded_at,
                )
            points[record.id] = _Point(
                record=record,
                vector=np.asarray(vector, dtype=np.float64) / (np.linalg.norm(vector) or 1.0),
                corrected_by=old.corrected_by if old else None,
                sparse=dict(
                    zip(
                        *self.sparse.document(
                            record.search_text, record.login, record.context_terms
                        ),
                        strict=True,
                    )
                ),
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
        window: records.TimeWindow | None = None,
        include_superseded: bool = False,
    ) -> builtins.list[records.MemoryHit]:
        spaces_module.space_kind(space)
        points = {
            i: p
            for i, p in self._spaces.get(space, {}).items()
            if (window is None or window.contains(p.record.said_at))
            and (include_superseded or p.record.superseded_by is None)
        }  # the store's filter: before the search, as a payload filter
        if limit <= 0 or not points:
            return []
        q = await self._query_vector(query)
        fetch = spaces_module.fetch_size(limit)
        terms = self.sparse.query(query)[0]
        candidates = _hybrid(points, q, terms, fetch, None)
        matching = [c for c in candidates if kinds is not None and c.record.kind in kinds]
        if kinds is not None and len(candidates) == fetch and len(matching) < limit:
            candidates += _hybrid(points, q, terms, fetch, kinds)  # as the adapter
        stored = self._spaces[space]  # a correction counts wherever it is (as the adapter)
        corrections = {
            c.corrected_by: stored[c.corrected_by].record
            for c in candidates
            if c.corrected_by and c.corrected_by in stored
        }
        return spaces_module.rank(
            query, candidates, corrections, limit=limit, kinds=kinds, sparse=self.sparse
        )

    async def _query_vector(self, query: str) -> np.ndarray:
        [vector] = await self.embedder.embed([query])
        q = np.asarray(vector, dtype=np.float64)
        return q / (np.linalg.norm(q) or 1.0)

    async def search_spaces(
        self,
        spaces: Sequence[str],
        query: str,
        *,
        limit: int = 5,
        kinds: Collection[records.MemoryKind] | None = None,
        window: records.TimeWindow | None = None,
    ) -> builtins.list[records.MemoryHit]:
        """As the shared layout's one tenant-filtered query: the spaces' points ranked as one."""
        wanted = list(dict.fromkeys(spaces))
        if len({spaces_module.space_kind(space) for space in wanted}) > 1:
            raise ValueError("search_spaces searches spaces of one kind")
        points = {
            i: p
            for space in wanted
            for i, p in self._spaces.get(space, {}).items()
            if (window is None or window.contains(p.record.said_at))
            and p.record.superseded_by is None
            and (kinds is None or p.record.kind in kinds)
        }
        if limit <= 0 or not points:
            return []
        q = await self._query_vector(query)
        fetch = spaces_module.fetch_size(limit)
        candidates = _hybrid(points, q, self.sparse.query(query)[0], fetch, kinds)
        return spaces_module.rank(
            query, candidates, {}, limit=limit, kinds=kinds, sparse=self.sparse
        )

    async def supersede(self, space: str, ids: Sequence[str], *, by: str, at: datetime) -> int:
        spaces_module.space_kind(space)
        points = self._spaces.get(space, {})
        marked = 0
        for memory_id in dict.fromkeys(ids):
            point = points.get(memory_id)
            if point is not None and memory_id != by:
                point.record = dataclasses.replace(point.record, superseded_by=by, superseded_at=at)
                marked += 1
        return marked

    async def unsupersede(self, space: str, ids: Sequence[str]) -> int:
        spaces_module.space_kind(space)
        points = self._spaces.get(space, {})
        cleared = 0
        for memory_id in dict.fromkeys(ids):
            point = points.get(memory_id)
            if point is not None and point.record.superseded_by is not None:
                point.record = dataclasses.replace(
                    point.record, superseded_by=None, superseded_at=None
                )
                cleared += 1
        return cleared

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

    async def vacuum(self, spaces: Collection[str]) -> int:
        return 0  # nothing is kept once deleted

    async def drop(self, space: str) -> int:
        spaces_module.space_kind(space)
        return len(self._spaces.pop(space, {}))

    async def count(self, space: str) -> int:
        spaces_module.space_kind(space)
        return len(self._spaces.get(space, {}))

    async def spaces(self) -> builtins.list[str]:
        return sorted(space for space, points in self._spaces.items() if points)


def _hybrid(
    points: dict[str, _Point],
    query: np.ndarray,
    terms: Sequence[int],
    fetch: int,
    kinds: Collection[records.MemoryKind] | None,
) -> list[spaces_module.Candidate]:
    """What the adapter's one fused query returns: the dense and sparse (IDF over the space)
    rankings of ``points`` (of ``kinds``), ``fetch`` deep each, fused by reciprocal rank."""
    chosen = [p for p in points.values() if kinds is None or p.record.kind in kinds]
    dense = sorted(chosen, key=lambda p: -float(p.vector @ query))[:fetch]
    by_id = {p.record.id: p for p in chosen}
    if not terms:
        return [
            spaces_module.Candidate(
                record=p.record, score=float(p.vector @ query), corrected_by=p.corrected_by
            )
            for p in dense
        ]
    idf = {t: lexical.idf(sum(1 for p in chosen if t in p.sparse), len(chosen)) for t in terms}
    sparse_scores = {
        p.record.id: sum(idf[t] * p.sparse[t] for t in terms if t in p.sparse) for p in chosen
    }
    sparse = sorted((i for i, v in sparse_scores.items() if v > 0), key=lambda i: -sparse_scores[i])
    fused = lexical.fuse([[p.record.id for p in dense], *[sparse[:fetch]] * lexical.SPARSE_COPIES])
    ranked = sorted(fused, key=lambda i: -fused[i])[:fetch]
    return [
        spaces_module.Candidate(
            record=by_id[i].record, score=fused[i], corrected_by=by_id[i].corrected_by
        )
        for i in ranked
    ]
