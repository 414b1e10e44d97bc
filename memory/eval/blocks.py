"""The generated blocks of ``docs/evaluation.md``, made from saved results (``--json`` files).

A results file is what ``python -m memory.eval quality|report|bench --json FILE`` writes: the
results of each case (``harness.Result.to_json``), and ``meta`` (the command, the embedder, the
commit, when it ended and how long it ran). ``render`` turns a list of them into the Markdown of
each block whose figures they hold; a block is left alone when no file holds its figures.

The same case measured with the same embedder in two files: the later file's figures are shown.
The peers that do not depend on the embedder (BM25) are shown once per case.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from memory.eval import ablations as ablations_module
from memory.eval import harness, locomo, longmemeval_run, regulars, report

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

#: every block the report generates, in document order
KNOWN = (
    "runs", "synthetic", "synthetic-kinds", "locomo", "locomo-categories", "locomo-halves",
    "longmemeval", "longmemeval-halves", "irc", "regulars", "precision", "ablations", "bench",
    "scale", "store",
)  # fmt: skip
#: the blocks of the README (its table of headline figures)
README_BLOCKS = ("headline",)
UNKNOWN_EMBEDDER = "embedder not recorded"
#: the embedder the bot uses by default: its figures are the headline when it was measured
DEFAULT_EMBEDDER_PREFIX = "e5"


class ResultsError(ValueError):
    """A results file that cannot be read (missing, not JSON, or not a results file)."""


@dataclass
class Run:
    """One results file."""

    path: str
    meta: dict[str, Any]
    results: list[harness.Result] = field(default_factory=list)
    ablations: list[dict[str, Any]] = field(default_factory=list)
    bench: dict[str, Any] | None = None
    scale: dict[str, Any] | None = None
    #: ``scripts/bench_store.py --json``: one audience measured
    store: dict[str, Any] | None = None

    @property
    def embedder(self) -> str:
        return str(self.meta.get("embedder") or UNKNOWN_EMBEDDER)


def result_from_json(data: dict[str, Any]) -> harness.Result:
    return harness.Result(
        case=data["case"],
        config=data["config"],
        metrics=data["metrics"],
        latencies_ms=list(data.get("latencies_ms", [])),
        recall_curve={int(k): v for k, v in data.get("recall_curve", {}).items()},
        recall_by_kind={
            kind: {int(k): v for k, v in curve.items()}
            for kind, curve in data.get("recall_by_kind", {}).items()
        },
    )


def load(path: Path) -> Run:
    """A results file. Raises ``ResultsError`` with the path and what is wrong."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ResultsError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    except ValueError as exc:
        raise ResultsError(f"{path}: not JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: not a results file (a JSON object expected)")
    run = Run(path=str(path), meta=dict(data.get("meta") or {}))
    if "memories_per_viewer" in data and "memory_stage_ms" in data:  # ``bench_store.py --json``
        run.store = data
        return run
    if "audience" in data and "results" not in data:  # ``bench --scale --json``
        run.scale = data
        return run
    if "latency" in data and "results" not in data:  # ``bench --json``
        run.bench = data
        return run
    if not any(key in data for key in ("results", "ablations", "bench")):
        raise ResultsError(f"{path}: not a results file (no results, ablations or bench)")
    try:
        run.results = [result_from_json(r) for r in data.get("results") or []]
    except (KeyError, TypeError, AttributeError) as exc:
        raise ResultsError(f"{path}: a result without {exc}") from exc
    run.ablations = list(data.get("ablations") or [])
    run.bench = data.get("bench") or None
    return run


# -- picking what each block shows ------------------------------------------------------------


def groups(runs: Sequence[Run], case: str) -> list[tuple[Run, list[harness.Result]]]:
    """One group per embedder that measured ``case``: the latest file's results for it, in the
    order the embedders first appear; the BM25 peers only in the first group."""
    chosen: dict[str, tuple[Run, list[harness.Result]]] = {}
    for run in runs:
        found = [r for r in run.results if r.case == case]
        if found:
            chosen[run.embedder] = (run, found)
    out: list[tuple[Run, list[harness.Result]]] = []
    for run, found in chosen.values():
        if out:
            found = [r for r in found if not r.config.startswith("bm25")]
        out.append((run, found))
    return out


