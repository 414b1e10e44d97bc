"""``python -m memory.eval [quality|ablations|bench|report|baseline] [--quick] [--data-dir DIR]``

- ``quality`` (default): the memory quality metrics (recall, precision, prompt items and tokens) on
  the synthetic stream, LoCoMo and IRC; prints a table, LoCoMo per question category and per half
  too. ``--sources regulars`` adds the regulars channel (``memory.eval.regulars``), per category
  and half. ``--sources longmemeval`` (not a default source) replays LongMemEval's development part
  and prints it per question type and per half (``memory.eval.longmemeval_run``;
  ``--longmemeval-first``, ``--longmemeval-types``, ``--longmemeval-half``, ``--longmemeval-file``,
  ``--jobs``). The embedder's vectors are kept across runs (``--embed-cache``,
  ``memory.eval.embed_cache``). With ``--quick`` it is the CI gate: exit 1 when misattribution on the synthetic stream is
  above 0 or its recall@5 is below the recorded baseline (``memory/eval/baseline.json``) minus the
  tolerance, with a ``GATE FAIL:`` line saying which.
- ``ablations``: the full system against versions each missing one piece (synthetic stream).
- ``bench``: latency / throughput figures (not a test). ``bench --scale``: costs against the
  audience and the stored turns (``memory.eval.scale``; ``--viewers``, ``--memories``, ``--turns``,
  ``--redis-url``, ``--plot``).
- ``report``: rewrites the generated blocks of ``docs/evaluation.md`` (``memory.eval.markers``,
  ``memory.eval.blocks``) and its PNG plots. ``--from FILE`` (repeatable): from saved ``--json``
  results, without running anything; without it, from a fresh run of quality (the default
  sources, and the naive design on the synthetic stream), ablations and bench. Only the blocks
  whose figures it has are rewritten; the prose around them is left as it is.
- ``baseline``: run the quick quality evaluation and record ``baseline.json``.

Exit codes: 0 done (gate passed), 1 gate failed, 2 the evaluation could not run, 130 interrupted
(Ctrl-C, SIGTERM or SIGHUP: the run's temporary data folders are removed and their embedded
Postgres stopped; no results are written).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory import errors, stopping
from memory.eval import (
    REPO_ROOT,
    ablations,
    blocks,
    default_data_dir,
    embed_cache,
    harness,
    longmemeval,
    longmemeval_run,
    markers,
    regulars,
    report,
    suite,
)

EXIT_OK, EXIT_GATE, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED = stopping.EXIT_INTERRUPTED
COMMANDS = ("quality", "ablations", "bench", "report", "baseline")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m memory.eval", description=__doc__.splitlines()[0])
    p.add_argument("command", nargs="?", default="quality", choices=COMMANDS)
    p.add_argument("--quick", action="store_true", help="small and fast (CI)")
    p.add_argument(
        "--data-dir", type=Path, default=None, help="shared data (default: <repo>/../shared/data)"
    )
    p.add_argument(
        "--sources",
        default=",".join(suite.SOURCES),
        help="comma-separated: synthetic,locomo,irc (default), regulars, longmemeval",
    )
    p.add_argument(
        "--system", choices=("full", "naive"), default="full", help="quality: the system evaluated"
    )
    p.add_argument(
        "--embedder",
        choices=("offline", "e5", "minilm", "ollama", "auto"),
        default=harness.DEFAULT_EMBEDDER,
        help="the embedder of the system and of the dense peer (ollama/auto read OLLAMA_HOST)",
    )
    p.add_argument(
        "--locomo-first",
        type=int,
        default=None,
        metavar="N",
        help="full runs: only LoCoMo's first N conversations (a development subset; 1 = conv-26)",
    )
    p.add_argument(
        "--locomo-half",
        choices=tuple(suite.LOCOMO_HALVES),
        default=None,
        help="full runs: LoCoMo's development half (conversations 1-5, for tuning) or the "
        "held-out half (6-10, for reporting)",
    )
    p.add_argument(
        "--longmemeval-first",
        type=int,
        default=None,
        metavar="N",
        help="LongMemEval: only the first N questions (abstention questions are never scored)",
    )
    p.add_argument(
        "--longmemeval-types",
        default=None,
        metavar="T,…",
        help=f"LongMemEval: only these question types ({', '.join(longmemeval.TYPES)})",
    )
    p.add_argument(
        "--longmemeval-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="LongMemEval: this data file (same layout) instead of "
        f"<data dir>/{longmemeval.RELATIVE_PATH}",
    )
    p.add_argument(
        "--longmemeval-half",
        choices=longmemeval.HALVES,
        default=None,
        help="LongMemEval: only one half of the development part, by a stable hash of the "
        "question id (tune: to choose on; report: to report on); every run prints both halves "
        "and the whole of what it replayed",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="LongMemEval: replay N chunks of questions at once, each in a process of its own",
    )
    p.add_argument(
        "--embed-cache",
        type=Path,
        default=embed_cache.DEFAULT_ROOT,
        metavar="DIR",
        help="keep the embedder's vectors here across runs, by embedder name, version, kind and "
        "text (default: %(default)s; the offline hashing embedder is never cached)",
    )
    p.add_argument(
        "--no-embed-cache", action="store_true", help="embed every text again (no cache)"
    )
    p.add_argument(
        "--sparse-scheme",
        choices=("lexical", "qdrant-bm25"),
        default=None,
        help="quality: the system's sparse scheme (memory.sparse_scheme; default: the setting's)",
    )
    p.add_argument(
        "--no-peers", action="store_true", help="skip the peer systems (BM25, dense) on the probes"
    )
    p.add_argument("--json", type=Path, default=None, help="also write the results as JSON here")
    p.add_argument(
        "--out",
        type=Path,
        default=REPO_ROOT / "docs" / "evaluation.md",
        help="report: the document",
    )
    p.add_argument("--no-bench", action="store_true", help="report: skip the benchmarks")
    p.add_argument(
        "--from",
        dest="from_files",
        type=Path,
        action="extend",
        nargs="+",
        default=None,
        metavar="FILE",
        help="report: the saved --json results of earlier runs (e.g. docs/evaluation/runs/*.json; "
        "a later file's figures replace an earlier one's for the same data and embedder); "
        "nothing is run",
    )
    p.add_argument(
        "--bench-from", type=Path, default=None, help="report: reuse the bench of an earlier --json"
    )
    p.add_argument("--no-gate", action="store_true", help="quality --quick: print, never fail")
    p.add_argument(
        "--scale", action="store_true", help="bench: costs against audience and stored turns"
    )
    p.add_argument("--viewers", type=int, nargs="+", default=None, help="bench --scale: audiences")
    p.add_argument("--memories", type=int, default=None, help="bench --scale: memories a viewer")
    p.add_argument("--turns", type=int, nargs="+", default=None, help="bench --scale: stored turns")
    p.add_argument("--redis-url", default=None, help="bench --scale: Redis for Redis vs in-process")
    p.add_argument("--plot", type=Path, default=None, help="bench --scale: write the log-log PNG")
    p.add_argument("-v", "--verbose", action="store_true")
    return p


#: (option, attribute, its default: the option is shown when the value differs) for
#: ``command_line``
SHOWN_OPTIONS: tuple[tuple[str, str, Any], ...] = (
    ("--embedder", "embedder", harness.DEFAULT_EMBEDDER),
    ("--locomo-first", "locomo_first", None),
    ("--locomo-half", "locomo_half", None),
    ("--sparse-scheme", "sparse_scheme", None),
    ("--longmemeval-first", "longmemeval_first", None),
    ("--longmemeval-types", "longmemeval_types", None),
    ("--longmemeval-half", "longmemeval_half", None),
    ("--jobs", "jobs", 1),
)
SCALE_OPTIONS: tuple[tuple[str, str, Any], ...] = (("--viewers", "viewers", None), ("--memories", "memories", None),
                 ("--turns", "turns", None))  # fmt: skip


def command_line(args: argparse.Namespace) -> str:
    """The command that reproduces a run, with the options that changed it."""
    parts = ["python -m memory.eval", args.command]
    if args.command in ("quality", "baseline") and args.sources != ",".join(suite.SOURCES):
        parts.append(f"--sources {args.sources}")
    if args.quick:
        parts.append("--quick")
    if args.command in ("quality", "baseline") and args.no_peers:
        parts.append("--no-peers")
    options = SHOWN_OPTIONS
    if args.command == "bench" and args.scale:
        parts.append("--scale")
        options += SCALE_OPTIONS
    for option, name, default in options:
        value = getattr(args, name)
        if value is not None and value != default:
            shown = " ".join(map(str, value)) if isinstance(value, list) else value
            parts.append(f"{option} {shown}")
    if args.command == "report" and args.no_bench:
        parts.append("--no-bench")
    elif args.command == "report" and args.bench_from:
        parts.append("(benchmarks from an earlier run of the same command)")
    return " ".join(parts)


async def quality(args: argparse.Namespace, data_dir: Path) -> int:
    sources = [s.strip() for s in args.sources.split(",") if s.strip()]
    unknown = set(sources) - set(suite.ALL_SOURCES)
    if unknown:
        print(f"error: unknown source(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return EXIT_ERROR
    lme = _lme_options(args)
    if lme is None:
        return EXIT_ERROR
    started = time.perf_counter()
    results, skipped = await suite.run_quality(
        sources,
        data_dir,
        quick=args.quick,
        system=args.system,
        embedder=args.embedder,
        with_peers=not args.no_peers,
        locomo_first=args.locomo_first,
        locomo_half=args.locomo_half,
        lme=lme,
        sparse_scheme=args.sparse_scheme,
        embed_cache=None if args.no_embed_cache else args.embed_cache,
    )
    print(report.quality_table(results))
    print_breakdowns(results)
    for source, why in skipped.items():
        print(f"skipped {source}: {why}")
    meta = await run_meta(args, started)
    _dump(args.json, {"meta": meta, "results": [r.to_json() for r in results], "skipped": skipped})
    if args.command == "baseline":
        data = suite.record_baseline(results)
        print(f"baseline recorded in {suite.BASELINE_PATH}: {json.dumps(data['synthetic'])}")
        return EXIT_OK
    if not args.quick or args.no_gate:
        return EXIT_OK
    baseline = suite.load_baseline()
    failures = suite.gate(results, baseline)
    for line in failures + suite.reported(results):
        print(line)
    if not failures and baseline is None:
        print("GATE OK: synthetic misattribution 0; recall@5 NOT gated (no baseline.json recorded)")
    elif not failures:
        print(
            "GATE OK: synthetic misattribution 0, recall@5 at or above the recorded baseline "
            "and at or above BM25-speaker's on the same probes"
        )
    return EXIT_GATE if failures else EXIT_OK


def _lme_options(args: argparse.Namespace) -> longmemeval_run.Options | None:
    """The LongMemEval selection of the command line (None, with a message: an unknown type)."""
    types = tuple(t.strip() for t in (args.longmemeval_types or "").split(",") if t.strip())
    unknown = set(types) - set(longmemeval.TYPES)
    if unknown:
        print(f"error: unknown LongMemEval type(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return None
    return longmemeval_run.Options(
        first=args.longmemeval_first, types=types, path=args.longmemeval_file, jobs=args.jobs,
        half=args.longmemeval_half,
    )  # fmt: skip


def print_breakdowns(results: list[harness.Result]) -> None:
    """LoCoMo per question category (temporal on its own) and LongMemEval per question type."""
    found = [r for r in results if r.case == "locomo"]
    if any(kind.startswith("cat") for r in found for kind in r.recall_by_kind):
        print("\nLoCoMo per category:")
        print(blocks.locomo_categories(found))
    halves = report.half_table(results)
    if halves:
        print("\nPer half of the data (tune on dev, report on held-out):")
        print(halves)
    if any(r.case == regulars.CASE for r in results):
        print(
            "\nRegulars channel per category and per half (answer in the top 3, a distractor "
            "above the answer):"
        )
        print(regulars.table(results))
    if any(r.case == longmemeval_run.CASE for r in results):
        print("\nLongMemEval per question type (turn-level any/all, session-level all):")
        print(longmemeval_run.type_table(results))
        print("\nLongMemEval per half of the development part (tune / report) and the whole:")
        print(longmemeval_run.half_table(results))
        full = next(r for r in results if r.case == longmemeval_run.CASE and r.config == "full")
        keys = ("messages", "replies", "replies_given", "turns_without_reply", "misattribution",
                "evidence_kept", "load_seconds", "replay_seconds", "wall_seconds")  # fmt: skip
        print(", ".join(f"{k} {report.fmt(full.metrics.get(k))}" for k in keys))


async def run_ablations(args: argparse.Namespace) -> list[ablations.Row]:
    sizes = suite.QUICK if args.quick else suite.FULL
    names = ablations.QUICK if args.quick else None
    rows = await ablations.run(suite.synthetic_case(sizes), names=names)
    print(report.ablation_table(rows))
    return rows


async def full_report(args: argparse.Namespace, data_dir: Path) -> int:
    """``report``: the document's generated blocks and plots, from saved results (``--from``) or
    from a fresh run (written to ``--json`` too)."""
    started = time.perf_counter()
    if args.from_files:
        try:
            runs = [blocks.load(path) for path in args.from_files]
        except blocks.ResultsError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_ERROR
    else:
        runs = [await fresh_run(args, data_dir, started)]
    return write_report(args.out, runs, started)


async def fresh_run(args: argparse.Namespace, data_dir: Path, started: float) -> blocks.Run:
    from memory.eval import bench

    results, skipped = await suite.run_quality(
        list(suite.SOURCES), data_dir, quick=args.quick, embedder=args.embedder
    )
    naive_results, _ = await suite.run_quality(
        ["synthetic"], data_dir, quick=args.quick, system="naive", with_peers=False
    )
    results += naive_results
    print(report.quality_table(results))
    rows = await run_ablations(args)
    bench_data = None if args.no_bench else await _bench(args, data_dir)
    if bench_data:
        print(bench.text_report(bench_data))
    meta, ablation_rows = await run_meta(args, started), [r.to_json() for r in rows]
    _dump(args.json, {"meta": meta, "results": [r.to_json() for r in results],
                      "ablations": ablation_rows, "bench": bench_data, "skipped": skipped})  # fmt: skip
    return blocks.Run(path="(this run)", meta=meta, results=results, ablations=ablation_rows,
                      bench=bench_data)  # fmt: skip


def write_report(out: Path, runs: list[blocks.Run], started: float) -> int:
    """The blocks ``runs`` have figures for, written into ``out`` (and, when ``out`` is the
    project's report, the README's headline figures); then the plots. Nothing is written when a
    document's markers are wrong."""
    made = blocks.render(runs)
    documents: list[tuple[Path, dict[str, str], tuple[str, ...]]] = [(out, made, blocks.KNOWN)]
    readme = REPO_ROOT / "README.md"
    if out.resolve() == (REPO_ROOT / "docs" / "evaluation.md").resolve() and readme.is_file():
        documents.append((readme, {"headline": blocks.headline(runs)}, blocks.README_BLOCKS))
    written, kept = [], []
    for path, contents, known in documents:
        try:
            text = path.read_text(encoding="utf-8")
            written.append((path, markers.replace(text, contents, known=known)))
        except OSError as exc:
            print(f"error: {path}: cannot be read ({exc.strerror or exc})", file=sys.stderr)
            return EXIT_ERROR
        except markers.MarkerError as exc:
            print(f"error: {path}: {exc}", file=sys.stderr)
            return EXIT_ERROR
        kept += [name for name in markers.blocks(text) if name not in contents]
    for path, text in written:
        path.write_text(text, encoding="utf-8")
    try:
        bench_data = next((r.bench for r in reversed(runs) if r.bench), None)
        images = report.plots(out.parent / report.PLOTS_DIR, blocks.plotted(runs),
                              blocks.ablation_rows(runs), bench_data)  # fmt: skip
    except report.PlotsUnavailable as exc:
        print(f"note: plots left as they were: {exc}", file=sys.stderr)
        images = []
    names = ", ".join(made) or "none"
    print(f"wrote {', '.join(str(p) for p, _ in written)}: {len(made)} block(s) ({names}), "
          f"{len(images)} plot(s) in {time.perf_counter() - started:.0f} s")  # fmt: skip
    if kept:
        print(f"left as they were (no figures for them): {', '.join(kept)}")
    return EXIT_OK


