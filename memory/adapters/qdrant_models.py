"""The Qdrant models the memory adapters speak: plain dataclasses named and shaped as qdrant-client's.

The adapters (``qdrant``, ``qdrant_collections``, ``qdrant_hybrid``, ``qdrant_multi``,
``qdrant_reembed``) build filters, points and queries from these, and read results as these, on
both stores: ``qdrant_edge`` translates them to Qdrant Edge's own (``edge_models``), and
``qdrant_server`` to qdrant-client's pydantic models by name (``qm.<Name>(**fields)``) and back.
So the embedded default never imports qdrant-client: its import (REST models, httpx, grpc,
protobuf, numpy) was ~0.65-0.9 s of every start-up and ~60 MB of RSS (``python -X
importtime``), for a vocabulary of ~40 names. Each class has qdrant-client's field
names and defaults for the fields the adapters use (a name it lacks fails at construction);
``MatchExcept.except_`` is sent as ``except``, as qdrant-client's alias.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Distance(enum.StrEnum):
    COSINE = "Cosine"
    EUCLID = "Euclid"
    DOT = "Dot"
    MANHATTAN = "Manhattan"


class Modifier(enum.StrEnum):
    NONE = "none"
    IDF = "idf"


class KeywordIndexType(enum.StrEnum):
    KEYWORD = "keyword"


class DatetimeIndexType(enum.StrEnum):
    DATETIME = "datetime"


class PayloadSchemaType(enum.StrEnum):
    KEYWORD = "keyword"
    INTEGER = "integer"
    FLOAT = "float"
    GEO = "geo"
    TEXT = "text"
    BOOL = "bool"
    DATETIME = "datetime"
    UUID = "uuid"


class Fusion(enum.StrEnum):
    RRF = "rrf"
    DBSF = "dbsf"


class UpdateStatus(enum.StrEnum):
    ACKNOWLEDGED = "acknowledged"
    COMPLETED = "completed"
    WAIT_TIMEOUT = "wait_timeout"


# -- filters -----------------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class MatchValue:
    value: Any


@dataclass(slots=True, kw_only=True)
class MatchAny:
    any: list[Any]


@dataclass(slots=True, kw_only=True)
class MatchExcept:
    except_: list[Any]


@dataclass(slots=True, kw_only=True)
class Range:
    lt: float | None = None
    gt: float | None = None
    gte: float | None = None
    lte: float | None = None


@dataclass(slots=True, kw_only=True)
class DatetimeRange:
    lt: Any = None
    gt: Any = None
    gte: Any = None
    lte: Any = None


@dataclass(slots=True, kw_only=True)
class PayloadField:
    key: str


@dataclass(slots=True, kw_only=True)
class FieldCondition:
    key: str
    match: MatchValue | MatchAny | MatchExcept | None = None
    range: Range | DatetimeRange | None = None


@dataclass(slots=True, kw_only=True)
class IsEmptyCondition:
    is_empty: PayloadField


@dataclass(slots=True, kw_only=True)
class IsNullCondition:
    is_null: PayloadField


@dataclass(slots=True, kw_only=True)
class HasIdCondition:
    has_id: list[Any]


@dataclass(slots=True, kw_only=True)
class Filter:
    should: Any = None
    min_should: Any = None
    must: Any = None
    must_not: Any = None


Condition = FieldCondition | IsEmptyCondition | IsNullCondition | HasIdCondition | Filter
ExtendedPointId = int | str

# -- points ------------------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class SparseVector:
    indices: list[int]
    values: list[float]


@dataclass(slots=True, kw_only=True)
class PointStruct:
    id: ExtendedPointId
    vector: Any
    payload: dict[str, Any] | None = None


@dataclass(slots=True, kw_only=True)
class PointIdsList:
    points: list[ExtendedPointId]


@dataclass(slots=True, kw_only=True)
class FilterSelector:
    filter: Filter


# -- queries -----------------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class NearestQuery:
    nearest: Any


@dataclass(slots=True, kw_only=True)
class FusionQuery:
    fusion: Fusion


@dataclass(slots=True, kw_only=True)
class Rrf:
    k: int | None = None
    weights: list[float] | None = None


@dataclass(slots=True, kw_only=True)
class RrfQuery:
    rrf: Rrf


@dataclass(slots=True, kw_only=True)
class Prefetch:
    prefetch: Any = None
    query: Any = None
    using: str | None = None
    filter: Filter | None = None
    score_threshold: float | None = None
    limit: int | None = None


# -- collections -------------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class VectorParams:
    size: int
    distance: Distance


@dataclass(slots=True, kw_only=True)
class SparseVectorParams:
    modifier: Modifier | None = None


@dataclass(slots=True, kw_only=True)
class KeywordIndexParams:
    type: KeywordIndexType = KeywordIndexType.KEYWORD
    is_tenant: bool | None = None


@dataclass(slots=True, kw_only=True)
class DatetimeIndexParams:
    type: DatetimeIndexType = DatetimeIndexType.DATETIME


# -- results -----------------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class UpdateResult:
    operation_id: int | None = None
    status: UpdateStatus = UpdateStatus.COMPLETED


@dataclass(slots=True, kw_only=True)
class ScoredPoint:
    id: ExtendedPointId
    version: int
    score: float
    payload: dict[str, Any] | None = None
    vector: Any = None
    shard_key: Any = None
    order_value: Any = None


@dataclass(slots=True, kw_only=True)
class Record:
    id: ExtendedPointId
    payload: dict[str, Any] | None = None
    vector: Any = None
    shard_key: Any = None
    order_value: Any = None


@dataclass(slots=True, kw_only=True)
class QueryResponse:
    points: list[ScoredPoint]


@dataclass(slots=True, kw_only=True)
class CountResult:
    count: int


@dataclass(slots=True, kw_only=True)
class FacetValueHit:
    value: Any
    count: int


@dataclass(slots=True, kw_only=True)
class FacetResponse:
    hits: list[FacetValueHit]


@dataclass(slots=True, kw_only=True)
class CollectionDescription:
    name: str


@dataclass(slots=True, kw_only=True)
class CollectionsResponse:
    collections: list[CollectionDescription]


@dataclass(slots=True, kw_only=True)
class CollectionParams:
    vectors: Any
    sparse_vectors: dict[str, SparseVectorParams] | None = None


@dataclass(slots=True, kw_only=True)
class CollectionConfig:
    params: CollectionParams
    metadata: dict[str, Any] | None = None


@dataclass(slots=True, kw_only=True)
class CollectionInfo:
    """The part of qdrant-client's ``CollectionInfo`` the adapters read."""

    config: CollectionConfig
    points_count: int | None = None
    payload_schema: dict[str, Any] = field(default_factory=dict)


# -- errors ------------------------------------------------------------------------------------


class UnexpectedResponse(Exception):
    """The server answered with an error status (qdrant-client's ``UnexpectedResponse``)."""

    def __init__(self, status_code: int | None, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code


class Unreachable(ConnectionError):
    """The server could not be reached or its answer read (qdrant-client's
    ``ResponseHandlingException``, an ``httpx`` transport error)."""