def source_line(run: Run) -> str:
    """Where a group's figures come from: the command, the commit, when, how long."""
    meta = run.meta
    bits = [f"`{meta['command']}`" if meta.get("command") else f"`{run.path}`"]
    if meta.get("commit"):
        bits.append(f"commit {meta['commit']}")
    if meta.get("finished_at"):
        bits.append(str(meta["finished_at"])[:10])
    if meta.get("wall_seconds") is not None:
        bits.append(f"{duration(meta['wall_seconds'])} for the whole command")
    return "; ".join(bits)


def duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def grouped(runs: Sequence[Run], case: str, render: Callable[[list[harness.Result]], str]) -> str:
    """Per embedder: a line naming it and its command, then ``render`` of its results."""
    parts = []
    for run, found in groups(runs, case):
        if found:
            parts += [f"Embedder `{run.embedder}` ({source_line(run)}):", "", render(found), ""]
    return "\n".join(parts)


# -- the tables ----------------------------------------------------------------------------------

RECALL_COLUMNS = (
    ("probes", "probes_answered"),
    ("R@1", "recall@1"),
    ("R@5", "recall@5"),
    ("R@10", "recall@10"),
    ("misattribution", "misattribution"),
)
SYNTHETIC_COLUMNS = (
    ("episodic R", "episodic_recall"),
    ("target planned", "target_planned"),
    ("evidence kept", "evidence_kept"),
    ("noise stored", "noise_stored"),
    ("tokens/naive", "token_ratio"),
)
PRECISION_COLUMNS = (
    ("P@5", "precision@5"),
    ("irrelevant", "irrelevant_share"),
    ("items/prompt", "items_per_prompt"),
    ("tokens/prompt", "tokens_per_prompt"),
)
IRC_COLUMNS = (
    ("turns", "turns"),
    ("misattribution", "misattribution"),
    ("degraded", "degraded_turns"),
    ("tokens/naive", "token_ratio"),
)


def latency(result: harness.Result) -> list[Any]:
    if result.metrics.get("peer"):
        return [None, None]  # a peer's time is its query alone: not comparable
    ms = result.metrics.get("latency_ms") or {}
    return [ms.get("p50"), ms.get("p95")]


def metric_table(
    results: Sequence[harness.Result], columns: Sequence[tuple[str, str]], *, timed: bool = False
) -> str:
    rows = [
        [r.config, *(r.metrics.get(key) for _, key in columns), *(latency(r) if timed else [])]
        for r in results
    ]
    extra = ["mem p50 ms", "mem p95 ms"] if timed else []
    return report.table(["system", *(t for t, _ in columns), *extra], rows)


def kinds_table(results: Sequence[harness.Result]) -> str:
    rows = [
        [r.config, kind, curve.get(1), curve.get(5), curve.get(10)]
        for r in results
        for kind, curve in r.recall_by_kind.items()
    ]
    return report.table(["system", "probe kind", "R@1", "R@5", "R@10"], rows)


def locomo_categories(results: Sequence[harness.Result]) -> str:
    rows = [
        [r.config, f"{kind} ({locomo.CATEGORIES.get(int(kind[3:]), '?')})", curve.get(1),
         curve.get(5), curve.get(10)]
        for r in results
        for kind, curve in r.recall_by_kind.items() if kind.startswith("cat")
    ]  # fmt: skip
    return report.table(["system", "category", "R@1", "R@5", "R@10"], rows)


def precision(runs: Sequence[Run]) -> str:
    rows = []
    for case in ("synthetic", "locomo", "irc"):
        for run, found in groups(runs, case):
            rows += [
                [case, run.embedder, r.config, *(r.metrics.get(k) for _, k in PRECISION_COLUMNS)]
                for r in found
            ]
    if not rows:
        return ""
    headers = ["data", "embedder", "system", *(t for t, _ in PRECISION_COLUMNS)]
    return report.table(headers, rows)


def ablations(runs: Sequence[Run]) -> str:
    run = next((r for r in reversed(runs) if r.ablations), None)
    if run is None:
        return ""
    rows = []
    for row in run.ablations:
        result = row.get("result")
        if result is None:
            rows.append([row["name"], row["description"], f"skipped: {row.get('skipped')}",
                         None, None, None, None])  # fmt: skip
            continue
        m = result["metrics"]
        rows.append([row["name"], row["description"], m.get("recall@5"), m.get("misattribution"),
                     m.get("irrelevant_share"), m.get("episodic_recall"),
                     (m.get("latency_ms") or {}).get("p95")])  # fmt: skip
    headers = ["ablation", "what", "R@5", "misattribution", "irrelevant", "episodic R",
               "mem p95 ms"]  # fmt: skip
    return "\n".join([f"From {source_line(run)}:", "", report.table(headers, rows)])


