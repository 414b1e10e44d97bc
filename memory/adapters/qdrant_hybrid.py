"""The Qdrant side of hybrid search (``memory.spaces.lexical``): point vectors and the fused query.

A memory collection made since hybrid search holds a named dense vector and the sparse ``lexical``
vector (``qdrant_collections`` creates them, with the IDF modifier); one made before holds one
unnamed dense vector and is searched dense-only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from qdrant_client import models as qm

from memory.spaces import lexical

if TYPE_CHECKING:
    from qdrant_client import AsyncQdrantClient

    from memory.spaces import records as memory_records


def point_vector(hybrid: bool, record: memory_records.MemoryRecord, dense: list[float]) -> Any:
    """What a point of ``record`` stores: both vectors in a hybrid collection, else the dense one."""
    if not hybrid:
        return dense
    indices, values = lexical.document(record.text, record.login, record.context_terms)
    return {lexical.DENSE: dense, lexical.SPARSE: qm.SparseVector(indices=indices, values=values)}


async def query(
    client: AsyncQdrantClient,
    name: str,
    dense: list[float],
    sparse: lexical.SparseVector | None,
    fetch: int,
    where: qm.Filter | None,
) -> list[qm.ScoredPoint]:
    """Dense search (a collection made before hybrid search: ``sparse`` None; or a query without a
    content word), else dense and sparse prefetches fused by reciprocal rank in one call."""
    if sparse is None:
        response = await client.query_points(
            name, query=dense, limit=fetch, query_filter=where, with_payload=True
        )
    elif not sparse[0]:
        response = await client.query_points(
            name,
            query=dense,
            using=lexical.DENSE,
            limit=fetch,
            query_filter=where,
            with_payload=True,
        )
    else:
        indices, values = sparse
        lexical_prefetch = qm.Prefetch(
            query=qm.SparseVector(indices=indices, values=values),
            using=lexical.SPARSE,
            limit=fetch,
            filter=where,
        )
        response = await client.query_points(
            name,
            prefetch=[
                qm.Prefetch(query=dense, using=lexical.DENSE, limit=fetch, filter=where),
                *[lexical_prefetch] * lexical.SPARSE_COPIES,
            ],
            query=qm.FusionQuery(fusion=qm.Fusion.RRF),
            limit=fetch,
            with_payload=True,
        )
    return response.points
