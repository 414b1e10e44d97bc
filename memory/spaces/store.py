"""Memory spaces: the layout-independent rules, shared by the Qdrant adapter and the test fake.

A space is a storage key from ``identity`` (``viewer:<user id>``, ``stream:<stream id>``, ``lore``).
``adapters.qdrant.open_spaces`` opens the Qdrant implementation (``QdrantSpaces``) in one of two
physical layouts (``settings.qdrant.layout``): a collection per space, or one collection per kind
partitioned by a ``tenant`` payload key. This module holds what both (and the in-memory fake in
``tests/fakes/spaces.py``) must agree on: key validation, collection names, the payload shape, the
embedder record of a collection, and ranking.

Ranking (``rank``)
------------------
Dense cosine similarity over an over-fetched candidate set, then:

* **corrections** — a correction (``MemoryKind.CORRECTION``, ``corrects=<id>``) hides the record it
  corrects: when the corrected record is a candidate and its correction still exists, the record is
  dropped and the correction takes its place with ``max(both scores) + CORRECTION_BOOST``, so a
  query that matches the old wording returns the new one. Every correction also gets the boost, so
  it ranks above what it corrects. The corrected record stays stored (``get``/``list``/``find`` return
  it, with ``corrected_by`` set on the stored point); deleting the correction makes it visible again.
* **lexical signal** — ``lexical_weight`` × the share of the query's content terms found in the
  document (stemmed, stopwords removed). Measured by ``tests/test_embedders.py::
  test_offline_recall_on_chat_statements`` (40 questions, 20 memories among 300 distractor chat
  lines, offline embedder): a weight of 0.1 changed one query of 40 at recall@1 and none at
  recall@3, since that embedder is already lexical and its misses share no word with the memory.
  So ``LEXICAL_WEIGHT`` is 0 (off); the knob stays for semantic embedders, unmeasured here.
* **recency** — among a viewer's own memories that answer the query comparably (the same query
  terms within ``recency.RECENCY_BAND``, or, for a question about a state that changes, the same
  subject of the query within ``recency.SUBJECT_BAND``), the newer ranks first; an old memory
  that is the only answer keeps its place (``spaces.recency``). A re-rank in Python over the
  fetched candidates, the same on a Qdrant server and embedded (no formula query); the reordered
  hits take the scores best first.
* ``kinds`` filters on the record kind *after* corrections are applied: pass
  ``{PERSONAL, FACT, CORRECTION}`` to get a viewer's memories including corrected ones.
"""

from __future__ import annotations

import hashlib
import math
import operator
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memory import errors, identity
from memory.spaces import embedders, lexical, recency, records

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from memory import ports

#: space kinds, in storage-key order
KINDS = ("viewer", "stream", "lore")
#: added to a correction's score. Scores are reciprocal-rank fusions (``spaces.lexical``: 1/(rank + 2)
#: per ranking), where one place at the top is worth 1/2 − 1/3 ≈ 0.17: a correction outranks a
#: memory one place above it in a ranking (dense-only collections: cosine, where it weighs more)
CORRECTION_BOOST = 0.2
#: weight of the lexical overlap (0..1) added to the dense score (measured: no gain, so off)
LEXICAL_WEIGHT = 0.0
#: payload keys that are not ``MemoryRecord`` fields
TENANT_KEY = "tenant"
CORRECTED_BY_KEY = "corrected_by"
#: a point's ``recency.indexed_terms`` in its collection's scheme (``recency.stored_terms``)
TERMS_KEY = "indexed_terms"
#: version of the payload / metadata shape
SCHEMA = 1
#: suffix of the collections ``memory.admin reembed`` builds before swapping them in
STAGING_SUFFIX = "__reembed"
#: the command that brings every collection to the configured embedder and the current schema
REEMBED_COMMAND = embedders.REEMBED_COMMAND

_CLEAN = re.compile(r"[a-z0-9-]{1,64}")
_DATETIME_FIELDS = ("first_ts", "last_ts", "created_at", "superseded_at")
#: payload key of ``MemoryRecord.said_at`` (ISO 8601, UTC): the time-window filter's field
SAID_AT_KEY = "said_at"


def space_kind(space: str) -> str:
    """``viewer``, ``stream`` or ``lore``; ``errors.InvalidMemory`` for anything else."""
    if space == identity.LORE_KEY:
        return "lore"
    kind, sep, value = space.partition(":")
    if sep and value and kind in ("viewer", "stream"):
        return kind
    raise errors.InvalidMemory(
        f"invalid memory space key {space!r}: expected viewer:<user id>, stream:<id> or lore"
    )


def is_memory_id(value: str) -> bool:
    """Whether ``value`` is a canonical UUID string (what Qdrant point ids come back as)."""
    try:
        return str(uuid.UUID(value)) == value
    except (ValueError, TypeError, AttributeError):
        return False


def validate_record(record: records.MemoryRecord) -> None:
    space_kind(record.space)
    if not is_memory_id(record.id):
        raise errors.InvalidMemory(
            f"memory id {record.id!r} is not a canonical UUID string (lowercase, hyphenated)"
        )