async def run_meta(args: argparse.Namespace, started: float) -> dict[str, Any]:
    """What a results file says about its run: the command, the embedder, the commit, when it
    ended, how long it ran and on what machine."""
    return {
        "command": command_line(args),
        "embedder": await suite.embedder_name(args.embedder),
        "commit": blocks.commit(),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "wall_seconds": round(time.perf_counter() - started, 1),
        "hardware": report.hardware(),
    }


async def _bench(args: argparse.Namespace, data_dir: Path) -> dict[str, Any]:
    from memory.eval import bench

    if args.bench_from is not None:
        data: dict[str, Any] = json.loads(args.bench_from.read_text(encoding="utf-8"))
        return data.get("bench") or data
    return await bench.run(data_dir, quick=args.quick)


def _dump(path: Path | None, data: dict[str, Any]) -> None:
    if path is not None:
        path.write_text(json.dumps(data, indent=1, default=str) + "\n", encoding="utf-8")


async def _main(args: argparse.Namespace, data_dir: Path) -> int:
    if args.command in ("quality", "baseline"):
        if args.command == "baseline":
            args.quick = True
        return await quality(args, data_dir)
    if args.command == "ablations":
        started = time.perf_counter()
        rows = await run_ablations(args)
        meta = await run_meta(args, started)
        _dump(args.json, {"meta": meta, "ablations": [r.to_json() for r in rows]})
        return EXIT_OK
    if args.command == "bench" and args.scale:
        return await scale_bench(args)
    if args.command == "bench":
        from memory.eval import bench

        started = time.perf_counter()
        data = await bench.run(data_dir, quick=args.quick)
        print(bench.text_report(data))
        _dump(args.json, {**data, "meta": await run_meta(args, started)})
        return EXIT_OK
    return await full_report(args, data_dir)


async def scale_bench(args: argparse.Namespace) -> int:
    from memory.eval import scale

    started = time.perf_counter()
    data = await scale.run(
        viewers=args.viewers or scale.VIEWERS,
        memories=args.memories or scale.MEMORIES,
        turns=args.turns or scale.TURNS,
        redis_url=args.redis_url,
    )
    print(scale.text_report(data))
    _dump(args.json, {**data, "meta": await run_meta(args, started)})
    if args.plot is not None:
        print(f"plot: {scale.plot(data, args.plot)}")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    data_dir = (args.data_dir or default_data_dir()).resolve()
    try:
        return stopping.run(_main(args, data_dir))
    except errors.MemoryServiceError as exc:
        print(f"error: the evaluation could not run: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        # the run's temporary data folders are gone, their embedded Postgres stopped
        # (``harness.temporary_data_dir``); the embedding cache keeps the vectors it stored
        print("interrupted: no results were written", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
