"""Tables for the console and ``docs/evaluation.md`` with PNG plots (matplotlib, the ``report`` extra).

Everything here formats results that were already computed (``harness.Result``, ``ablations.Row``,
the bench's dicts); nothing runs the system.
"""

from __future__ import annotations

import os
import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from memory.eval import ablations, harness

PLOTS_DIR = "evaluation"


class PlotsUnavailable(RuntimeError):
    """matplotlib is not installed: ``pip install 'livememory[report]'`` (or ``pip install matplotlib``)."""


def fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, dict) and "value" in value:
        shown = fmt(value["value"], digits)
        return f"{shown} ({value['hits']}/{value['total']})"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table (readable as is in a terminal)."""
    cells = [[fmt(c) for c in row] for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    line = "| " + " | ".join(str(h).ljust(w) for h, w in zip(headers, widths, strict=True)) + " |"
    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in cells
    ]
    return "\n".join([line, rule, *body])


QUALITY_COLUMNS = (
    ("turns", "turns"),
    ("probes", "probes_answered"),
    ("R@1", "recall@1"),
    ("R@5", "recall@5"),
    ("R@10", "recall@10"),
    ("P@5", "precision@5"),
    ("misattribution", "misattribution"),
    ("irrelevant", "irrelevant_share"),
    ("items/prompt", "items_per_prompt"),
    ("tokens/prompt", "tokens_per_prompt"),
    ("episodic R", "episodic_recall"),
    ("target planned", "target_planned"),
    ("mem p50 ms", None),
    ("mem p95 ms", None),
    ("degraded", "degraded_turns"),
    ("tokens/naive", "token_ratio"),
    ("evidence kept", "evidence_kept"),
    ("noise stored", "noise_stored"),
)


def quality_table(results: Sequence[harness.Result]) -> str:
    rows = []
    for result in results:
        m = result.metrics
        row: list[Any] = [result.case, result.config]
        for title, key in QUALITY_COLUMNS:
            if title == "mem p50 ms":
                row.append(m.get("latency_ms", {}).get("p50"))
            elif title == "mem p95 ms":
                row.append(m.get("latency_ms", {}).get("p95"))
            else:
                row.append(m.get(key or ""))
        rows.append(row)
    return table(["data", "config", *(t for t, _ in QUALITY_COLUMNS)], rows)


HALF_COLUMNS = (
    ("probes", "probes"),
    ("R@5", "recall@5"),
    ("P@5", "precision@5"),
    ("irrelevant", "irrelevant_share"),
    ("items/prompt", "items_per_prompt"),
)


def half_table(results: Sequence[harness.Result]) -> str:
    """Per half of each split case (LoCoMo: dev, held-out), one row per system ("" when no case
    is split)."""
    rows = [
        [result.case, result.config, half, *(values.get(key) for _, key in HALF_COLUMNS)]
        for result in results
        for half, values in result.metrics.get("by_half", {}).items()
        if result.case not in ("longmemeval", "regulars")
    ]
    if not rows:
        return ""
    return table(["data", "config", "half", *(t for t, _ in HALF_COLUMNS)], rows)


def by_kind_table(results: Sequence[harness.Result]) -> str:
    rows = []
    for result in results:
        for kind, curve in result.recall_by_kind.items():
            rows.append(
                [result.case, result.config, kind, curve.get(1), curve.get(5), curve.get(10)]
            )
    return table(["data", "config", "probe kind", "R@1", "R@5", "R@10"], rows)


def ablation_table(rows: Sequence[ablations.Row]) -> str:
    out = []
    for row in rows:
        if row.result is None:
            out.append([row.ablation.name, row.ablation.description, f"skipped: {row.skipped}",
                        None, None, None, None, None])  # fmt: skip
            continue
        m = row.result.metrics
        out.append([row.ablation.name, row.ablation.description, m["recall@5"], m["misattribution"],
                    m["irrelevant_share"], m["episodic_recall"], m["latency_ms"]["p95"], m["token_ratio"]])  # fmt: skip
    return table(["ablation", "what", "R@5", "misattribution", "irrelevant", "episodic R",
                  "mem p95 ms", "tokens/naive"], out)  # fmt: skip


def hardware() -> dict[str, Any]:
    """CPU model, cores, RAM and Python, from ``/proc`` where available."""
    info: dict[str, Any] = {
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "system": platform.platform(),
    }
    cpuinfo, meminfo = Path("/proc/cpuinfo"), Path("/proc/meminfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.partition(":")[2].strip()
                break
    if meminfo.is_file():
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal"):
                info["ram_gb"] = round(int(line.split()[1]) / 1024 / 1024, 1)
                break
    return info


# -- plots --------------------------------------------------------------------------------------


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:
        raise PlotsUnavailable(PlotsUnavailable.__doc__) from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plots(
    out_dir: Path,
    results: Sequence[harness.Result],
    rows: Sequence[ablations.Row],
    bench: Mapping[str, Any] | None,
) -> list[Path]:
    """Latency histograms, recall@k curves, ablation bars (and bench latency vs size) as PNGs."""
    plt = _pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    fig, ax = plt.subplots(figsize=(7, 4))
    timed = [
        r for r in results if r.latencies_ms and not r.metrics.get("peer")
    ]  # peers: query only
    ceiling = max((sorted(r.latencies_ms)[int(0.99 * (len(r.latencies_ms) - 1))] for r in timed),
                  default=1.0)  # fmt: skip
    for result in timed:
        ax.hist([min(v, ceiling) for v in result.latencies_ms], bins=40, range=(0, ceiling),
                density=True, histtype="step", linewidth=1.5,
                label=f"{result.case} ({result.config})")  # fmt: skip
    ax.set(xlabel="memory stage latency (ms; the slowest 1 % at the right edge)",
           ylabel="share of turns (density)", title="Memory stage latency per turn")  # fmt: skip
    ax.legend(fontsize=8)
    written.append(_save(plt, fig, out_dir / "latency_hist.png"))
    written.append(_recall_plot(plt, out_dir, results))
    ran = [row for row in rows if row.result is not None]
    if ran:
        fig, ax = plt.subplots(figsize=(8, 4))
        names = [row.ablation.name for row in ran]
        recall = [row.result.metrics["recall@5"] or 0.0 for row in ran if row.result]
        mis = [row.result.metrics["misattribution"]["value"] or 0.0 for row in ran if row.result]
        xs = range(len(names))
        ax.bar([x - 0.2 for x in xs], recall, width=0.4, label="recall@5")
        ax.bar([x + 0.2 for x in xs], mis, width=0.4, label="misattribution")
        ax.set_xticks(list(xs), names, rotation=30, ha="right")
        ax.set(ylim=(0, 1.2), title="Ablations (synthetic stream)")
        ax.legend(loc="upper center", ncol=2, fontsize=8)
        written.append(_save(plt, fig, out_dir / "ablations.png"))
    if bench and bench.get("latency"):
        written.append(_bench_plot(plt, out_dir, bench["latency"]))
    return written


def _recall_plot(plt: Any, out_dir: Path, results: Sequence[harness.Result]) -> Path:
    """Recall@k, one panel per data set, one line per system (peers dashed)."""
    cases = [c for c in dict.fromkeys(r.case for r in results)
             if any(v is not None for r in results if r.case == c for v in r.recall_curve.values())]  # fmt: skip
    fig, axes = plt.subplots(1, max(len(cases), 1), figsize=(4 * max(len(cases), 1), 3.6),
                             squeeze=False, sharey=True)  # fmt: skip
    for ax, case in zip(axes[0], cases, strict=False):
        for result in (r for r in results if r.case == case):
            ks = [k for k, v in result.recall_curve.items() if v is not None]
            style = "--" if result.metrics.get("peer") else "-"
            ax.plot(ks, [result.recall_curve[k] for k in ks], style, marker="o", markersize=3,
                    label=result.config)  # fmt: skip
        ax.set(xlabel="k", ylim=(0, 1), title=case)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("evidence recall@k")
    return _save(plt, fig, out_dir / "recall_at_k.png")


def _bench_plot(plt: Any, out_dir: Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4))
    for layout in sorted({r["layout"] for r in rows}):
        for viewers in sorted({r["viewers"] for r in rows}):
            points = [(r["memories"], r["p50_ms"]) for r in rows
                      if r["layout"] == layout and r["viewers"] == viewers and r.get("p50_ms") is not None]  # fmt: skip
            if points:
                points.sort()
                ax.plot(
                    *zip(*points, strict=True), marker="o", label=f"{layout}, {viewers} viewers"
                )
    ax.set(xscale="log", yscale="log", xlabel="stored memories", ylabel="memory stage p50 (ms)",
           title="Memory search latency vs size (embedded Qdrant)")  # fmt: skip
    ax.legend(fontsize=7)
    return _save(plt, fig, out_dir / "bench_latency.png")


def _save(plt: Any, fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# -- the document -------------------------------------------------------------------------------


def document(
    *,
    results: Sequence[harness.Result],
    rows: Sequence[ablations.Row],
    bench: Mapping[str, Any] | None,
    skipped: Mapping[str, str],
    embedder: str,
    command: str,
    images: Sequence[Path],
    doc_dir: Path,
    bench_text: str = "",
) -> str:
    hw = hardware()
    parts = [
        "# Evaluation",
        "",
        f"Generated {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} by `{command}`.",
        "",
        f"- Embedder: `{embedder}` (no chat model: replays run `--no-llm`, the prompt stands in for the reply)",
        f"- Hardware: {hw.get('cpu', 'unknown CPU')}, {hw['cores']} cores, {hw.get('ram_gb', '?')} GB RAM; "
        f"Python {hw['python']} on {hw['system']}",
        "- Stores: embedded defaults (embedded Postgres, Qdrant local mode, in-process cache and history)",
        "- Data: synthetic stream (seeded), LoCoMo (CC BY-NC 4.0, categories 1–4), #ubuntu IRC (CC BY 4.0)",
        "",
        "## Quality",
        "",
        quality_table(results),
        "",
        "Recall@k per probe kind:",
        "",
        by_kind_table(results),
        "",
        *(f"- {source} skipped: {why}" for source, why in skipped.items()),
        "",
        "## Ablations",
        "",
        ablation_table(rows) if rows else "(not run)",
        "",
        "## Benchmarks",
        "",
        bench_text or "(not run)",
        "",
        "## Figures",
        "",
        *(f"![{p.stem}]({os.path.relpath(p, doc_dir)})" for p in images),
        "",
        METHOD,
    ]
    return "\n".join(parts) + "\n"


METHOD = """## Method

