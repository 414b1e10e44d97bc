"""``scripts/longmemeval_whole.py``: LongMemEval's whole part from results files of its halves."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from scripts import longmemeval_whole

if TYPE_CHECKING:
    from pathlib import Path


def _run(path: Path, scores: dict[str, dict[str, Any]], **ratios: tuple[int, int]) -> Path:
    metrics: dict[str, Any] = {
        "questions": len(scores),
        "per_question": scores,
        "items_per_prompt": 2.0 * len(scores),
        "tokens_per_prompt": 100.0,
        **{key: {"hits": hits, "total": total} for key, (hits, total) in ratios.items()},
    }
    results = [{"case": "longmemeval", "config": "bm25_all_turns", "metrics": {}},
               {"case": "longmemeval", "config": "full", "metrics": metrics}]  # fmt: skip
    path.write_text(json.dumps({"meta": {}, "results": results}), encoding="utf-8")
    return path


def _question(any5: float, fresh: float | None = None) -> dict[str, Any]:
    return {"turn_any@5": any5, "turn_all@5": any5, "session_all@5": 1.0,
            "freshness@5": fresh, "precision@5": 0.5, "ranking": []}  # fmt: skip


def test_the_whole_is_the_union_of_the_halves_questions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tune = _run(tmp_path / "tune.json", {"a": _question(1.0, 1.0), "b": _question(0.0)},
                irrelevant_share=(3, 4), misattribution=(0, 10))  # fmt: skip
    report = _run(tmp_path / "report.json", {"c": _question(1.0, 0.0)},
                  irrelevant_share=(1, 4), misattribution=(0, 5))  # fmt: skip
    assert longmemeval_whole.main([str(tune), str(report)]) == 0
    out = dict(line.split(": ", 1) for line in capsys.readouterr().out.splitlines())
    assert out["questions"] == "3" and out["knowledge updates"] == "2"
    assert out["turn_any@5"] == "0.667"  # each question once: (1 + 0 + 1) / 3, not (0.5 + 1) / 2
    assert out["freshness@5"] == "0.500"  # over the two knowledge updates only
    assert out["irrelevant_share"] == "0.500 (4/8)" and out["misattribution"] == "0.000 (0/15)"
    assert out["items_per_prompt"] == "3.333"  # 4.0 for two questions, 2.0 for one


@pytest.mark.parametrize("problem", ["overlap", "no per-question", "missing"])
def test_a_file_it_cannot_use_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], problem: str
) -> None:
    one = _run(tmp_path / "one.json", {"a": _question(1.0)}, irrelevant_share=(0, 1),
               misattribution=(0, 1))  # fmt: skip
    other = _run(tmp_path / "other.json", {"a": _question(0.0)}, irrelevant_share=(0, 1),
                 misattribution=(0, 1))  # fmt: skip
    if problem == "no per-question":
        data = json.loads(other.read_text(encoding="utf-8"))
        del data["results"][1]["metrics"]["per_question"]
        other.write_text(json.dumps(data), encoding="utf-8")
    elif problem == "missing":
        other = tmp_path / "absent.json"
    with pytest.raises(SystemExit) as stopped:
        longmemeval_whole.main([str(one), str(other)])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("longmemeval_whole: ") and len(err.splitlines()) == 1
    assert {"overlap": "in two of the files", "no per-question": "per-question scores were left out",
            "missing": "absent.json"}[problem] in err  # fmt: skip