def safe_part(value: str) -> str:
    """A collection-name-safe, injective form of a key part: clean values as they are, others
    sanitized with a hash suffix (clean values never contain ``_``, hashed ones always do)."""
    if _CLEAN.fullmatch(value):
        return value
    sanitized = re.sub(r"[^a-z0-9-]+", "-", value.lower())[:40].strip("-")
    digest = hashlib.blake2b(value.encode(), digest_size=6).hexdigest()
    return f"{sanitized}_{digest}"


def space_collection(prefix: str, space: str) -> str:
    """Collection of a space in the per-space layout: ``lm_viewer_123``, ``lm_stream_s1``, ``lm_lore``."""
    kind = space_kind(space)
    if kind == "lore":
        return f"{prefix}_lore"
    return f"{prefix}_{kind}_{safe_part(space.partition(':')[2])}"


def shared_collection(prefix: str, space: str) -> str:
    """Collection of a space in the shared layout: ``lm_shared_viewer`` and so on."""
    return f"{prefix}_shared_{space_kind(space)}"


def manifest_collection(prefix: str) -> str:
    return f"{prefix}_manifest"


def staging_collection(name: str) -> str:
    """Where ``memory.admin reembed`` rebuilds collection ``name`` before swapping it in.

    ``safe_part`` never ends a name with ``__reembed`` (clean parts have no ``_``, hashed ones end
    in hex digits), so a staging name never names a space.
    """
    return f"{name}{STAGING_SUFFIX}"


def is_staging(name: str) -> bool:
    return name.endswith(STAGING_SUFFIX)


# -- payload -----------------------------------------------------------------------------------


def to_payload(record: records.MemoryRecord) -> dict[str, Any]:
    """Every ``MemoryRecord`` field, JSON-ready (datetimes ISO, tuples as lists)."""
    return {
        "id": record.id,
        "space": record.space,
        "kind": record.kind.value,
        "text": record.text,
        "user_id": record.user_id,
        "login": record.login,
        "stream": record.stream,
        "turn_id": record.turn_id,
        "origin_message_ids": list(record.origin_message_ids),
        "participants": list(record.participants),
        "first_ts": _iso(record.first_ts),
        "last_ts": _iso(record.last_ts),
        "created_at": _iso(record.created_at),
        "corrects": record.corrects,
        "extra": dict(record.extra),
        "context_terms": list(record.context_terms),
        "context_message_id": record.context_message_id,
        "context_question": record.context_question,
        "context_thread": record.context_thread,
        "context_thread_id": record.context_thread_id,
        "superseded_by": record.superseded_by,
        "superseded_at": _iso(record.superseded_at),
        SAID_AT_KEY: _iso(record.said_at),
        "schema": SCHEMA,
    }


def stored_payload(payload: Mapping[str, Any]) -> dict[str, Any]:
    """``payload`` as a point keeps it: without the keys whose value is null or empty
    (``from_payload`` reads a missing key as its field's default, "not superseded" filters on
    an empty mark either way). A memory's payload has half as many keys: Edge parses and
    allocates every key of every candidate it reads, ~10 µs a point (a viewer's
    fused query 0.36 → 0.25 ms on first touch, 0.24 → 0.18 after; see docs/evaluation.md,
    'The embedded store')."""
    return {key: value for key, value in payload.items() if value not in _NOTHING}


#: what ``stored_payload`` leaves out (compared by ``==``: a zero or False is kept)
_NOTHING: tuple[Any, ...] = (None, [], {}, ())
_KIND_OF = {kind.value: kind for kind in records.MemoryKind}


def from_payload(payload: Mapping[str, Any]) -> records.MemoryRecord:
    get = payload.get
    kind = payload["kind"]
    values: dict[str, Any] = {
        "id": get("id"), "space": get("space"), "text": get("text"), "user_id": get("user_id"),
        "login": get("login"), "stream": get("stream"), "turn_id": get("turn_id"),
        "corrects": get("corrects"), "context_message_id": get("context_message_id"),
        "superseded_by": get("superseded_by"), "context_question": get("context_question"),
        "context_terms": tuple(get("context_terms") or ()),
        "context_thread": get("context_thread"), "context_thread_id": get("context_thread_id"),
        "kind": _KIND_OF.get(kind) or records.MemoryKind(kind),
        "origin_message_ids": tuple(get("origin_message_ids") or ()),
        "participants": tuple(get("participants") or ()),
        "extra": dict(get("extra") or {}),
    }  # fmt: skip
    for name in _DATETIME_FIELDS:
        raw = get(name)
        if raw is not None:
            values[name] = datetime.fromisoformat(raw)
    return records.MemoryRecord(**values)


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


# -- embedder record ---------------------------------------------------------------------------


def embedder_metadata(embedder: ports.Embedder, **more: Any) -> dict[str, Any]:
    """What a collection records about the vectors it holds."""
    return {"schema": SCHEMA, "embedder": embedder.name, "dim": embedder.dim, **more}