- **recall@k**: share of a probe's evidence ids (gold message ids; lore ids for lore probes) covered by
  the first k recall items of the probe's turn, in prompt order (lore probes: lore items; other
  probes: the other items). LoCoMo: evidence dia_ids of categories 1–4, each question asked by a third
  viewer after the conversation; **P@5**: share of the first 5 items covering some evidence.
- **misattribution**: share of personal items (profile, targeted recall) recalled for a viewer whose
  origin messages were not all written by that viewer, over every turn.
- **irrelevant**: share of recall items of probe turns covering none of the turn's evidence;
  **items/prompt**, **tokens/prompt**: memory items of a probe turn's prompt and their tokens
  (`models.estimate_tokens`; every turn's on IRC, which has no probes). A peer's prompt is its
  first 5 items.
- **episodic R**: probes about a moment that more chat messages separate from the question than the
  loaded working history held; a hit when every evidence message was recalled.
- **target planned**: share of probes about a viewer where the planner selected that viewer.
- **peers** (`bm25`, `bm25_speaker`, `dense_speaker`; `memory/eval/peers.py`): what a user would use
  instead, scored in the same run on the same probes: BM25 (bm25s) over every message said before the
  probe, the same with each message prefixed by its speaker, and the evaluated embedder over the
  speaker-prefixed messages. They rank everyone's messages, so attribution is not scored for them.
- **evidence kept**: share of the probes' personal evidence messages that the consolidation filter
  keeps as a memory; **noise stored**: share of the synthetic gold noise (chat noise, claims about
  other viewers) it would store (`memory/eval/filtering.py`).
- **degraded**: turns where a source was dropped (timeout, error, budget); **tokens/naive**: prompt
  tokens over a naive prompt holding the whole chat history (same token estimate).
"""
