"""The adapters' Qdrant models (``qdrant_models``) to Qdrant Edge's and back, for ``qdrant_edge``.

Only what the memory adapters send is translated (named or unnamed dense vectors, sparse vectors,
keyword / datetime payload indexes, match / range / is-empty / has-id conditions, nearest queries
and their prefetches fused by RRF or DBSF); anything else fails loudly with ``NotImplementedError``
instead of being half-translated.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import qdrant_edge as edge

from memory.adapters import qdrant_models as qm

_DISTANCES = {
    qm.Distance.COSINE: edge.Distance.Cosine,
    qm.Distance.DOT: edge.Distance.Dot,
    qm.Distance.EUCLID: edge.Distance.Euclid,
    qm.Distance.MANHATTAN: edge.Distance.Manhattan,
}
_SCHEMAS = {
    "keyword": edge.PayloadSchemaType.Keyword,
    "integer": edge.PayloadSchemaType.Integer,
    "float": edge.PayloadSchemaType.Float,
    "bool": edge.PayloadSchemaType.Bool,
    "datetime": edge.PayloadSchemaType.Datetime,
    "uuid": edge.PayloadSchemaType.Uuid,
}

# -- collections -------------------------------------------------------------------------------


def side_record(vectors: Any, sparse: Any, metadata: Any) -> dict[str, Any]:
    """What ``collection.json`` keeps of a ``create_collection`` call."""
    dense = vectors if isinstance(vectors, dict) else {"": vectors}
    return {
        "vectors": {
            name: {"size": p.size, "distance": qm.Distance(p.distance).value}
            for name, p in dense.items()
        },
        "sparse": {
            name: {"idf": p.modifier == qm.Modifier.IDF} for name, p in (sparse or {}).items()
        },
        "metadata": dict(metadata or {}),
        "indexes": {},
    }


#: Where a shard keeps its parts: dense vectors, the sparse index, the
#: payload indexes and the id tracker memory-mapped from disk (``Memory.Cold``), so RSS is what searches touch through
#: the page cache instead of every vector (Edge's default keeps dense vectors and payload indexes in
#: RAM: 2.7 GB at 1,000,000 memories). A shard of the previous release (no ``placement`` in its
#: side file) is moved over by ``EdgeEngine.close`` (its indexes re-created, its segments optimized).
COLD = edge.Memory.Cold
PLACEMENT = 1
#: Threads of a shard's search pool. Edge's default (one per CPU) hands each segment's part of
#: a search to the pool and joins them: for the memory stage's small filtered searches the
#: hand-off costs more than the parallel reads save. A viewer's fused query on the 1,000,000-point
#: shard (2 segments, 2 cores): 0.44-0.58 ms with the default, 0.66 with 2 threads, 0.35-0.36
#: with 1; start-up and ``inspect`` got quicker too (see docs/evaluation.md, 'The embedded store').
#: Edge keeps it in the shard's ``edge_config.json``; ``load`` passes it every time.
SEARCH_THREADS = 1
#: Segments bigger than this (KB of vectors) are optimized into immutable ones (Edge's default)
_FULL_SCAN_KB = 10_000


def many_tenants(name: str) -> bool:
    """The shared layout's viewer shard: many small tenants (one per viewer), every search
    filtered by one, so it needs no HNSW graph: the tenant index picks the viewer's points and an
    exact search over them is cheaper than a graph (``config``)."""
    return name.endswith("_shared_viewer")


def config(side: dict[str, Any], name: str = "") -> edge.EdgeConfig:
    vectors = {
        key: edge.EdgeVectorParams(
            size=v["size"], distance=_DISTANCES[qm.Distance(v["distance"])], memory=COLD
        )
        for key, v in side["vectors"].items()
    }
    sparse = {
        key: edge.EdgeSparseVectorParams(
            modifier=edge.Modifier.Idf if s["idf"] else None, memory=COLD
        )
        for key, s in side["sparse"].items()
    }
    # m=0: no graph over the whole shard; payload_m=0: none per tenant either (a viewer's
    # points are a few hundred: below the full-scan threshold, searched exactly)
    hnsw = (
        edge.HnswIndexConfig(m=0, ef_construct=100, full_scan_threshold=_FULL_SCAN_KB, payload_m=0)
        if many_tenants(name)
        else None
    )
    return edge.EdgeConfig(
        vectors=vectors[""] if list(vectors) == [""] else vectors,
        sparse_vectors=sparse or None,
        hnsw_config=hnsw,
        payload_memory=COLD,
        id_tracker_memory=COLD,  # 200,000 points: 7 MB less RSS once loaded
        max_search_threads=SEARCH_THREADS,
    )


def collection_info(side: dict[str, Any]) -> qm.CollectionInfo:
    dense = {
        name: qm.VectorParams(size=v["size"], distance=qm.Distance(v["distance"]))
        for name, v in side["vectors"].items()
    }
    sparse = {
        name: qm.SparseVectorParams(modifier=qm.Modifier.IDF if s["idf"] else None)
        for name, s in side["sparse"].items()
    }
    params = qm.CollectionParams(
        vectors=dense.get("") if list(dense) == [""] else dense, sparse_vectors=sparse
    )
    return qm.CollectionInfo(
        config=qm.CollectionConfig(params=params, metadata=dict(side["metadata"]))
    )


def index_record(schema: Any) -> dict[str, Any]:
    if isinstance(schema, qm.KeywordIndexParams):
        return {"type": "keyword", "is_tenant": bool(schema.is_tenant)}
    if isinstance(schema, qm.DatetimeIndexParams):
        return {"type": "datetime"}
    value = schema.value if isinstance(schema, qm.PayloadSchemaType) else str(schema)
    if value not in _SCHEMAS:
        raise NotImplementedError(f"Qdrant Edge adapter: payload index {schema!r}")
    return {"type": value}


#: A shard's payload indexes (its side file's ``indexes``) are built in Edge once it holds this
#: many points, and dropped below it (``edge_shards.fit_indexes``), but for ``SEARCHED``. Each
#: keyword index costs its shard 4-5 MB of resident memory at ``load`` however few points it holds
#: (measured: a 300-point shard loads +35 MB with four, +5 MB with none).
INDEX_AT = 1_000
#: The indexes searches filter by: a shared-layout shard's tenant and "not superseded" (every
#: search), the time window (``said_at``) and the kinds (a kind-filtered search, the earlier
#: streams' episodes). A shared-layout shard has them from its creation, whatever its size
#: (``always_indexed``); only ``turn_id`` (the write side's lookups) waits for ``INDEX_AT``.
#: Without an index each of a fused query's four prefetches reads every point's payload to test
#: the condition (measured on a shard of episodes): 4.3 ms a query at 300 points and
#: 9 ms at 900 with no index, 0.18 and 0.42 ms with the first two; a time window 2.7 / 8.2 ms
#: without ``said_at``'s index, 0.24 / 0.30 with it; a kind filter 2.8 ms at 300 points without
#: ``kind``'s, 0.33 with it. They cost a tiny shard ~17 MB at load (+25 against +8 with none),
#: ~8 MB at 300 points. So the lore (hundreds of entries, seldom 1,000) and a new channel's
#: episodes are searched as quickly as the viewers' memories.
SEARCHED = ("tenant", "superseded_by", "said_at", "kind")  # said_at: ``store.SAID_AT_KEY``


def always_indexed(side: dict[str, Any]) -> list[str]:
    """The recorded indexes a shard has below ``INDEX_AT`` points: ``SEARCHED`` in a shard of the
    shared layout (it records a tenant index: a few shards, each searched for many spaces), none
    in one of the per-space layout (a shard per viewer, many open at once: ~17 MB each would
    add up)."""
    recorded = side["indexes"]
    return [field for field in recorded if field in SEARCHED] if "tenant" in recorded else []


def index_operation(name: str, side: dict[str, Any]) -> edge.UpdateOperation:
    """The payload index of field ``name``, on disk (``COLD``) for the kinds the adapters use."""
    index = side["indexes"][name]
    params: Any
    if index["type"] == "keyword":
        params = edge.KeywordIndexParams(
            is_tenant=bool(index.get("is_tenant")) or None, memory=COLD
        )
    elif index["type"] == "datetime":
        params = edge.DatetimeIndexParams(memory=COLD)
    else:
        params = _SCHEMAS[index["type"]]
    return edge.UpdateOperation.create_field_index(name, params)


# -- points ------------------------------------------------------------------------------------


def ids(points: Any) -> list[edge.PointId]:
    return [str(i) for i in points]


def _vector_in(vector: Any) -> Any:
    if isinstance(vector, dict):
        return {name: _vector_in(v) for name, v in vector.items()}
    if isinstance(vector, qm.SparseVector):
        return edge.SparseVector(list(vector.indices), list(vector.values))
    return list(vector)


def _vector_out(vector: Any) -> Any:
    if isinstance(vector, dict):
        return {name: _vector_out(v) for name, v in vector.items()}
    if isinstance(vector, edge.SparseVector):
        return qm.SparseVector(indices=list(vector.indices), values=list(vector.values))
    return vector


def point(struct: qm.PointStruct) -> edge.Point:
    return edge.Point(str(struct.id), _vector_in(struct.vector), dict(struct.payload or {}))


def record(found: edge.Record) -> qm.Record:
    return qm.Record(id=str(found.id), payload=found.payload, vector=_vector_out(found.vector))


def scored(found: edge.ScoredPoint) -> qm.ScoredPoint:
    vector = found.vector
    return qm.ScoredPoint(
        id=str(found.id),
        version=found.version,
        score=found.score,
        payload=found.payload,
        vector=None if vector is None else _vector_out(vector),
    )


def delete_operation(selector: Any) -> edge.UpdateOperation:
    if isinstance(selector, qm.PointIdsList):
        return edge.UpdateOperation.delete_points(ids(selector.points))
    if isinstance(selector, qm.FilterSelector | qm.Filter):
        where = selector.filter if isinstance(selector, qm.FilterSelector) else selector
        return edge.UpdateOperation.delete_points_by_filter(filter_(where) or edge.Filter())
    return edge.UpdateOperation.delete_points(ids(selector))


# -- filters -----------------------------------------------------------------------------------


def filter_(where: qm.Filter | None) -> edge.Filter | None:
    if where is None:
        return None

    def each(conditions: Any) -> list[Any] | None:
        if conditions is None:
            return None
        listed = conditions if isinstance(conditions, list) else [conditions]
        return [_condition(c) for c in listed]

    if where.min_should is not None:
        raise NotImplementedError("Qdrant Edge adapter: min_should")
    return edge.Filter(
        must=each(where.must), should=each(where.should), must_not=each(where.must_not)
    )


def _condition(condition: Any) -> Any:
    if isinstance(condition, qm.Filter):
        return filter_(condition)
    if isinstance(condition, qm.IsEmptyCondition):
        return edge.IsEmptyCondition(condition.is_empty.key)
    if isinstance(condition, qm.IsNullCondition):
        return edge.IsNullCondition(condition.is_null.key)
    if isinstance(condition, qm.HasIdCondition):
        return edge.HasIdCondition({str(i) for i in condition.has_id})
    if isinstance(condition, qm.FieldCondition):
        return edge.FieldCondition(
            condition.key, match=_match(condition.match), range=_range(condition.range)
        )
    raise NotImplementedError(f"Qdrant Edge adapter: condition {condition!r}")


def _match(match: Any) -> Any:
    if match is None:
        return None
    if isinstance(match, qm.MatchValue):
        return edge.MatchValue(match.value)
    if isinstance(match, qm.MatchAny):
        values: Any = list(match.any)
        return edge.MatchAny(values)
    if isinstance(match, qm.MatchExcept):
        excepted: Any = list(match.except_)
        return edge.MatchExcept(excepted)
    raise NotImplementedError(f"Qdrant Edge adapter: match {match!r}")


def _range(bounds: Any) -> Any:
    if bounds is None:
        return None
    if isinstance(bounds, qm.DatetimeRange):

        def iso(moment: date | str | None) -> str | None:
            return moment.isoformat() if isinstance(moment, date) else moment

        return edge.RangeDateTime(
            gte=iso(bounds.gte), gt=iso(bounds.gt), lte=iso(bounds.lte), lt=iso(bounds.lt)
        )
    return edge.RangeFloat(gte=bounds.gte, gt=bounds.gt, lte=bounds.lte, lt=bounds.lt)


# -- queries -----------------------------------------------------------------------------------


def _query(query: Any, using: str | None) -> Any:
    if query is None:
        return None
    if isinstance(query, qm.NearestQuery):
        query = query.nearest
    if isinstance(query, qm.FusionQuery):
        return edge.Fusion.Dbsf() if query.fusion == qm.Fusion.DBSF else edge.Fusion.Rrf(k=2)
    if isinstance(query, qm.RrfQuery):
        return edge.Fusion.Rrf(k=query.rrf.k or 2, weights=query.rrf.weights)
    if isinstance(query, qm.SparseVector | list):
        return edge.Query.Nearest(_vector_in(query), using=using or None)
    raise NotImplementedError(f"Qdrant Edge adapter: query {query!r}")


def _prefetch(stage: qm.Prefetch, made: dict[int, Any]) -> edge.Prefetch:
    """``stage`` in Edge's terms; ``made``: what this request translated so far, by the id of
    the model (a request repeats a stage or a filter: each is translated once)."""
    done: edge.Prefetch | None = made.get(id(stage))
    if done is not None:
        return done
    inner = stage.prefetch
    nested = inner if isinstance(inner, list) else ([inner] if inner is not None else [])
    where = stage.filter
    if id(where) not in made:
        made[id(where)] = filter_(where)
    done = edge.Prefetch(
        limit=stage.limit or 10,
        query=_query(stage.query, stage.using),
        prefetches=[_prefetch(p, made) for p in nested] or None,
        filter=made[id(where)],
        score_threshold=stage.score_threshold,
    )
    made[id(stage)] = done
    return done


#: the points of one tenant ``touch_request`` reads at most
TOUCH_LIMIT = 256


def touch_request(side: dict[str, Any], where: qm.Filter | None) -> edge.QueryRequest:
    """A query that reads every vector and the payload of the points ``where`` selects (up to
    ``TOUCH_LIMIT``): an exact search per vector over them (any query vector will do) and the
    payload of each, of which one key comes back (``EdgeEngine.touch``)."""
    found = filter_(where)
    stages = [
        edge.Prefetch(
            limit=TOUCH_LIMIT,
            query=edge.Query.Nearest([1.0] + [0.0] * (v["size"] - 1), using=name or None),
            filter=found,
        )
        for name, v in side["vectors"].items()
    ]
    stages += [
        edge.Prefetch(
            limit=TOUCH_LIMIT,
            query=edge.Query.Nearest(edge.SparseVector([0], [1.0]), using=name),
            filter=found,
        )
        for name in side["sparse"]
    ]
    fused: Any = edge.Fusion.Rrf(k=2)  # a variant of ``Fusion`` (the stubs name the class)
    return edge.QueryRequest(
        limit=TOUCH_LIMIT,
        query=fused,
        prefetches=stages,
        with_payload=edge.PayloadSelector.Include(["kind"]),
    )


def query_request(
    *,
    limit: int,
    query: Any = None,
    prefetch: Any = None,
    query_filter: qm.Filter | None = None,
    using: str | None = None,
    with_payload: Any = True,
    with_vectors: Any = False,
    score_threshold: float | None = None,
    offset: int | None = None,
    **unused: Any,
) -> edge.QueryRequest:
    stages = prefetch if isinstance(prefetch, list) else ([prefetch] if prefetch else [])
    made: dict[int, Any] = {}
    return edge.QueryRequest(
        limit=limit,
        offset=offset,
        query=_query(query, using),
        prefetches=[_prefetch(p, made) for p in stages] or None,
        with_vector=with_vectors if isinstance(with_vectors, bool | list) else False,
        with_payload=with_payload if isinstance(with_payload, bool | list) else True,
        filter=filter_(query_filter),
        score_threshold=score_threshold,
    )
