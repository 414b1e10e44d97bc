"""The sparse lexical half of hybrid search, shared by the Qdrant adapter and the test fake.

Every memory space holds two vectors per memory: the embedder's dense vector and a sparse lexical
vector (named ``lexical``) of BM25 term weights. Two sparse schemes make it (``ports.SparseEncoder``):
this module's (``ENCODER``, ``VERSION``), the scheme of every store made before the choice and the
test fake's default, and Qdrant's own BM25 (``memory.adapters.qdrant_bm25``), a new store's default;
a store keeps the one it records. This module's terms are ``embedders.terms``: NFKC-folded, accents
stripped, English and Italian stopwords dropped, a light suffix stemmer ("moved"/"moving" → "mov",
"gatti"/"gatto" → "gatt"); the speaker's login is indexed with the text, so a memory is also found
by who said it. A term's weight in a document is BM25's saturated term frequency
``tf·(k1+1) / (tf + k1·(1 − b + b·len/avg))``; the inverse document frequency is left to the store
(Qdrant's ``Modifier.IDF`` on the sparse vector: the engine keeps the statistics per collection and
applies them at query time, ``log(1 + (N − df + ½)/(df + ½))``). A query is its distinct terms,
weight 1 each.

A memory that answers a question is also indexed with the question's terms, at ``CONTEXT_WEIGHT``
of its own (document expansion): "Sweden!" after "where did you move from?" is found by "where did
Caroline move from". The terms are never the memory's words: the text shown and attributed is the
viewer's own (its dense vector is made with the question too: ``MemoryRecord.dense_text``).
LoCoMo's development half (conversations 1–5, offline embedder): R@5 0.469 → 0.51.

The two rankings are fused by reciprocal rank fusion in one ``query_points`` call (prefetches and
``Fusion.RRF``): a memory ranked ``r`` (from 0) in a list scores ``1 / (r + k)`` there, summed over the
lists (Qdrant's formula, ``k`` = 2), so ranks matter, not the two scales; the sparse prefetch enters
``SPARSE_COPIES`` times. ``fuse`` is that formula, for the fake.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from typing import TYPE_CHECKING

from memory.spaces import embedders

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

#: recorded in a collection's metadata: the sparse scheme its points were written with
VERSION = "lexical-v1"
DENSE = "dense"
SPARSE = "lexical"
K1, B = 1.2, 0.75
#: the average document length in terms that BM25's length normalisation assumes (chat lines)
AVERAGE_TERMS = 12.0
#: Qdrant's reciprocal-rank-fusion constant
RRF_K = 2
#: how many times the sparse ranking enters the fusion (the dense one: once). Copies weigh lexical
#: evidence with plain RRF, which every Qdrant with hybrid queries has (a weighted ``RrfQuery``
#: needs a newer server than docker-compose's). LoCoMo conversation 0, lexical scheme, offline
#: embedder: R@5 0.457 with one copy, 0.497 with two (weighted RRF at 2: 0.487, at 3: 0.497; k = 10:
#: 0.466). With Qdrant's Bm25 as the scheme (same code otherwise), three: LoCoMo's
#: development half R@1 0.394 → 0.404, R@5 0.631 → 0.633, synthetic unchanged (0.970); on
#: LongMemEval's 55 development questions that missed turn recall_all@5 or any@5, 4 more all@5
#: and none lost (see docs/evaluation.md, 'LoCoMo')
SPARSE_COPIES = 3

#: a context term (the question a memory answers) weighs this much of one of the memory's own terms
CONTEXT_WEIGHT = 0.5
#: at most this many context terms are kept with a memory
MAX_CONTEXT_TERMS = 32

SparseVector = tuple[list[int], list[float]]


def term_id(term: str) -> int:
    """A stable 31-bit id for a term (sparse vector index)."""
    return int.from_bytes(hashlib.blake2b(term.encode(), digest_size=4).digest(), "little") >> 1


def _vector(weights: Mapping[int, float]) -> SparseVector:
    indices = sorted(weights)
    return indices, [weights[i] for i in indices]


def document(text: str, speaker: str | None = None, context: Sequence[int] = ()) -> SparseVector:
    """The sparse vector of a stored text (and its speaker's login, and the ``context_terms`` of the
    question it answers, at ``CONTEXT_WEIGHT``)."""
    terms = embedders.terms(text)
    if speaker:
        terms += embedders.terms(speaker.replace("_", " "))
    norm = K1 * (1 - B + B * len(terms) / AVERAGE_TERMS)

    def saturated(tf: int) -> float:
        return tf * (K1 + 1) / (tf + norm)

    weights = {i: saturated(tf) for i, tf in Counter(term_id(t) for t in terms).items()}
    for i, tf in Counter(context).items():
        weights[i] = weights.get(i, 0.0) + CONTEXT_WEIGHT * saturated(tf)
    return _vector(weights)


def context_terms(question: str) -> tuple[int, ...]:
    """The term ids a memory answering ``question`` is also indexed with (empty: not a question)."""
    if "?" not in question:
        return ()
    return tuple(term_id(t) for t in embedders.terms(question))[:MAX_CONTEXT_TERMS]


def query(text: str) -> SparseVector:
    """The sparse vector of a query: its distinct terms, weight 1 (empty: no content word)."""
    return _vector(dict.fromkeys((term_id(t) for t in embedders.terms(text)), 1.0))


def idf(document_frequency: int, documents: int) -> float:
    """Qdrant's IDF modifier."""
    return math.log((documents - document_frequency + 0.5) / (document_frequency + 0.5) + 1)


def fuse(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> dict[str, float]:
    """Reciprocal rank fusion of id rankings (best first): id → fused score (Qdrant's formula)."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking):
            scores[item] = scores.get(item, 0.0) + 1.0 / (rank + k)
    return scores


class LexicalEncoder:
    """``ports.SparseEncoder``: this module's scheme (``VERSION``)."""

    version = VERSION

    def document(
        self, text: str, speaker: str | None = None, context: Sequence[int] = ()
    ) -> SparseVector:
        return document(text, speaker, context)

    def query(self, text: str) -> SparseVector:
        return query(text)

    def context_terms(self, question: str) -> tuple[int, ...]:
        return context_terms(question)


ENCODER = LexicalEncoder()
