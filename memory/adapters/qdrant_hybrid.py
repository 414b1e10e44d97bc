"""The Qdrant side of hybrid search (``memory.spaces.lexical``): point vectors and the fused query.

A memory collection made since hybrid search holds a named dense vector and the sparse ``lexical``
vector (``qdrant_collections`` creates them, with the IDF modifier); one made before holds one
unnamed dense vector and is searched dense-only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memory.adapters import qdrant_models as qm
from memory.spaces import lexical
from memory.spaces import store as spaces_module

if TYPE_CHECKING:
    from collections.abc import Sequence

    from memory import ports
    from memory.adapters.qdrant_collections import Client
    from memory.spaces import records as memory_records


def current(
    window: memory_records.TimeWindow | None, include_superseded: bool
) -> list[qm.Condition]:
    """The payload conditions of a search's time window and of "not superseded"."""
    conditions: list[qm.Condition] = []
    if not include_superseded:  # no mark: the key is missing or null
        conditions.append(qm.IsEmptyCondition(is_empty=qm.PayloadField(key="superseded_by")))
    if window is not None and (window.since or window.until):
        conditions.append(
            qm.FieldCondition(
                key=spaces_module.SAID_AT_KEY,
                range=qm.DatetimeRange(gte=window.since, lt=window.until),
            )
        )
    return conditions


def candidates(
    points: Sequence[qm.ScoredPoint], dense: Sequence[float] | None = None
) -> list[spaces_module.Candidate]:
    """Scored points as ranking candidates (with the correction mark of the stored point and,
    given the query's ``dense`` vector and points read with theirs, the similarity of the two)."""
    return [
        spaces_module.candidate(
            point.payload or {},
            point.score,
            spaces_module.similarity(dense, point.vector) if dense is not None else None,
        )
        for point in points
    ]


def point_vector(
    sparse: ports.SparseEncoder | None, record: memory_records.MemoryRecord, dense: list[float]
) -> Any:
    """What a point of ``record`` stores: both vectors in a hybrid collection (``sparse``: its
    scheme), else the dense one."""
    if sparse is None:
        return dense
    indices, values = sparse.document(record.search_text, record.login, record.context_terms)
    return {lexical.DENSE: dense, lexical.SPARSE: qm.SparseVector(indices=indices, values=values)}


def request(
    dense: list[float], sparse: lexical.SparseVector | None, fetch: int, where: qm.Filter | None
) -> dict[str, Any]:
    """The arguments of ``query_points`` for a search: dense only (a collection made before hybrid
    search: ``sparse`` None; or a query without a content word), else dense and sparse prefetches
    fused by reciprocal rank in one call (the sparse one ``lexical.SPARSE_COPIES`` times: the same
    stage object, so a translation can reuse it)."""
    if sparse is None:
        return {
            "query": dense,
            "limit": fetch,
            "query_filter": where,
            "with_payload": True,
            "with_vectors": True,
        }
    if not sparse[0]:
        return {
            "query": dense,
            "using": lexical.DENSE,
            "limit": fetch,
            "query_filter": where,
            "with_payload": True,
            "with_vectors": [lexical.DENSE],
        }
    indices, values = sparse
    lexical_prefetch = qm.Prefetch(
        query=qm.SparseVector(indices=indices, values=values),
        using=lexical.SPARSE,
        limit=fetch,
        filter=where,
    )
    return {
        "prefetch": [
            qm.Prefetch(query=dense, using=lexical.DENSE, limit=fetch, filter=where),
            *[lexical_prefetch] * lexical.SPARSE_COPIES,
        ],
        "query": qm.FusionQuery(fusion=qm.Fusion.RRF),
        "limit": fetch,
        "with_payload": True,
        # the fused score is a rank; the dense vectors give each candidate its similarity
        "with_vectors": [lexical.DENSE],
    }


async def search(
    client: Client,
    name: str,
    dense: list[float],
    sparse: lexical.SparseVector | None,
    fetch: int,
    where: qm.Filter | None,
) -> list[spaces_module.Candidate]:
    """The ranking candidates of one search (``request``). A client that makes them itself
    (``query_candidates``: the embedded engine, which skips the scored points in between) is
    asked for them directly."""
    arguments = request(dense, sparse, fetch, where)
    direct = getattr(client, "query_candidates", None)
    if direct is not None:
        found: list[spaces_module.Candidate] = await direct(name, similarity_to=dense, **arguments)
        return found
    return candidates((await client.query_points(name, **arguments)).points, dense)
