"""The evaluation runs behind ``python -m memory.eval``: which data, how much, and the CI gate.

Quick mode is small enough for CI (about a minute on 2 cores): a 12-viewer synthetic stream, the
first sessions of one LoCoMo conversation, a slice of IRC. The full run uses a 40-viewer stream,
all of LoCoMo (categories 1–4) and the busiest IRC hours. LongMemEval runs when asked for
(``--sources longmemeval``; ``memory.eval.longmemeval_run``): not a default source, since its
development part replays ~21,000 messages; with ``--quick`` only its first questions, as a smoke check.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory.eval import embed_cache as embed_cache_module
from memory.eval import (
    filtering,
    harness,
    irc,
    locomo,
    longmemeval_run,
    peers,
    regulars,
    synthetic,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from memory import models, ports

logger = logging.getLogger(__name__)

BASELINE_PATH = Path(__file__).with_name("baseline.json")
SOURCES = ("synthetic", "locomo", "irc")
#: every source ``--sources`` accepts (the regulars channel and LongMemEval only when named)
ALL_SOURCES = (*SOURCES, regulars.CASE, "longmemeval")
#: recall@5 may drop this much below the recorded baseline before the gate fails
DEFAULT_TOLERANCE = 0.02
SEED = 7


@dataclass(frozen=True, slots=True, kw_only=True)
class Sizes:
    viewers: int
    #: noise messages between the opening moments and the rest (pushes them out of the history)
    filler: int
    locomo_conversations: int | None
    locomo_sessions: int | None
    locomo_questions: int | None
    irc_hours: int
    #: cap on IRC messages (None: the whole busiest hours)
    irc_messages: int | None
    #: LoCoMo conversations skipped before the ones loaded (the held-out half: 5)
    locomo_skip: int = 0


#: LoCoMo's development half (tuning) and held-out half (reporting): conversations 1–5 and 6–10
DEV_CONVERSATIONS = 5
LOCOMO_HALVES: dict[str, dict[str, Any]] = {
    "dev": {"locomo_conversations": DEV_CONVERSATIONS, "locomo_skip": 0},
    "held-out": {"locomo_conversations": None, "locomo_skip": DEV_CONVERSATIONS},
}
QUICK = Sizes(viewers=12, filler=220, locomo_conversations=1, locomo_sessions=3,
              locomo_questions=25, irc_hours=1, irc_messages=250)  # fmt: skip
FULL = Sizes(viewers=40, filler=250, locomo_conversations=None, locomo_sessions=None,
             locomo_questions=None, irc_hours=2, irc_messages=None)  # fmt: skip


def synthetic_case(sizes: Sizes, seed: int = SEED) -> harness.Case:
    stream = synthetic.generate(seed=seed, viewers=sizes.viewers, filler=sizes.filler)
    return harness.from_synthetic(stream)


def locomo_case(data_dir: Path, sizes: Sizes) -> harness.Case:
    wanted = sizes.locomo_conversations
    conversations = locomo.load(
        data_dir,
        conversations=None if wanted is None else sizes.locomo_skip + wanted,
        max_sessions=sizes.locomo_sessions,
        max_questions=sizes.locomo_questions,
    )
    kept = conversations[sizes.locomo_skip :]
    case = harness.from_locomo(kept)
    half = {c.stream: "dev" if sizes.locomo_skip + i < DEV_CONVERSATIONS else "held-out"
            for i, c in enumerate(kept)}  # fmt: skip
    streams = {e.id: e.stream for e in case.events}
    return dataclasses.replace(
        case, halves={p.message_id: half[streams[p.message_id]] for p in case.probes}
    )


def irc_case(data_dir: Path, sizes: Sizes) -> harness.Case:
    nicks = irc.Nicks()
    streams = irc.load(data_dir, split="dev", nicks=nicks) + irc.load(
        data_dir, split="test", nicks=nicks
    )
    by_stream = {events[0].stream: events for events in streams if events}
    events = []
    for hour in irc.busiest_hours(streams, sizes.irc_hours):
        events.extend(irc.window(by_stream[hour.stream], hour.start)[: sizes.irc_messages])
    known = {e.id for e in events}
    events = [e if e.reply_to in known or e.reply_to is None else _no_reply(e) for e in events]
    events.sort(key=lambda e: (e.ts, e.id))
    return harness.from_events("irc", events)


def _no_reply(event: Any) -> Any:
    return dataclasses.replace(event, reply_to=None)


def data_available(
    data_dir: Path, source: str, lme: longmemeval_run.Options | None = None
) -> str | None:
    """None when ``source``'s data is there, else why not."""
    if source == "longmemeval" and not (lme or longmemeval_run.Options()).file(data_dir).is_file():
        return f"{(lme or longmemeval_run.Options()).file(data_dir)} not found"
    if source == "locomo" and not (data_dir / locomo.RELATIVE_PATH).is_file():
        return f"{data_dir / locomo.RELATIVE_PATH} not found"
    if source == "irc" and not irc.files(data_dir, "dev"):
        return f"no IRC logs in {data_dir / irc.RELATIVE_DIR / 'dev'}"
    return None


