"""Peer systems scored in the same run, on the same probes: what a user would use instead.

Each peer ranks the *messages* of the probe's stream said before the probe (plus the case's lore
entries, which the full system is given too) for the probe's text with the bot's name taken out,
and is scored with the same ``metrics.recall_at_k`` as the full system:

* ``bm25`` — BM25 (``bm25s``, English stopwords) over every message;
* ``bm25_speaker`` — the same, each message prefixed with its speaker's name ("Caroline: …"), so a
  question that names a speaker finds what that speaker said;
* ``dense_speaker`` — the evaluated embedder (``--embedder``) over every speaker-prefixed message,
  cosine similarity.

They know nothing about attribution (they rank everyone's messages), so misattribution is not
scored for them. ``bm25s`` is the ``eval`` extra (and in ``dev``); without it the BM25 peers are
skipped with a note.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from memory import models
from memory.eval import harness, metrics

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from memory import ports

BM25 = "bm25"
BM25_SPEAKER = "bm25_speaker"
DENSE_SPEAKER = "dense_speaker"
NAMES = (BM25, BM25_SPEAKER, DENSE_SPEAKER)
DEPTH = max(harness.KS)
#: the items a peer would put into a prompt: its first five
PROMPT_ITEMS = 5


class PeersUnavailable(RuntimeError):
    """A peer's library is not installed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Doc:
    id: str
    text: str
    speaker: str

    @property
    def prefixed(self) -> str:
        return f"{self.speaker}: {self.text}" if self.speaker else self.text


def _bot_pattern(bot_name: str) -> re.Pattern[str]:
    return re.compile(rf"@?\b{re.escape(bot_name)}\b[,:]?", re.IGNORECASE)


def corpora(case: harness.Case) -> dict[str, tuple[list[Doc], dict[str, int]]]:
    """Per stream (per corpus: ``harness.Case.corpus_of``): its chat messages in order (lore
    entries first), and probe id → how many of them were said before the probe."""
    probe_ids = {p.message_id for p in case.probes}
    lore = [Doc(id=i, text=t, speaker="") for i, t, _ in case.lore]
    out: dict[str, tuple[list[Doc], dict[str, int]]] = {}
    for event in case.events:
        docs, before = out.setdefault(case.corpus_of(event.stream), (list(lore), {}))
        if event.id in probe_ids:
            before[event.id] = len(docs)
            continue
        if event.kind is not models.EventKind.MESSAGE or event.text.startswith("!"):
            continue
        docs.append(Doc(id=event.id, text=event.text, speaker=event.name or event.login))
    return out


class _Bm25Index:
    """``bm25s`` over a prefix of a stream's documents, rebuilt when the prefix grows."""

    def __init__(self, texts: Sequence[str]) -> None:
        try:
            import bm25s

            logging.getLogger("bm25s").setLevel(logging.WARNING)
        except ImportError as exc:
            raise PeersUnavailable(
                "bm25s is not installed: pip install 'livememory[eval]'"
            ) from exc
        self._bm25s = bm25s
        self.texts = texts
        self._size = -1
        self._model: Any = None

    def prepare(self, size: int) -> None:
        """Index the first ``size`` documents (kept while the size stays)."""
        if size and size != self._size:
            tokens = self._bm25s.tokenize(
                list(self.texts[:size]), stopwords="en", show_progress=False
            )
            self._model = self._bm25s.BM25()
            self._model.index(tokens, show_progress=False)
            self._size = size

    def rank(self, query: str, size: int) -> list[int]:
        if size == 0:
            return []
        self.prepare(size)
        query_tokens = self._bm25s.tokenize(
            [query], stopwords="en", return_ids=False, show_progress=False
        )
        if not query_tokens[0]:
            return []
        docs, scores = self._model.retrieve(
            query_tokens, k=min(DEPTH, size), show_progress=False, n_threads=1
        )
        return [int(d) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]


class _DenseIndex:
    def __init__(self, vectors: np.ndarray[Any, Any]) -> None:
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        self.vectors = vectors / np.where(norms == 0, 1, norms)

    def rank(self, query: np.ndarray[Any, Any], size: int) -> list[int]:
        if size == 0:
            return []
        scores = self.vectors[:size] @ query
        top = np.argsort(-scores, kind="stable")[:DEPTH]
        return [int(i) for i in top]


