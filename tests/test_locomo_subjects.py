"""``scripts/locomo_subjects.py``: the least irrelevant share a prompt's item count allows; it and
the other scripts that replay or read LoCoMo without their data: one line."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from memory.eval import harness, locomo, longmemeval
from scripts import calibrate_floor, locomo_subjects
from tests.cli import ROOT, run

if TYPE_CHECKING:
    from pathlib import Path


def probe(message_id: str, *evidence: str) -> harness.Probe:
    return harness.Probe(
        message_id=message_id, asker_id="u0", target_id="u1", evidence_ids=evidence, kind="4"
    )


def test_the_least_irrelevant_share_counts_one_item_an_evidence_turn() -> None:
    probes = [probe("q1", "e1"), probe("q2", "e2", "e3")]
    rankings = {
        # five items, one covers e1: four irrelevant, and at least four would be
        "q1": [frozenset({"x"}), frozenset({"e1"}), *[frozenset({"y"})] * 3],
        # two items, none covers e2 or e3: both irrelevant; both could have covered one
        "q2": [frozenset({"x"}), frozenset({"z"})],
    }
    share, least = locomo_subjects.irrelevant(probes, rankings)
    assert share == pytest.approx(6 / 7)
    assert least == pytest.approx(4 / 7)
    # a probe the run did not reach counts no item
    assert locomo_subjects.irrelevant([*probes, probe("q3", "e4")], rankings) == (share, least)


def test_the_bounds_of_the_irrelevant_share_judge_and_cut_each_probe_s_items() -> None:
    probes = [probe("q1", "e1"), probe("q2", "e2"), probe("q3", "e3")]
    rankings = {
        "q1": [frozenset({"x"}), frozenset({"e1"}), frozenset({"y"}), frozenset({"z"})],
        "q2": [frozenset({"x"}), frozenset({"y"})],  # no evidence among them
        "q3": [frozenset({"e3"})],
    }
    found = locomo_subjects.bounds(probes, rankings)
    assert found["as ranked"] == pytest.approx((5 / 7, 7 / 3))
    # a perfect judge leaves q2's two items out
    assert found["no items without evidence"] == pytest.approx((3 / 5, 5 / 3))
    # a perfect cut keeps q1's first two and q3's, and q2 whole
    assert found["cut after the last evidence item"] == pytest.approx((3 / 5, 5 / 3))
    assert found["both"] == pytest.approx((1 / 3, 1.0))
    assert locomo_subjects.first_places(probes, rankings) == {2: 1, 1: 1}


@pytest.mark.parametrize(
    ("script", "options", "missing"),
    [
        ("scripts.locomo_subjects", [], locomo.RELATIVE_PATH),
        ("scripts.sentence_scoring", [], locomo.RELATIVE_PATH),
        ("scripts.query_wording", [], locomo.RELATIVE_PATH),
        ("scripts.latent_terms", [], locomo.RELATIVE_PATH),
        ("scripts.calibrate_floor", ["--source", "locomo"], locomo.RELATIVE_PATH),
        ("scripts.calibrate_floor", ["--source", "longmemeval", "--half", "tune"],
         longmemeval.RELATIVE_PATH),
    ],
)  # fmt: skip
def test_without_the_data_a_replay_says_where_it_looked(
    tmp_path: Path, script: str, options: list[str], missing: str
) -> None:
    out = run(script, *options, "--data-dir", str(tmp_path), env={}, cwd=ROOT)
    assert out.code == 2 and str(tmp_path / missing) in out.err
    assert "Traceback" not in out.err


def test_a_floor_replay_takes_the_search_limit_and_token_budget_it_is_given() -> None:
    # what harness.run_full_isolated's overrides get: the floor always off, a setting not given
    # left to its default (docs/evaluation.md, LoCoMo, "A wider search")
    assert calibrate_floor.replay_settings(None, None) == calibrate_floor.NO_FLOOR
    assert calibrate_floor.replay_settings(20, None) == {
        "memory": {"relevance_floor": False, "recall_limit": 20}
    }
    assert calibrate_floor.replay_settings(None, 4000)["memory"]["token_budget"] == 4000
