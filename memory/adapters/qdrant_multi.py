"""One search over several spaces of a kind (``ports.MemorySpaces.search_spaces``): the episodes of
a channel's earlier streams.

* **shared layout** — the spaces are tenants of one collection: one fused query (as ``search``)
  filtered by ``tenant`` in the set (``MatchAny`` on the tenant index).
* **per-space layout** — a collection per stream: each is asked for its dense and its sparse
  ranking separately (the query embedded once), and the rankings are merged across collections by
  their raw scores (cosine: one embedder; BM25 with each collection's IDF) before one reciprocal
  rank fusion, as the shared layout's fused query would rank them. (Fusing per collection would
  give every stream's best hit the same score.) Collections that do not exist are skipped.
  Embedded Qdrant: 60 streams of 20 episodes, ~130–180 ms a search at load 5 on 2 cores (one
  space: ~3 ms), yielding to the turn's other sources between collections.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING

from memory.adapters import qdrant_collections, qdrant_hybrid
from memory.adapters import qdrant_models as qm
from memory.spaces import lexical
from memory.spaces import store as spaces_module

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from memory import ports
    from memory.adapters.qdrant_collections import Client
    from memory.spaces import records


def _kinds(kinds: Collection[records.MemoryKind] | None) -> list[qm.Condition]:
    if kinds is None:
        return []
    return [qm.FieldCondition(key="kind", match=qm.MatchAny(any=[k.value for k in kinds]))]


async def search_spaces(
    client: Client,
    collections: qdrant_collections.Collections,
    embedder: ports.Embedder,
    spaces: Sequence[str],
    query: str,
    *,
    limit: int,
    kinds: Collection[records.MemoryKind] | None,
    window: records.TimeWindow | None,
) -> list[records.MemoryHit]:
    """See the module docstring; corrections are not applied (episodes have none)."""
    wanted = list(dict.fromkeys(spaces))
    kind = {spaces_module.space_kind(space) for space in wanted}
    if limit <= 0 or not wanted:
        return []
    if len(kind) > 1:
        raise ValueError(f"search_spaces searches spaces of one kind, got {sorted(kind)}")
    names = {collections.name(space): space for space in wanted}
    with qdrant_collections.wrap_errors("search"):
        existing = [
            name
            for name, space in names.items()
            if await collections.ensure(name, space=space, create=False)
        ]
    if not existing:
        return []
    [vector] = await embedder.embed([query], kind="query")
    fetch = spaces_module.fetch_size(limit)
    conditions = [*qdrant_hybrid.current(window, False), *_kinds(kinds)]
    with qdrant_collections.wrap_errors("search"):
        if collections.shared:
            tenants = qm.FieldCondition(key=spaces_module.TENANT_KEY, match=qm.MatchAny(any=wanted))
            [name] = existing
            encoder = collections.encoder(name)
            sparse = encoder.query(query) if encoder else None
            where = qm.Filter(must=[tenants, *conditions])
            candidates = await qdrant_hybrid.search(client, name, vector, sparse, fetch, where)
        else:
            candidates = await _merged(client, collections, existing, vector, query, fetch,
                                       conditions)  # fmt: skip
    return spaces_module.rank(
        query, candidates, {}, limit=limit, kinds=kinds, sparse=collections.sparse
    )


async def _merged(
    client: Client,
    collections: qdrant_collections.Collections,
    names: Sequence[str],
    vector: list[float],
    query: str,
    fetch: int,
    conditions: Sequence[qm.Condition],
) -> list[spaces_module.Candidate]:
    """Per-space layout: every collection's dense and sparse rankings, merged by raw score, then
    fused by reciprocal rank (``lexical.fuse``, the sparse ranking ``SPARSE_COPIES`` times)."""
    where = qm.Filter(must=list(conditions)) if conditions else None
    dense: list[qm.ScoredPoint] = []
    sparse: list[qm.ScoredPoint] = []
    for name in names:
        # embedded Qdrant searches synchronously: let the turn's other sources run in between,
        # so one search over many streams never holds their deadlines up
        await asyncio.sleep(0)
        try:
            encoder = collections.encoder(name)
            found = await client.query_points(
                name,
                query=vector,
                using=lexical.DENSE if encoder else None,
                limit=fetch,
                query_filter=where,
                with_payload=True,
            )
            dense.extend(found.points)
            indices, values = encoder.query(query) if encoder else ([], [])
            if indices:
                found = await client.query_points(
                    name,
                    query=qm.SparseVector(indices=indices, values=values),
                    using=lexical.SPARSE,
                    limit=fetch,
                    query_filter=where,
                    with_payload=True,
                )
                sparse.extend(found.points)
        except qdrant_collections.CollectionGone:  # dropped by another process meanwhile
            collections.forget(name)
    dense.sort(key=lambda p: -p.score)
    sparse.sort(key=lambda p: -p.score)
    by_id = {str(p.id): p for p in [*dense, *sparse]}
    dense_ids = [str(p.id) for p in dense[:fetch]]
    sparse_ids = [str(p.id) for p in sparse[:fetch]]
    cosine = {str(p.id): p.score for p in dense}  # a dense search's score is the similarity
    if not sparse_ids:  # no content word, or dense-only collections: cosine as ``search`` gives
        return [dataclasses.replace(c, similarity=c.score)
                for c in qdrant_hybrid.candidates(dense[:fetch])]  # fmt: skip
    fused = lexical.fuse([dense_ids, *[sparse_ids] * lexical.SPARSE_COPIES])
    ranked = sorted(fused, key=lambda i: (-fused[i], i))[:fetch]
    return [
        spaces_module.Candidate(record=spaces_module.from_payload(by_id[i].payload or {}),
                                score=fused[i], similarity=cosine.get(i))
        for i in ranked
    ]  # fmt: skip
