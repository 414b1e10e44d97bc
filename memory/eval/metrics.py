"""Evaluation metrics: pure functions over ids, rankings and timings (no I/O, no system calls).

A *ranking* is a sequence of retrieved items in the order they are used, each given as the set of
ids it covers (its origin message ids, or lore ids). *Evidence* is the set of gold ids that answer a
question. Functions return ``None`` when a metric is undefined (nothing to score), never a fake 0.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory import models

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping, Sequence
    from datetime import datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class Ratio:
    """A share with its counts, so tables can show ``3/120``."""

    hits: int
    total: int

    @property
    def value(self) -> float | None:
        return self.hits / self.total if self.total else None

    def __add__(self, other: Ratio) -> Ratio:
        return Ratio(hits=self.hits + other.hits, total=self.total + other.total)


def recall_at_k(
    ranking: Sequence[Collection[str]], evidence: Collection[str], k: int
) -> float | None:
    """Share of the evidence ids covered by the first ``k`` items (None without evidence)."""
    gold = set(evidence)
    if not gold:
        return None
    found: set[str] = set()
    for ids in ranking[:k]:
        found.update(gold.intersection(ids))
    return len(found) / len(gold)


def precision_at_k(
    ranking: Sequence[Collection[str]], evidence: Collection[str], k: int
) -> float | None:
    """Share of the first ``k`` retrieved items that cover some evidence (None when none retrieved
    or no evidence)."""
    gold = set(evidence)
    top = ranking[:k]
    if not gold or not top:
        return None
    return sum(1 for ids in top if gold.intersection(ids)) / len(top)


def recall_any_at_k(
    ranking: Sequence[Collection[str]], evidence: Collection[str], k: int
) -> float | None:
    """1.0 when the first ``k`` items cover at least one evidence id, else 0.0 (None without
    evidence)."""
    share = recall_at_k(ranking, evidence, k)
    return None if share is None else float(share > 0)


def recall_all_at_k(
    ranking: Sequence[Collection[str]], evidence: Collection[str], k: int
) -> float | None:
    """1.0 when the first ``k`` items cover every evidence id, else 0.0 (None without evidence)."""
    share = recall_at_k(ranking, evidence, k)
    return None if share is None else float(share == 1)


def freshness_at_k(
    ranking: Sequence[Collection[str]], evidence_dates: Mapping[str, datetime], k: int
) -> float | None:
    """1.0 when a latest-dated evidence id is among the first ``k`` items and ranks above every
    earlier-dated one (an item covering both does not rank it above), else 0.0 (None without
    evidence). Evidence all of one date: 1.0 when some of it is among the first ``k``."""
    if not evidence_dates:
        return None
    latest = max(evidence_dates.values())
    newest = {i for i, when in evidence_dates.items() if when == latest}
    older = set(evidence_dates) - newest
    for ids in ranking[:k]:
        if older.intersection(ids):
            return 0.0
        if newest.intersection(ids):
            return 1.0
    return 0.0


def mean(values: Iterable[float | None]) -> float | None:
    """Mean of the defined values (None when none is)."""
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def misattribution(
    recalled: Iterable[tuple[str, Collection[str]]], authors: Mapping[str, str]
) -> Ratio:
    """Misattributed personal items over all personal items.

    ``recalled`` holds, for each personal item (profile or targeted recall), the user id of the viewer
    it was recalled for and its origin message ids. An item is misattributed when any origin message
    was not written by that viewer; an origin id missing from ``authors`` counts as not written by
    them (a personal memory must trace back to the viewer's own messages).
    """
    hits = total = 0
    for user_id, origins in recalled:
        total += 1
        if not origins or any(authors.get(mid) != user_id for mid in origins):
            hits += 1
    return Ratio(hits=hits, total=total)


def irrelevant_share(items: Iterable[Collection[str]], relevant: Collection[str]) -> Ratio:
    """Items in the prompt that cover none of the relevant ids, over all items."""
    wanted = set(relevant)
    hits = total = 0
    for ids in items:
        total += 1
        if not wanted.intersection(ids):
            hits += 1
    return Ratio(hits=hits, total=total)


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptLoad:
    """What the prompts of the scored turns carried: their memory items, the items covering no
    evidence of the turn's questions, and the items' tokens (``models.estimate_tokens``)."""

    prompts: int
    items: int
    tokens: int
    irrelevant: Ratio

    @property
    def items_per_prompt(self) -> float | None:
        return self.items / self.prompts if self.prompts else None

    @property
    def tokens_per_prompt(self) -> float | None:
        return self.tokens / self.prompts if self.prompts else None


def prompt_load(
    prompts: Iterable[tuple[Sequence[Collection[str]], Collection[str], Sequence[str]]],
) -> PromptLoad:
    """``prompts``: per prompt, its items (each as the ids it covers, in prompt order), the ids
    relevant to it (the evidence of its questions) and the items' texts."""
    count = items = tokens = 0
    irrelevant = Ratio(hits=0, total=0)
    for covered, relevant, texts in prompts:
        count += 1
        items += len(covered)
        tokens += sum(models.estimate_tokens(text) for text in texts)
        irrelevant += irrelevant_share(covered, relevant)
    return PromptLoad(prompts=count, items=items, tokens=tokens, irrelevant=irrelevant)


def episodic_recall(
    probes: Iterable[tuple[Collection[str], Collection[str], bool]],
) -> Ratio:
    """Recall of moments that the working history no longer covers.

    Each probe is ``(evidence ids, ids retrieved for the turn, evidence out of history)``; probes whose
    evidence is still in the working history are not counted. A hit is a probe whose evidence was all
    retrieved.
    """
    hits = total = 0
    for evidence, retrieved, out_of_history in probes:
        if not out_of_history or not evidence:
            continue
        total += 1
        if set(evidence) <= set(retrieved):
            hits += 1
    return Ratio(hits=hits, total=total)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0–100), linear interpolation between closest ranks."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low, high = math.floor(position), math.ceil(position)
    if low == high:
        return ordered[low]
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True, slots=True, kw_only=True)
class Latency:
    count: int
    mean: float | None
    p50: float | None
    p95: float | None
    max: float | None

    def to_json(self) -> dict[str, float | int | None]:
        return {
            "count": self.count,
            "mean": self.mean,
            "p50": self.p50,
            "p95": self.p95,
            "max": self.max,
        }


