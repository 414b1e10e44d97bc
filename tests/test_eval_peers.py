"""Peers in the same run: BM25 and dense baselines on the same probes, the gate against them, the
filter's evidence and noise shares, and each stream's last batch answered when the stream ends."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from memory import models
from memory.eval import filtering, harness, peers, suite, synthetic
from memory.spaces import embedders

if TYPE_CHECKING:
    from pathlib import Path

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _event(
    mid: str, user: str, name: str, text: str, minute: int, stream: str = "s"
) -> models.ChatEvent:
    return models.ChatEvent(
        id=mid, stream=stream, user_id=user, login=name.lower(), name=name, text=text,
        ts=T0 + timedelta(minutes=minute),
    )  # fmt: skip


def _case() -> harness.Case:
    events = (
        _event("m1", "1", "Caroline", "I went to the LGBTQ support group yesterday", 0),
        _event("m2", "2", "Melanie", "I painted a sunrise over the lake", 1),
        _event("m3", "1", "Caroline", "My friends gave me so much support", 2),
        _event("q1", "9", "Quiz", "@Mnemo what did Melanie say about the sunrise?", 3),
        _event("m4", "2", "Melanie", "I painted a lake again later", 4),  # after the question
    )
    probe = harness.Probe(
        message_id="q1", asker_id="9", target_id="2", evidence_ids=("m2",), kind="cat4"
    )
    return harness.Case(
        name="t", events=events, probes=(probe,), authors={e.id: e.user_id for e in events}
    )


async def test_peers_rank_the_messages_said_before_the_probe() -> None:
    results, skipped = await peers.run(_case(), embedders.OfflineHashEmbedder())
    assert skipped == {}
    by_name = {r.config: r for r in results}
    assert set(by_name) == set(peers.NAMES)
    for result in results:
        assert result.metrics["recall@1"] == 1.0, result.config  # m2, and never m4 (later)
        assert result.metrics["probes_answered"] == 1
        # its prompt: its first five items, of the three messages said before the probe
        m = result.metrics
        assert m["items_per_prompt"] == m["irrelevant_share"]["total"] <= 3
        assert m["irrelevant_share"]["hits"] == m["items_per_prompt"] - 1  # all but m2
        assert m["tokens_per_prompt"] > 0


def test_corpora_leave_out_probes_and_later_messages() -> None:
    docs, before = peers.corpora(_case())["s"]
    assert [d.id for d in docs][: before["q1"]] == ["m1", "m2", "m3"]
    assert docs[1].prefixed == "Melanie: I painted a sunrise over the lake"


def _result(config: str, recall: float) -> harness.Result:
    return harness.Result(
        case="locomo", config=config, latencies_ms=[], recall_curve={}, recall_by_kind={},
        metrics={"recall@5": recall, "misattribution": {"value": 0.0, "hits": 0, "total": 1}},
    )  # fmt: skip


def test_the_gate_fails_when_bm25_speaker_recalls_more() -> None:
    synth = dataclasses.replace(_result("full", 0.9), case="synthetic")
    ok = [synth, _result("full", 0.5), _result(peers.BM25_SPEAKER, 0.5)]
    assert suite.gate(ok, None) == []
    below = [synth, _result("full", 0.4), _result(peers.BM25_SPEAKER, 0.5)]
    [failure] = suite.gate(below, None)
    assert "locomo recall@5 0.400 is below bm25_speaker's 0.500" in failure


def test_filter_shares_on_the_synthetic_stream() -> None:
    case = harness.from_synthetic(synthetic.generate(seed=3, viewers=6))
    shares = filtering.shares(case)
    assert shares["noise_stored"]["total"] > 100
    assert shares["noise_stored"]["value"] <= 0.05
    assert shares["evidence_kept"]["value"] >= 0.95


async def test_each_stream_s_last_batch_is_answered_when_the_stream_ends(
    database_url: str, tmp_path: Path
) -> None:
    """Stream a's last message is answered before stream b's first (not at the very end)."""
    events = (
        _event("a1", "1", "Ann", "I live in Rome", 0, stream="a"),
        _event("a2", "1", "Ann", "@Mnemo where do I live?", 1, stream="a"),
        _event("b1", "2", "Bob", "I live in Oslo", 0, stream="b"),
        _event("b2", "2", "Bob", "I work in a bakery", 1, stream="b"),
    )
    case = harness.Case(name="t", events=events, authors={e.id: e.user_id for e in events})
    settings = harness.eval_settings(tmp_path, database_url=database_url)
    reports = await harness.run_full(case, settings)
    # before: a2 waited in its open batch until the whole replay ended, after b1
    assert [r.message_ids for r in reports] == [["a1"], ["a2"], ["b1"], ["b2"]]