def runs_table(runs: Sequence[Run]) -> str:
    rows = [
        [f"`{r.meta.get('command') or r.path}`", r.embedder, r.meta.get("commit"),
         str(r.meta.get("finished_at") or "")[:16].replace("T", " ") or None,
         duration(r.meta["wall_seconds"]) if r.meta.get("wall_seconds") is not None else None,
         _machine(r.meta.get("hardware"))]
        for r in runs
    ]  # fmt: skip
    return report.table(["command", "embedder", "commit", "ended (UTC)", "ran", "machine"], rows)


def store_table(runs: Sequence[Run]) -> str:
    """``scripts/bench_store.py`` rows, one per audience size (the latest file for a size)."""
    rows = {(r.store["viewers"], r.store["memories_per_viewer"]): r for r in runs if r.store}
    if not rows:
        return ""

    def pair(figures: Any, digits: int = 2) -> str:
        if not isinstance(figures, dict):
            return "n/a"
        return f"{figures['p50']:.{digits}f} / {figures['p95']:.{digits}f}"

    lines, sources = [], []
    for (viewers, memories), run in sorted(rows.items()):
        r = run.store or {}
        s, i, m = r["startup"], r["inspect"], r["memory_stage_ms"]
        lines.append([
            f"{viewers:,} × {memories}", f"{r.get('disk_mb', 0):,.0f}",
            f"{s['seconds_median']:.2f} / {s['seconds_min']:.2f}", f"{s['rss_mb_max']:.0f}",
            f"{i['seconds_median']:.2f} / {i['seconds_min']:.2f}", f"{i['rss_mb_max']:.0f}",
            pair(r.get("first_memory_ms")), pair(m.get("cold")), pair(m.get("warm")),
            pair(m.get("window")), f"{r.get('cpu_probe_ms', 0):.0f}",
            " / ".join(f"{x:.1f}" for x in r.get("load_before", [])[:1] + r.get("load_after", [])[:1]),
        ])  # fmt: skip
        sources.append(f"- {viewers:,} × {memories}: {source_line(run)}")
    headers = ["viewers × memories", "disk MB", "start-up median / min s", "start-up RSS MB",
               "inspect median / min s", "inspect RSS MB", "first memory p50 / p95 ms",
               "cold stage p50 / p95 ms", "warm p50 / p95 ms", "opened in the window p50 / p95 ms",
               "cpu_probe_ms", "load before / after"]  # fmt: skip
    return "\n".join([report.table(headers, lines), "", *sources])


def commit() -> str | None:
    """The checkout's commit (``-dirty`` with uncommitted changes to tracked files), None
    outside a git checkout."""
    import subprocess

    from memory.eval import REPO_ROOT

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True,
                              text=True, check=True, timeout=10)  # fmt: skip
        return done.stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}-dirty" if dirty else head


def _machine(hardware: Any) -> str | None:
    if not isinstance(hardware, dict):
        return None
    return f"{hardware.get('cores', '?')} cores, {hardware.get('ram_gb', '?')} GB, Python {hardware.get('python', '?')}"


def _from(run: Run | None, text: str) -> str:
    return "" if run is None else f"From {source_line(run)}:\n\n{text}"


def render(runs: Sequence[Run]) -> dict[str, str]:
    """The Markdown of every block ``runs`` hold figures for (the others are absent)."""
    from memory.eval import bench, scale

    def case(name: str, render_: Callable[[list[harness.Result]], str]) -> str:
        return grouped(runs, name, render_)

    bench_run = next((r for r in reversed(runs) if r.bench), None)
    scale_run = next((r for r in reversed(runs) if r.scale), None)
    made = {
        "runs": runs_table(runs) if runs else "",
        "synthetic": case("synthetic", lambda rs: metric_table(
            rs, (*RECALL_COLUMNS, *SYNTHETIC_COLUMNS), timed=True)),
        "synthetic-kinds": case("synthetic", kinds_table),
        "locomo": case("locomo", lambda rs: metric_table(rs, RECALL_COLUMNS, timed=True)),
        "locomo-categories": case("locomo", locomo_categories),
        "locomo-halves": case("locomo", report.half_table),
        "longmemeval": case(longmemeval_run.CASE, longmemeval_run.type_table),
        "longmemeval-halves": case(longmemeval_run.CASE, longmemeval_run.half_table),
        "irc": case("irc", lambda rs: metric_table(rs, IRC_COLUMNS, timed=True)),
        "regulars": case(regulars.CASE, regulars.table),
        "precision": precision(runs),
        "ablations": ablations(runs),
        "bench": _from(bench_run, bench.text_report(bench_run.bench)) if bench_run and bench_run.bench else "",
        "store": store_table(runs),
        "scale": _from(scale_run, scale.text_report(scale_run.scale)) if scale_run and scale_run.scale else "",
    }  # fmt: skip
    return {name: text for name, text in made.items() if text.strip()}