def latency(values_ms: Sequence[float]) -> Latency:
    """Mean, median, 95th percentile and max of latencies in milliseconds."""
    return Latency(
        count=len(values_ms),
        mean=statistics.fmean(values_ms) if values_ms else None,
        p50=percentile(values_ms, 50),
        p95=percentile(values_ms, 95),
        max=max(values_ms) if values_ms else None,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Degradation:
    turns: int
    #: turns where at least one source was dropped (timeout, error, budget)
    degraded: Ratio
    #: turns whose memory stage finished within the budget (plus a small slack)
    within_budget: Ratio


def degradation(
    turns: Iterable[tuple[bool, float | None]], budget_ms: float, *, slack_ms: float = 50.0
) -> Degradation:
    """``turns``: ``(degraded, memory stage ms)``; a turn without a memory timing is within budget
    (it ran no memory stage)."""
    count = degraded = within = 0
    for was_degraded, total_ms in turns:
        count += 1
        degraded += was_degraded
        within += total_ms is None or total_ms <= budget_ms + slack_ms
    return Degradation(
        turns=count,
        degraded=Ratio(hits=degraded, total=count),
        within_budget=Ratio(hits=within, total=count),
    )


def token_ratio(prompt_tokens: Sequence[int], naive_tokens: Sequence[int]) -> float | None:
    """Total prompt tokens over the naive full-history prompt's tokens (same turns)."""
    naive = sum(naive_tokens)
    return sum(prompt_tokens) / naive if naive else None


def naive_history_tokens(
    texts: Sequence[str], ends: Sequence[int], *, system_tokens: int = 0
) -> list[int]:
    """Tokens of a naive prompt holding the whole history at each turn.

    ``texts`` are the chat messages in order; ``ends[i]`` is how many of them turn ``i`` has seen.
    Each message costs its estimate plus 4 (the same estimate as ``models.estimate_messages_tokens``).
    """
    cumulative = [0]
    for text in texts:
        cumulative.append(cumulative[-1] + models.estimate_tokens(text) + 4)
    return [system_tokens + cumulative[min(end, len(texts))] for end in ends]