def build_case(source: str, data_dir: Path, sizes: Sizes) -> harness.Case:
    if source == "synthetic":
        return synthetic_case(sizes)
    if source == "locomo":
        return locomo_case(data_dir, sizes)
    if source == regulars.CASE:
        return regulars.case()
    return irc_case(data_dir, sizes)


async def run_quality(
    sources: Sequence[str],
    data_dir: Path,
    *,
    quick: bool,
    system: str = "full",
    embedder: str = harness.DEFAULT_EMBEDDER,
    with_peers: bool = True,
    locomo_first: int | None = None,
    locomo_half: str | None = None,
    lme: longmemeval_run.Options | None = None,
    sparse_scheme: str | None = None,
    embed_cache: Path | None = None,
) -> tuple[list[harness.Result], dict[str, str]]:
    """Results per source (the system's, then its peers' on the same probes), and what was
    skipped with the reason. ``locomo_first``: full runs on LoCoMo's first N conversations only;
    ``lme``: which LongMemEval questions (quick: the first ``longmemeval_run.QUICK_FIRST``);
    ``sparse_scheme``: ``memory.sparse_scheme`` of the system (None: the default);
    ``embed_cache``: the folder where the system's and the dense peer's vectors are kept across
    runs (``memory.eval.embed_cache``; None: no cache)."""
    sizes = QUICK if quick else FULL
    if locomo_first is not None and not quick:
        sizes = dataclasses.replace(sizes, locomo_conversations=locomo_first)
    if locomo_half is not None and not quick:
        sizes = dataclasses.replace(sizes, **LOCOMO_HALVES[locomo_half])
    peer_cache = None if embed_cache is None else embed_cache_module.EmbeddingCache(embed_cache)
    peer_embedder = await _peer_embedder(embedder) if with_peers else None
    if peer_embedder is not None and peer_cache is not None:
        peer_embedder = peer_cache.wrap(peer_embedder)
    try:
        return await _run_sources(
            sources, data_dir, sizes, system=system, embedder=embedder, lme=lme, quick=quick,
            peer_embedder=peer_embedder, with_peers=with_peers, sparse_scheme=sparse_scheme,
            embed_cache=embed_cache,
        )  # fmt: skip
    finally:
        if peer_cache is not None:
            peer_cache.flush()


async def _run_sources(
    sources: Sequence[str],
    data_dir: Path,
    sizes: Sizes,
    *,
    system: str,
    embedder: str,
    lme: longmemeval_run.Options | None,
    quick: bool,
    peer_embedder: ports.Embedder | None,
    with_peers: bool,
    sparse_scheme: str | None,
    embed_cache: Path | None,
) -> tuple[list[harness.Result], dict[str, str]]:
    results: list[harness.Result] = []
    skipped: dict[str, str] = {}
    for source in sources:
        reason = data_available(data_dir, source, lme)
        if source == "longmemeval" and system == "naive":
            reason = "the naive design is not replayed on LongMemEval"
        if reason:
            skipped[source] = reason
            logger.warning("%s skipped: %s", source, reason)
            continue
        began = time.perf_counter()
        if source == "longmemeval":
            options = lme or longmemeval_run.Options()
            if quick:
                options = dataclasses.replace(options, first=longmemeval_run.QUICK_FIRST)
            found, missing = await longmemeval_run.evaluate(
                data_dir, options, embedder=embedder, peer_embedder=peer_embedder,
                with_peers=with_peers, embed_cache=embed_cache,
            )  # fmt: skip
            for result in found:
                result.metrics["source_seconds"] = round(time.perf_counter() - began, 1)
            results.extend(found)
            skipped.update({f"{source} {name}": why for name, why in missing.items()})
            continue
        case = build_case(source, data_dir, sizes)
        if system == "naive":
            reports = await harness.run_naive(case)
        else:
            overrides = {"memory": {"sparse_scheme": sparse_scheme}} if sparse_scheme else None
            reports = await harness.run_full_isolated(
                case, overrides=overrides, embedder=embedder, embed_cache=embed_cache
            )
        found, missing = await _scored(case, reports, system, peer_embedder, with_peers=with_peers)
        for result in found:  # the source's replay, scoring and peers
            result.metrics["source_seconds"] = round(time.perf_counter() - began, 1)
        results += found
        skipped.update({f"{source} {name}": why for name, why in missing.items()})
    return results, skipped