def headline_group(runs: Sequence[Run], case: str) -> tuple[Run, list[harness.Result]] | None:
    """The figures of ``case`` the README shows: the default embedder's when it was measured,
    else the first embedder's; the BM25 peers come from wherever they were measured."""
    found = groups(runs, case)
    if not found:
        return None
    run, results = next(
        (g for g in found if g[0].embedder.startswith(DEFAULT_EMBEDDER_PREFIX)), found[0]
    )
    peers = [r for _, rs in found for r in rs if r.config.startswith("bm25")]
    return run, [*results, *(p for p in peers if p not in results)]


def _config(results: Sequence[harness.Result], config: str) -> dict[str, Any]:
    return next((r.metrics for r in results if r.config == config), {})


def _count(value: Any) -> str:
    if isinstance(value, dict) and "hits" in value:
        return f"{value['hits']:,} of {value['total']:,}"
    return report.fmt(value)


def headline(runs: Sequence[Run]) -> str:
    """The README's table: one row a benchmark, the system beside its strongest simple peer."""
    rows = []
    for case, what, key, peer in (
        ("synthetic", "synthetic multi-viewer stream: recall@5", "recall@5", "bm25_speaker"),
        ("locomo", "LoCoMo: recall@5", "recall@5", "bm25_speaker"),
        (longmemeval_run.CASE, "LongMemEval: turn recall_all@5", "turn_all@5",
         longmemeval_run.BM25_ALL),
        (regulars.CASE, "regulars corpus: answer in the top 3", "answer_top3", "bm25_speaker"),
    ):  # fmt: skip
        group = headline_group(runs, case)
        if group is None:
            rows.append([what, "not measured on this code", "", "", "", ""])
            continue
        run, results = group
        ours, theirs = _config(results, "full"), _config(results, peer)
        asked = ours.get("probes_answered", ours.get("questions"))
        what = f"{what} ({asked:,} questions)" if isinstance(asked, int) else what
        rows.append([what, f"**{report.fmt(ours.get(key))}**", f"`{run.embedder}`",
                     report.fmt(theirs.get(key)) + f" ({peer})", _count(ours.get("misattribution")),
                     f"`{run.meta.get('command', run.path)}`"])  # fmt: skip
    store = [r for r in runs if r.store]
    if store:
        run = max(store, key=lambda r: (r.store or {}).get("viewers", 0))
        row = run.store or {}
        cold = row["memory_stage_ms"]["cold"]
        rows.append([f"memory stage, {row['viewers']:,} viewers × {row['memories_per_viewer']}: cold p95",
                     f"**{cold['p95']:.1f} ms**", "", "", "", f"`{run.meta.get('command', run.path)}`"])  # fmt: skip
    headers = ["benchmark", "livememory", "embedder", "peer, same run", "misattribution", "command"]
    note = (f"A benchmark shows the bot's default embedder ({DEFAULT_EMBEDDER_PREFIX}) where a saved "
            "run of it is there, else the embedder it was run with.")  # fmt: skip
    return "\n".join([report.table(headers, rows), "", note]).strip()


def ablation_rows(runs: Sequence[Run]) -> list[ablations_module.Row]:
    """The latest file's ablations as ``ablations.Row`` (for the plot)."""
    run = next((r for r in reversed(runs) if r.ablations), None)
    if run is None:
        return []
    return [
        ablations_module.Row(
            ablation=ablations_module.Ablation(
                name=row["name"],
                description=row["description"],
                overrides=row.get("overrides") or {},
            ),
            result=result_from_json(row["result"]) if row.get("result") else None,
            skipped=row.get("skipped"),
        )
        for row in run.ablations
    ]


def plotted(runs: Sequence[Run]) -> list[harness.Result]:
    """Every shown result, its config naming its embedder (the plots' labels)."""
    out = []
    for name in ("synthetic", "locomo", "irc", regulars.CASE):
        for run, found in groups(runs, name):
            out += [replace(r, config=f"{r.config}, {run.embedder.split(':')[0]}") for r in found]
    return out
