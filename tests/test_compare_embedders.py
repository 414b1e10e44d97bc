"""``scripts/compare_embedders.py``: its figures with the offline embedder on the regulars corpus,
and an embedder that is not installed reported as skipped, not raised."""

from __future__ import annotations

import collections
import json
from typing import TYPE_CHECKING, Any

import pytest

from memory.eval import regulars
from scripts import compare_embedders
from tests.cli import ROOT

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(scope="module")
def corpus() -> regulars.Corpus:
    return regulars.load()


async def test_the_offline_embedder_gets_every_figure(corpus: regulars.Corpus) -> None:
    result: dict[str, Any] = await compare_embedders.measure("offline", corpus)
    assert "skipped" not in result and result["name"] == "offline-hash-v1:384"
    asked = len(corpus.questions)
    assert result["questions"] == asked
    top3 = result["top3"]
    assert isinstance(top3["all"]["hits"], int) and 0 <= top3["all"]["hits"] <= asked
    assert top3["all"]["total"] == asked
    per = collections.Counter(q.category for q in corpus.questions)
    assert [top3[c]["total"] for c in regulars.CATEGORIES] == [per[c] for c in regulars.CATEGORIES]
    parts = collections.Counter(q.half for q in corpus.questions)
    assert [top3[h]["total"] for h in regulars.PARTS] == [parts[h] for h in regulars.PARTS]
    assert sum(top3[c]["hits"] for c in regulars.CATEGORIES) == top3["all"]["hits"]
    with_distractors = sum(1 for q in corpus.questions if q.distractors)
    assert 0 <= result["distractor_above"]["hits"] <= result["distractor_above"]["total"]
    assert result["distractor_above"]["total"] == with_distractors
    assert result["mean_answer_rank"] >= 1.0
    assert 0 <= result["query_ms_p50"] <= result["query_ms_p95"]
    assert result["passages_per_s"] > 0 and result["rss_after_load_mb"] > 0
    assert result["disk"] is None  # part of the project itself
    table = compare_embedders.table([result])
    assert "| answer in top 3 |" in table and f"{top3['all']['hits']}/{asked}" in table


async def test_an_embedder_not_installed_is_skipped_with_one_line(
    corpus: regulars.Corpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(compare_embedders.NEEDS, "wordllama", ("no_such_module",))
    result = await compare_embedders.measure("wordllama", corpus)
    assert result == {"embedder": "wordllama", "skipped": "not installed: no_such_module"}
    unknown = await compare_embedders.measure("nope", corpus)
    assert unknown["skipped"] == "unknown embedder 'nope'"
    lines = compare_embedders.table([result, unknown]).splitlines()
    assert "wordllama: skipped (not installed: no_such_module)" in lines


def test_the_script_writes_its_figures_and_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the child process imports this checkout
    out = tmp_path / "figures.json"
    assert compare_embedders.main(["--embedders", "offline,nope", "--out", str(out)]) == 0
    figures = json.loads(out.read_text(encoding="utf-8"))
    offline, nope = figures["results"]
    assert offline["embedder"] == "offline" and 0 <= offline["top3"]["all"]["hits"] <= 48
    assert nope == {"embedder": "nope", "skipped": "unknown embedder 'nope'"}
    printed = capsys.readouterr().out
    assert "| | offline-hash-v1:384 |" in printed and "nope: skipped" in printed
