"""``python -m memory.eval bench --scale`` at a tiny size: its pieces run (figures are not checked)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from memory.eval import REPO_ROOT, harness, scale
from tests.cli import ROOT


async def test_ingest_cost_fills_turns_and_times_messages(database_url: str) -> None:
    rows = await scale.ingest_cost([20, 50], messages=3, database_url=database_url)
    assert [r["turns"] for r in rows] == [20, 50]
    assert all(r["ms_p50"] > 0 for r in rows)


async def test_the_memory_stage_is_timed_cold_warm_and_opened_in_the_batch_window(
    database_url: str, tmp_path: Path
) -> None:
    settings = harness.eval_settings(tmp_path, database_url=database_url)
    await scale.build_audience(settings, 8, 2)
    stage = await scale.memory_stage(settings, 8)
    assert set(stage) == {"cold", "warm", "window", "window_last_at_close", "window_opening"}
    assert all(0 < stage[k]["p50"] <= stage[k]["p95"] for k in stage)
    text = scale.text_report({
        "audience": [{"viewers": 8, "memories_per_viewer": 2, "build_s": 1.0,
                      "first_memory_ms": {"p50": 1.0, "p95": 2.0}, "memory_stage_ms": stage,
                      "startup": TIMING, "inspect": TIMING}],
        "ingest": [], "consolidation": {"messages": 1, "messages_per_s": 1.0}, "redis": None,
    })  # fmt: skip
    window = stage["window"]
    assert f"| {window['p50']:.1f} / {window['p95']:.1f} |" in text
    assert (await scale.first_memory(settings, 100))["p50"] > 0


TIMING = {"seconds_min": 1.0, "seconds_median": 1.5, "rss_mb_max": 100.0}


def test_the_report_has_a_row_per_size() -> None:
    timing = {"seconds_min": 1.0, "seconds_median": 1.5, "rss_mb_max": 100.0}
    stage = {"cold": {"p50": 3.0, "p95": 9.0}, "warm": {"p50": 0.5, "p95": 0.9}}
    data: dict[str, Any] = {
        "audience": [
            {"viewers": n, "memories_per_viewer": 10, "build_s": 1.0, "startup": timing,
             "inspect": timing, "first_memory_ms": {"p50": 20.0, "p95": 30.0},
             "memory_stage_ms": stage}
            for n in (1_000, 10_000)
        ],
        "ingest": [{"turns": 1_000, "ms_p50": 2.0, "ms_p95": 3.0}],
        "consolidation": {"messages": 100, "messages_per_s": 200.0},
        "redis": None,
    }  # fmt: skip
    text = scale.text_report(data)
    assert "| 1,000 × 10 |" in text and "| 10,000 × 10 |" in text
    assert "REDIS_URL unset" in text


def test_the_plotted_rows_name_their_store_and_source_and_hold_every_plotted_cost() -> None:
    """``docs/evaluation/scale_points.json`` feeds the log-log plot (``scripts/plot_scale.py``):
    each row says which store it measured and where its figures come from."""
    points = json.loads((ROOT / "docs" / "evaluation" / "scale_points.json").read_text("utf-8"))
    series: dict[str, list[dict[str, Any]]] = {}
    for row in points["audience"]:
        assert row["series"] and row["source"]
        series.setdefault(row["series"], []).append(row)
        assert row["memory_stage_ms"]["cold"]["p95"] > 0
    assert {"local mode", "Qdrant Edge"} <= set(series)
    for rows in series.values():
        costs = scale._audience_costs(rows)
        assert all(v is None or v > 0 for _, values in costs for v in values)
        assert sorted(r["viewers"] for r in rows) == [r["viewers"] for r in rows]
    assert all(r["ms_p50"] <= r["ms_p95"] for r in points["ingest"])


def test_start_ups_are_measured_with_the_checkout_compiled() -> None:
    """As a user's second start finds it, whatever PYTHONDONTWRITEBYTECODE says here."""
    scale.bytecode_cached()
    for package in scale.PACKAGES:
        for source in (REPO_ROOT / package).rglob("*.py"):
            assert Path(importlib.util.cache_from_source(str(source))).is_file(), source
