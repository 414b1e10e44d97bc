"""Qdrant's own BM25 as a sparse scheme (``memory.sparse_scheme = "qdrant-bm25"``), and the
schemes by name (``encoder``) and by the version a collection records (``for_version``).

``qdrant_edge.Bm25`` is a plain Python object (no server, no model download, usable for a server's
collections too): Qdrant's tokenizer (words, lowercased, accents folded), its English and Italian
stopword lists plus the chat fillers of ``embedders.STOPWORDS``, and a Snowball stemmer, hashed to
term ids by Qdrant. A model has one stemmer, so a text is stemmed in Italian when it holds more
Italian stopwords and frequent words ("io", "voglio", "ieri", …) than English ones, else in English
("lavoro"/"lavorare"/"lavoravo" → one term in Italian; "studies"/"studied" → one in English). The
weights are BM25's with Qdrant's defaults (``k1`` 1.2, ``b`` 0.75, an average length of 256 terms,
so a line of a dozen terms is hardly normalised for length: LoCoMo's development half, R@5 0.623
against 0.604 with ``lexical``'s 12; the IDF is the collection's modifier), a query is its distinct
terms at weight 1, as in ``lexical``. A question's terms are indexed with the memory that answers it at
``lexical.CONTEXT_WEIGHT`` of one occurrence in that memory (read off its lowest weight). The term
ids of two schemes never meet in a collection: each records its scheme, and a store keeps the one
its manifest records (``qdrant_collections``).
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import TYPE_CHECKING

import qdrant_edge

from memory.spaces import embedders, lexical

if TYPE_CHECKING:
    from collections.abc import Sequence

    from memory import ports

VERSION = "qdrant-bm25-v1"
#: ``memory.sparse_scheme`` values
LEXICAL, BM25 = "lexical", "qdrant-bm25"
#: BM25's average document length (Qdrant's default; measured above ``lexical.AVERAGE_TERMS``)
AVERAGE_LENGTH = 256.0

#: frequent Italian words that tell a chat line's language, besides the stopwords
_ITALIAN_CUES = (
    "io tu sto sta stai faccio fai fa fatto voglio vuoi vorrei posso puoi può devo deve tutto "
    "tutti oggi ieri domani grazie bene allora perché però adesso sempre mai niente qualcosa"
)
_ITALIAN = frozenset(
    embedders.fold(w) for w in f"{embedders.ITALIAN_STOPWORDS} {_ITALIAN_CUES}".split()
)
_ENGLISH = frozenset(embedders.fold(w) for w in embedders.ENGLISH_STOPWORDS.split())


def _model(language: qdrant_edge.SnowballLanguage) -> qdrant_edge.Bm25:
    stopwords = qdrant_edge.StopwordsSet(
        languages={qdrant_edge.Language.English, qdrant_edge.Language.Italian},
        custom=set(embedders.STOPWORDS),
    )
    config = qdrant_edge.Bm25Config(
        k=lexical.K1,
        b=lexical.B,
        avg_len=AVERAGE_LENGTH,
        ascii_folding=True,
        stopwords=stopwords,
        stemmer=qdrant_edge.SnowballParams(language),
        min_token_len=2,
    )
    return qdrant_edge.Bm25(config)


def italian(text: str) -> bool:
    """Whether ``text`` holds more Italian stopwords (and cue words) than English ones."""
    words = embedders.words(text)
    return sum(map(_ITALIAN.__contains__, words)) > sum(map(_ENGLISH.__contains__, words))


class Bm25Encoder:
    """``ports.SparseEncoder`` on ``qdrant_edge.Bm25`` (see the module docstring)."""

    version = VERSION

    def __init__(self) -> None:
        self._english = _model(qdrant_edge.SnowballLanguage.English)
        self._italian = _model(qdrant_edge.SnowballLanguage.Italian)

    def _for(self, text: str) -> qdrant_edge.Bm25:
        return self._italian if italian(text) else self._english

    def document(
        self, text: str, speaker: str | None = None, context: Sequence[int] = ()
    ) -> lexical.SparseVector:
        model = self._for(text)
        vector = model.embed_document(f"{text} {speaker.replace('_', ' ')}" if speaker else text)
        weights = dict(zip(vector.indices, vector.values, strict=True))
        if context:
            # BM25's length norm in this memory, ``k1·norm``, read off its lowest weight (a term
            # said once: (k1 + 1) / (1 + k1·norm)); an empty memory has the norm of length 0
            k1 = lexical.K1
            once = min(weights.values(), default=(k1 + 1) / (1 + k1 * (1 - lexical.B)))
            k_norm = (k1 + 1) / once - 1
            for i, tf in Counter(context).items():
                saturated = tf * (k1 + 1) / (tf + k_norm)
                weights[i] = weights.get(i, 0.0) + lexical.CONTEXT_WEIGHT * saturated
        indices = sorted(weights)
        return indices, [weights[i] for i in indices]

    def query(self, text: str) -> lexical.SparseVector:
        indices = sorted(self._for(text).embed_query(text).indices)
        return indices, [1.0] * len(indices)

    def context_terms(self, question: str) -> tuple[int, ...]:
        if "?" not in question:
            return ()
        return tuple(self._for(question).embed_query(question).indices)[: lexical.MAX_CONTEXT_TERMS]


@functools.cache
def _bm25() -> Bm25Encoder:
    return Bm25Encoder()


def encoder(scheme: str) -> ports.SparseEncoder:
    """The encoder of a ``memory.sparse_scheme`` value."""
    if scheme == BM25:
        return _bm25()
    if scheme == LEXICAL:
        return lexical.ENCODER
    raise ValueError(f"unknown sparse scheme {scheme!r}")


def for_version(version: object) -> ports.SparseEncoder | None:
    """The encoder of a collection's recorded scheme (None: no sparse vector, or unknown)."""
    if version == lexical.VERSION:
        return lexical.ENCODER
    if version == VERSION:
        return _bm25()
    return None