async def run(
    case: harness.Case,
    embedder: ports.Embedder | None,
    *,
    names: Sequence[str] = NAMES,
    bot_name: str = harness.BOT_NAME,
) -> tuple[list[harness.Result], dict[str, str]]:
    """Score each peer on ``case``'s probes; the results, and the peers skipped with the reason."""
    pattern = _bot_pattern(bot_name)
    streams = corpora(case)
    wanted = {p.message_id for p in case.probes}
    events = {e.id: e for e in case.events if e.id in wanted}
    results: list[harness.Result] = []
    skipped: dict[str, str] = {}
    for name in names:
        if name == DENSE_SPEAKER and embedder is None:
            skipped[name] = "no embedder"
            continue
        try:
            rankers, indexes = await _rankers(name, streams, embedder)
        except PeersUnavailable as exc:
            skipped[name] = str(exc)
            continue
        rankings: dict[str, list[frozenset[str]]] = {}
        latencies: list[float] = []
        for probe in case.probes:
            event = events.get(probe.message_id)
            corpus = case.corpus_of(event.stream) if event is not None else ""
            if event is None or corpus not in streams:
                continue
            text, (docs, before) = event.text, streams[corpus]
            for index in indexes.get(corpus, ()):
                index.prepare(before[probe.message_id])  # indexing is not query latency
            started = time.perf_counter()
            order = await rankers[corpus](pattern.sub(" ", text).strip(), before[probe.message_id])
            latencies.append((time.perf_counter() - started) * 1000)
            rankings[probe.message_id] = [frozenset({docs[i].id}) for i in order]
        texts = {d.id: d.prefixed for docs, _ in streams.values() for d in docs}
        results.append(score(case, name, rankings, latencies, texts=texts))
    return results, skipped


async def _rankers(
    name: str,
    streams: dict[str, tuple[list[Doc], dict[str, int]]],
    embedder: ports.Embedder | None,
) -> tuple[dict[str, Callable[[str, int], Any]], dict[str, list[_Bm25Index]]]:
    """Per stream: the ranker of peer ``name``, and the BM25 indexes to prepare before timing."""
    out: dict[str, Callable[[str, int], Any]] = {}
    indexes: dict[str, list[_Bm25Index]] = {}
    for stream, (docs, _) in streams.items():
        if name in (BM25, BM25_SPEAKER):
            texts = [d.prefixed if name == BM25_SPEAKER else d.text for d in docs]
            index = _Bm25Index(texts)
            indexes[stream] = [index]
            out[stream] = _bm25_ranker(index)
        else:
            assert embedder is not None
            vectors = await embedder.embed([d.prefixed for d in docs]) if docs else []
            dense = _DenseIndex(np.asarray(vectors, dtype=np.float64).reshape(len(docs), -1))
            out[stream] = _dense_ranker(dense, embedder)
    return out, indexes


def _bm25_ranker(index: _Bm25Index) -> Callable[[str, int], Any]:
    async def rank(query: str, size: int) -> list[int]:
        return index.rank(query, size)

    return rank


def _dense_ranker(index: _DenseIndex, embedder: ports.Embedder) -> Callable[[str, int], Any]:
    async def rank(query: str, size: int) -> list[int]:
        [vector] = await embedder.embed([query], kind="query")
        query_vector = np.asarray(vector, dtype=np.float64)
        norm = np.linalg.norm(query_vector)
        return index.rank(query_vector / (norm or 1.0), size)

    return rank


def score(
    case: harness.Case,
    name: str,
    rankings: dict[str, list[frozenset[str]]],
    latencies: list[float],
    *,
    texts: Mapping[str, str] | None = None,
) -> harness.Result:
    """The recall and precision metrics of one peer (the other columns do not apply: None). Its
    prompt is its first ``PROMPT_ITEMS`` items (``texts``: document id → the text it ranked)."""
    scored = [(p, rankings[p.message_id]) for p in case.probes if p.message_id in rankings]
    curve = {
        k: metrics.mean(metrics.recall_at_k(r, p.evidence_ids, k) for p, r in scored)
        for k in harness.KS
    }
    by_kind = {
        kind: {
            k: metrics.mean(
                metrics.recall_at_k(r, p.evidence_ids, k) for p, r in scored if p.kind == kind
            )
            for k in harness.KS
        }
        for kind in sorted({p.kind for p, _ in scored})
    }
    values: dict[str, Any] = {
        "turns": None,
        "probes": len(case.probes),
        "probes_answered": len(scored),
        **{f"recall@{k}": v for k, v in curve.items()},
        "precision@5": metrics.mean(
            metrics.precision_at_k(r, p.evidence_ids, 5) for p, r in scored
        ),
        **prompt_figures(scored, texts or {}),
        "latency_ms": metrics.latency(latencies).to_json(),
        "peer": True,
    }
    if case.halves:
        values["by_half"] = harness.half_figures(case, rankings, PROMPT_ITEMS)
    return harness.Result(
        case=case.name,
        config=name,
        metrics=values,
        latencies_ms=latencies,
        recall_curve=curve,
        recall_by_kind=by_kind,
        rankings=dict(rankings),
    )


def prompt_figures(
    scored: Sequence[tuple[harness.Probe, Sequence[frozenset[str]]]], texts: Mapping[str, str]
) -> dict[str, Any]:
    """Irrelevant share, items and tokens per prompt of a peer's prompts (its first
    ``PROMPT_ITEMS`` items a probe)."""
    load = metrics.prompt_load(
        (top, p.evidence_ids, [texts.get(i, "") for ids in top for i in ids])
        for p, ranking in scored
        for top in (ranking[:PROMPT_ITEMS],)
    )
    share = load.irrelevant
    return {
        "irrelevant_share": {"value": share.value, "hits": share.hits, "total": share.total},
        "items_per_prompt": load.items_per_prompt,
        "tokens_per_prompt": load.tokens_per_prompt,
    }
