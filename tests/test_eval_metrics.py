"""Evaluation metrics (pure), the scoring of turn reports, and the CI gate."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest

from memory import models
from memory.eval import harness, metrics, report, suite, synthetic

if TYPE_CHECKING:
    from pathlib import Path


def test_recall_at_k_counts_evidence_in_the_first_k() -> None:
    ranking = [{"m9"}, {"m1", "m8"}, {"m2"}]
    assert metrics.recall_at_k(ranking, {"m1", "m2"}, 1) == 0.0
    assert metrics.recall_at_k(ranking, {"m1", "m2"}, 2) == 0.5
    assert metrics.recall_at_k(ranking, {"m1", "m2"}, 3) == 1.0
    assert metrics.recall_at_k([], {"m1"}, 5) == 0.0
    assert metrics.recall_at_k(ranking, set(), 5) is None


def test_precision_at_k() -> None:
    ranking = [{"m9"}, {"m1"}, {"m2"}, {"m7"}]
    assert metrics.precision_at_k(ranking, {"m1", "m2"}, 4) == 0.5
    assert metrics.precision_at_k(ranking, {"m1"}, 2) == 0.5
    assert metrics.precision_at_k([], {"m1"}, 5) is None


def test_misattribution_flags_items_written_by_someone_else() -> None:
    authors = {"m1": "alice", "m2": "bob", "m3": "alice"}
    recalled = [
        ("alice", ("m1",)),
        ("alice", ("m1", "m3")),
        ("alice", ("m2",)),  # bob's message recalled as alice's
        ("bob", ("m404",)),  # unknown origin: not traceable to bob
        ("bob", ()),  # no provenance at all
    ]
    ratio = metrics.misattribution(recalled, authors)
    assert (ratio.hits, ratio.total) == (3, 5)
    assert ratio.value == pytest.approx(0.6)
    assert metrics.misattribution([], authors).value is None


def test_irrelevant_share_and_episodic_recall() -> None:
    share = metrics.irrelevant_share([{"m1"}, {"m5"}, {"lore-x"}], {"m1", "lore-x"})
    assert (share.hits, share.total) == (1, 3)
    episodic = metrics.episodic_recall(
        [
            (("m1",), {"m1", "m2"}, True),
            (("m3",), {"m4"}, True),
            (("m5",), set(), False),  # still in the working history: not counted
        ]
    )
    assert (episodic.hits, episodic.total) == (1, 2)


def test_latency_percentiles() -> None:
    summary = metrics.latency([float(v) for v in range(1, 101)])
    assert summary.count == 100
    assert summary.mean == pytest.approx(50.5)
    assert summary.p50 == pytest.approx(50.5)
    assert summary.p95 == pytest.approx(95.05)
    assert summary.max == 100
    assert metrics.latency([]).p95 is None
    assert metrics.percentile([3.0], 95) == 3.0


def test_degradation_and_budget() -> None:
    result = metrics.degradation(
        [(False, 10.0), (True, 990.0), (True, 1200.0), (False, None)], 1000
    )
    assert (result.degraded.hits, result.degraded.total) == (2, 4)
    assert (result.within_budget.hits, result.within_budget.total) == (3, 4)


def test_naive_tokens_grow_with_history_and_ratio() -> None:
    naive = metrics.naive_history_tokens(
        ["hello there", "I live in Rome", "ok"], [1, 2, 3], system_tokens=10
    )
    assert naive[0] < naive[1] < naive[2]
    assert naive[0] == 10 + models.estimate_tokens("hello there") + 4
    assert metrics.token_ratio([5, 5], [10, 10]) == 0.5
    assert metrics.token_ratio([5], [0]) is None


def _item(
    source: str, viewer: str | None, origins: tuple[str, ...], text: str = "x"
) -> models.RecallItem:
    return models.RecallItem(
        source=source,
        space="s",
        viewer=viewer,
        memory_id="id",
        text=text,
        origin_message_ids=origins,
    )


def _report(
    turn: str,
    message_ids: list[str],
    items: list[models.RecallItem],
    viewers: tuple[tuple[str, str], ...] = (),
) -> models.TurnReport:
    report = models.TurnReport(turn_id=turn, stream="s", message_ids=message_ids, recall=items)
    report.timings_ms["memory_total"] = 5.0
    report.prompt.messages_in_history = 50
    report.plan = models.Plan(
        viewers=tuple(models.PlannedViewer(login=v, user_id=u, score=1.0) for v, u in viewers)
    )
    return report


def _event(mid: str, user: str, login: str, text: str = "hi") -> models.ChatEvent:
    return models.ChatEvent(
        id=mid,
        stream="s",
        user_id=user,
        login=login,
        text=text,
        ts=datetime(2026, 1, 1, tzinfo=UTC),
    )


def test_score_a_case() -> None:
    events = (
        _event("m1", "1", "alice", "I live in Rome"),
        _event("m2", "2", "bob", "alice lives in Oslo"),
        _event("m3", "2", "bob", "where does alice live?"),
        _event("m4", "3", "carol", "who are you?"),
    )
    case = harness.Case(
        name="t",
        events=events,
        probes=(
            harness.Probe(
                message_id="m3",
                asker_id="2",
                target_id="1",
                evidence_ids=("m1",),
                kind="other_viewer",
            ),
            harness.Probe(
                message_id="m4",
                asker_id="3",
                target_id=None,
                evidence_ids=("lore-origin",),
                kind="lore",
            ),
        ),
        authors={e.id: e.user_id for e in events},
        logins={"alice": "1", "bob": "2", "carol": "3"},
        lore=(("lore-origin", "Mnemo escaped a flooded archive", "flooded archive"),),
    )
    reports = [
        _report("t1", ["m1", "m2"], []),
        _report(
            "t2",
            ["m3"],
            [_item("recall", "alice", ("m2",)), _item("recall", "alice", ("m1",))],
            viewers=(("alice", "1"),),
        ),
        _report("t3", ["m4"], [_item("lore", None, (), "Origin: Mnemo escaped a flooded archive")]),
    ]
    result = harness.score(case, reports, config="test")
    m = result.metrics
    assert m["recall@1"] == pytest.approx(0.5)  # other_viewer misses at k=1, lore hits
    assert m["recall@5"] == 1.0
    assert m["misattribution"] == {"value": 0.5, "hits": 1, "total": 2}
    assert m["irrelevant_share"]["hits"] == 1
    assert m["items_per_prompt"] == 1.5  # the probe turns' prompts: two items, then one
    assert m["tokens_per_prompt"] is not None and m["tokens_per_prompt"] > 0
    assert "by_half" not in m
    split = dataclasses.replace(case, halves={"m3": "dev", "m4": "held-out"})
    halves = harness.score(split, reports, config="test").metrics["by_half"]
    assert halves["dev"]["probes"] == halves["held-out"]["probes"] == 1
    assert halves["dev"]["irrelevant_share"] == {"value": 0.5, "hits": 1, "total": 2}
    assert halves["held-out"]["recall@5"] == 1.0 and halves["dev"]["items_per_prompt"] == 2.0
    assert "| t    | test   | dev " in report.half_table(
        [harness.score(split, reports, config="test")]
    )
    assert m["target_planned"] == {"value": 1.0, "hits": 1, "total": 1}
    assert result.recall_by_kind["lore"][1] == 1.0
    assert m["latency_ms"]["p50"] == 5.0


async def test_naive_design_misattributes_on_the_synthetic_stream() -> None:
    case = harness.from_synthetic(synthetic.generate(seed=2, viewers=8))
    result = harness.score(case, await harness.run_naive(case), config="naive")
    assert result.metrics["probes_answered"] == len(case.probes)
    assert result.metrics["misattribution"]["hits"] > 0
    assert suite.gate([result], None)[0].startswith("GATE FAIL: misattribution")


def test_the_quick_run_reports_precision_without_gating_it() -> None:
    figures = {"recall@5": 0.99, "misattribution": {"value": 0.0, "hits": 0, "total": 10},
               "precision@5": 0.05, "irrelevant_share": {"value": 0.96, "hits": 96, "total": 100},
               "items_per_prompt": 16.25, "tokens_per_prompt": 143.6}  # fmt: skip
    full = harness.Result(case="synthetic", config="full", latencies_ms=[], recall_curve={},
                          recall_by_kind={}, metrics=figures)  # fmt: skip
    peer = dataclasses.replace(full, config="bm25", metrics={**figures, "peer": True})
    assert suite.reported([full, peer]) == [
        "REPORTED (not gated): synthetic P@5 0.050, irrelevant share 0.960 (96/100), "
        "items/prompt 16.2, tokens/prompt 144"
    ]
    assert suite.gate([full], {"synthetic": {"recall@5": 0.97}, "tolerance": 0.02}) == []


def test_gate_on_recall_against_the_baseline() -> None:
    result = harness.Result(
        case="synthetic", config="full", latencies_ms=[], recall_curve={}, recall_by_kind={},
        metrics={"recall@5": 0.70, "misattribution": {"value": 0.0, "hits": 0, "total": 10}},
    )  # fmt: skip
    assert suite.gate([result], {"synthetic": {"recall@5": 0.71}, "tolerance": 0.02}) == []
    failures = suite.gate([result], {"synthetic": {"recall@5": 0.80}, "tolerance": 0.02})
    assert (
        len(failures) == 1 and "recall@5 0.700 is below the recorded baseline 0.800" in failures[0]
    )
    assert suite.gate([result], None) == []
    assert suite.gate([], None)[0].startswith("GATE FAIL")


async def test_replay_through_the_real_system(database_url: str, tmp_path: Path) -> None:
    """The harness drives the wired system (no model) and the synthetic stream scores sanely."""
    stream = synthetic.generate(seed=4, viewers=4, noise_per_item=(0, 1))
    case = harness.from_synthetic(stream)
    settings = harness.eval_settings(
        tmp_path,
        database_url=database_url,
        lore_dir=harness.write_lore(tmp_path / "lore", case.lore),
    )
    reports = await harness.run_full(case, settings)
    result = harness.score(case, reports, config="full")
    m = result.metrics
    assert m["probes_answered"] == len(case.probes)
    assert m["failed_turns"] == 0
    assert m["misattribution"]["total"] > 0 and m["misattribution"]["hits"] == 0
    assert m["recall@10"] is not None and m["recall@10"] > 0
    assert m["latency_ms"]["count"] == len(reports)


def test_a_login_is_resolved_within_its_stream() -> None:
    """Two conversations each with a "john" (LoCoMo has three): each is his own viewer."""
    events = (
        dataclasses.replace(_event("a1", "41", "john", "I like jazz"), stream="a"),
        dataclasses.replace(_event("b1", "47", "john", "I like rock"), stream="b"),
    )
    case = harness.Case(
        name="t", events=events, authors={e.id: e.user_id for e in events}, logins={"john": "47"}
    )
    report = _report("t1", ["a1"], [_item("recall", "john", ("a1",))])
    report.stream = "a"
    assert harness.score(case, [report], config="t").metrics["misattribution"]["hits"] == 0


def test_a_login_is_resolved_to_the_viewer_the_turn_planned() -> None:
    """A turn of stream "a" that named "john" after stream "b"'s john was seen last (LoCoMo replays
    three Johns as streams of one channel; the directory gives the last one): the items are his own
    messages, recalled for him, not stream "a"'s john's. An item of someone else is still flagged."""
    events = (
        dataclasses.replace(_event("a1", "41", "john", "I like jazz"), stream="a"),
        dataclasses.replace(_event("b1", "47", "john", "I like rock"), stream="b"),
    )
    case = harness.Case(
        name="t", events=events, authors={e.id: e.user_id for e in events}, logins={"john": "47"}
    )

    def misattributed(origin: str) -> tuple[int, int]:
        report = _report(
            "t1", ["a2"], [_item("profile", "John", (origin,))], viewers=(("john", "47"),)
        )
        report.stream = "a"
        ratio = harness.score(case, [report], config="t").metrics["misattribution"]
        return ratio["hits"], ratio["total"]

    assert misattributed("b1") == (0, 1)
    assert misattributed("a1") == (1, 1)