async def _scored(
    case: harness.Case,
    reports: Sequence[models.TurnReport],
    system: str,
    peer_embedder: ports.Embedder | None,
    *,
    with_peers: bool,
) -> tuple[list[harness.Result], dict[str, str]]:
    """The system's result on ``case``, then its peers' on the same probes; the peers skipped."""
    result = harness.score(case, reports, config=system)
    result.metrics.update(filtering.shares(case))
    found, missing = (
        await peers.run(case, peer_embedder) if with_peers and case.probes else ([], {})
    )
    if case.name == regulars.CASE:
        corpus = regulars.load()
        for scored in (result, *found):
            regulars.annotate(scored, corpus)
    return [result, *found], missing


async def embedder_name(choice: str) -> str:
    """The name of the embedder ``--embedder choice`` gives (``offline-hash-v1:384``, …)."""
    return (await _peer_embedder(choice)).name


async def _peer_embedder(choice: str) -> ports.Embedder:
    """The embedder the dense peer uses: the one evaluated (built the way the system builds it)."""
    from memory.spaces import embedders

    settings = harness.eval_settings(Path("."), embedder=choice)
    return await embedders.build_embedder(settings)


# -- the CI gate --------------------------------------------------------------------------------


def load_baseline(path: Path = BASELINE_PATH) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def record_baseline(
    results: Sequence[harness.Result], path: Path = BASELINE_PATH
) -> dict[str, Any]:
    synth = next(r for r in results if r.case == "synthetic")
    data = {
        "synthetic": {
            "recall@5": synth.metrics["recall@5"],
            "misattribution": synth.metrics["misattribution"]["value"],
        },
        "tolerance": DEFAULT_TOLERANCE,
        "seed": SEED,
        "sizes": "quick",
        "recorded_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": "python -m memory.eval baseline",
    }
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return data


def gate(results: Sequence[harness.Result], baseline: dict[str, Any] | None) -> list[str]:
    """The reasons the quick run fails (empty: it passes)."""
    synth = next((r for r in results if r.case == "synthetic"), None)
    if synth is None:
        return ["GATE FAIL: the synthetic stream was not evaluated"]
    failures = []
    mis = synth.metrics["misattribution"]
    if mis["hits"] > 0:
        failures.append(
            f"GATE FAIL: misattribution on the synthetic stream is {mis['value']:.3f} "
            f"({mis['hits']}/{mis['total']} personal items not written by their viewer); must be 0"
        )
    failures += _below_peer(results)
    recall = synth.metrics["recall@5"]
    if baseline is None:
        logger.warning("no recorded baseline (%s): recall@5 not gated", BASELINE_PATH)
        return failures
    floor = float(baseline["synthetic"]["recall@5"] or 0.0) - float(
        baseline.get("tolerance", DEFAULT_TOLERANCE)
    )
    if recall is None or recall < floor:
        shown = "n/a" if recall is None else f"{recall:.3f}"
        failures.append(
            f"GATE FAIL: synthetic recall@5 {shown} is below the recorded baseline "
            f"{baseline['synthetic']['recall@5']:.3f} minus tolerance {baseline.get('tolerance', DEFAULT_TOLERANCE)}"
        )
    return failures


def _below_peer(results: Sequence[harness.Result], peer: str = peers.BM25_SPEAKER) -> list[str]:
    """Each case where the full system recalls less at 5 than ``peer`` on the same probes."""
    failures = []
    for result in results:
        if result.config != "full":
            continue
        other = next((r for r in results if r.case == result.case and r.config == peer), None)
        if other is None:
            continue
        ours, theirs = result.metrics["recall@5"], other.metrics["recall@5"]
        if ours is not None and theirs is not None and ours < theirs:
            failures.append(
                f"GATE FAIL: {result.case} recall@5 {ours:.3f} is below {peer}'s {theirs:.3f} "
                "on the same probes"
            )
    return failures


def reported(results: Sequence[harness.Result]) -> list[str]:
    """The precision figures of the system on each source, reported beside the gate, never gated."""
    lines = []
    for result in results:
        if result.config != "full" or result.metrics.get("peer"):
            continue
        m = result.metrics
        share = m.get("irrelevant_share") or {}
        lines.append(
            f"REPORTED (not gated): {result.case} P@5 {_shown(m.get('precision@5'))}, irrelevant "
            f"share {_shown(share.get('value'))} ({share.get('hits')}/{share.get('total')}), "
            f"items/prompt {_shown(m.get('items_per_prompt'), 1)}, "
            f"tokens/prompt {_shown(m.get('tokens_per_prompt'), 0)}"
        )
    return lines


def _shown(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"
