"""LongMemEval's whole development part from runs of its halves: the figures of the union.

A replay of the whole part with a slow embedder takes hours; its halves can be run apart
(``python -m memory.eval quality --sources longmemeval --longmemeval-half tune|report --json
FILE``). This reads such results files and prints the system's figures over all their
questions: the per-question scores averaged again (``longmemeval_run.aggregate``: a question's
any@5 counts once, fresh@5 over the knowledge updates), the ratios summed (irrelevant share,
misattribution) and the items and tokens a prompt weighted by each file's questions.

    PYTHONPATH=. .venv/bin/python scripts/longmemeval_whole.py \\
        docs/evaluation/costs/longmemeval-e5-tune.json docs/evaluation/costs/longmemeval-e5-report.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from memory.eval import longmemeval_run

#: the per-question figures printed, as the results files name them
SCORES = ("turn_any@5", "turn_all@5", "session_all@5", "freshness@5", "precision@5")
RATIOS = ("irrelevant_share", "misattribution")
PER_PROMPT = ("items_per_prompt", "tokens_per_prompt")


class NotAResult(ValueError):
    pass


def system(path: Path) -> dict[str, Any]:
    """The ``full`` system's LongMemEval metrics of a results file."""
    data = json.loads(path.read_text(encoding="utf-8"))
    for result in data.get("results", []):
        if result.get("case") == longmemeval_run.CASE and result.get("config") == "full":
            metrics: dict[str, Any] = result["metrics"]
            if "per_question" not in metrics:
                raise NotAResult(f"{path}: its per-question scores were left out")
            return metrics
    raise NotAResult(f"{path}: no LongMemEval result of the full system")


def whole(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures over every question of ``runs``, which share none."""
    per_question: dict[str, dict[str, Any]] = {}
    for run in runs:
        if twice := per_question.keys() & run["per_question"].keys():
            raise NotAResult(f"{len(twice)} questions are in two of the files (e.g. {min(twice)})")
        per_question.update(run["per_question"])
    scores = longmemeval_run.aggregate(
        [{k: s.get(k) for k in SCORES} for s in per_question.values()]
    )
    out: dict[str, Any] = {"questions": len(per_question), **scores}
    out["knowledge updates"] = sum(
        1 for s in per_question.values() if s.get("freshness@5") is not None
    )
    for key in RATIOS:
        hits = sum(run[key]["hits"] for run in runs)
        total = sum(run[key]["total"] for run in runs)
        out[key] = f"{hits / total:.3f} ({hits}/{total})" if total else "n/a"
    questions = sum(run["questions"] for run in runs)
    for key in PER_PROMPT:
        out[key] = sum(run[key] * run["questions"] for run in runs) / questions
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", type=Path, nargs="+", help="results files of the halves")
    args = p.parse_args(argv)
    try:
        figures = whole([system(path) for path in args.files])
    except (OSError, ValueError) as exc:  # missing, bad JSON, not a LongMemEval run, overlapping
        p.exit(2, f"longmemeval_whole: {exc}\n")
    for key, value in figures.items():
        print(f"{key}: {value:.3f}" if isinstance(value, float) else f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