def check_embedder(
    recorded: Mapping[str, Any] | None, embedder: ports.Embedder, where: str
) -> None:
    """Raise ``errors.EmbedderMismatch`` unless ``recorded`` names ``embedder`` (name and dim)."""
    name = (recorded or {}).get("embedder")
    dim = (recorded or {}).get("dim")
    if name == embedder.name and dim == embedder.dim:
        return
    made_by = f"{name} (dim {dim})" if name else "an unknown embedder (no livememory metadata)"
    raise errors.EmbedderMismatch(
        f"Qdrant collection {where} holds vectors made by {made_by}, but the configured embedder "
        f"is {embedder.name} (dim {embedder.dim}); vectors of different embedders never mix. "
        f"Re-embed the stored memories with it (stop the bot and the worker first): "
        f"`{REEMBED_COMMAND}`. Or set LIVEMEMORY_MEMORY__EMBEDDER (and "
        f"LIVEMEMORY_OLLAMA__EMBED_MODEL) back to the embedder that made them.",
        recorded=name,
        configured=embedder.name,
    )


# -- ranking -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """A dense search hit before ranking."""

    record: records.MemoryRecord
    score: float
    #: id of the correction recorded on the stored point
    corrected_by: str | None = None
    #: what the stored point keeps of its indexed terms (``recency.read_terms`` reads it)
    terms: Any = None
    #: the cosine of the query's and the point's dense vectors (``MemoryHit.similarity``)
    similarity: float | None = None


def candidate(
    payload: Mapping[str, Any], score: float, similarity: float | None = None
) -> Candidate:
    """A stored point's payload and search score as a ranking candidate."""
    return Candidate(
        record=from_payload(payload),
        score=score,
        corrected_by=payload.get(CORRECTED_BY_KEY),
        terms=payload.get(TERMS_KEY),
        similarity=similarity,
    )


def similarity(query: Sequence[float], vector: Any) -> float | None:
    """The cosine of two unit vectors (``vector``: a point's, maybe named); None when absent."""
    if isinstance(vector, Mapping):
        vector = vector.get(lexical.DENSE)
    if not vector or len(vector) != len(query):
        return None
    return math.fsum(map(operator.mul, query, vector))


def fetch_size(limit: int) -> int:
    """How many candidates a search ranks for ``limit`` results (room for corrections, kinds and
    the recency re-rank): one and a half times the limit, at least 15 (15 for the default limit
    of 10, 30 for a time-scoped recall's 20). Edge reads every candidate's payload (~13 µs) and
    each becomes Python objects, so a search costs about in proportion. Four times the limit (40)
    gave LoCoMo R@5 0.616, twice (20) 0.618; one and a half times the same
    0.618 (R@10 0.677 -> 0.680), the same synthetic R@5 and LongMemEval any@5 / all@5 /
    freshness, and a cold memory stage ~9 % quicker at 10,000 viewers (see
    docs/evaluation.md, 'The embedded store')."""
    return max(limit + limit // 2, 15)


def lexical_overlap(query_terms: Collection[str], text: str) -> float:
    """Share (0..1) of the query's distinct content terms that appear in ``text``."""
    if not query_terms:
        return 0.0
    present = set(embedders.terms(text))
    return sum(1 for term in query_terms if term in present) / len(query_terms)


def rank(
    query: str,
    candidates: Sequence[Candidate],
    corrections: Mapping[str, records.MemoryRecord],
    *,
    limit: int,
    kinds: Collection[records.MemoryKind] | None = None,
    lexical_weight: float = LEXICAL_WEIGHT,
    sparse: ports.SparseEncoder = lexical.ENCODER,
    query_terms: Collection[int] | None = None,
) -> list[records.MemoryHit]:
    """Apply corrections, the lexical signal and ``kinds``; best ``limit`` hits.

    ``corrections`` maps a correction id to the (still existing) correction record, for the
    ``corrected_by`` marks of the candidates; ``sparse``: the scheme the candidates were found by
    (``recent_first`` compares their terms); ``query_terms``: the query's term ids in it, when
    the search made them already.
    """
    best: dict[str, tuple[records.MemoryRecord, float, float | None]] = {}
    indexed: dict[str, frozenset[int]] = {}
    for candidate in candidates:
        record, score = candidate.record, candidate.score
        if candidate.terms is not None:
            known = recency.read_terms(candidate.terms, sparse)
            if known is not None:
                indexed[record.id] = known
        replacement = corrections.get(candidate.corrected_by or "")
        if replacement is not None:
            record = replacement
        current = best.get(record.id)
        if current is None or score > current[1]:
            best[record.id] = (record, score, candidate.similarity)
    terms = set(embedders.terms(query)) if lexical_weight else set()
    hits: list[records.MemoryHit] = []
    for record, dense, cosine in best.values():
        if kinds is not None and record.kind not in kinds:
            continue
        overlap = lexical_overlap(terms, record.text) if terms else 0.0  # off: nothing tokenized
        score = dense + lexical_weight * overlap
        if record.kind is records.MemoryKind.CORRECTION:
            score += CORRECTION_BOOST
        hits.append(records.MemoryHit(record=record, score=score, similarity=cosine))
    return recency.recent_first(
        query, hits, sparse=sparse, indexed=indexed, query_terms=query_terms
    )[:limit]
