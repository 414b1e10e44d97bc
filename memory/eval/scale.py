"""``python -m memory.eval bench --scale``: what a channel's whole life costs.

Figures, not a test. On the embedded defaults (embedded Postgres and Qdrant in a temporary data
folder, offline embedder), for each audience size (``--viewers``, ``--memories`` each):

* the audience is written through the adapters consolidation writes with — ``QdrantSpaces.upsert``
  (one call per viewer: that viewer's memories) and ``Transcript.append_events`` (a message each, so
  the CLI knows the viewer) — not through replayed chat, which would take hours at 10,000 viewers;
* a new viewer's first memory (one ``upsert`` into a space that did not exist), p50 / p95;
* start-up: ``python -m bot replay`` of a one-line transcript (wall time and peak RSS of the
  process); ``python -m memory.admin inspect --viewer`` of one viewer (the same);
* the memory stage (planner → retrieval → assembly, ``bench_retrieval``'s batches over these
  viewers) in a freshly opened store: cold (fresh cache, viewers' folders not open yet) and warm.

Then, per stored turns (``--turns``, filled in SQL), the per-message ingest cost: answered check,
append, turn open and finish with its job (``Transcript``), per message of one-message turns.
And: consolidation messages/s (``bench.consolidation_throughput``), and, when ``REDIS_URL`` is set,
replay throughput of one-message turns with Redis against in-process history and cache.
"""

from __future__ import annotations

import asyncio
import compileall
import json
import os
import random
import statistics
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from importlib import resources
from typing import TYPE_CHECKING, Any

from memory import identity, models
from memory.adapters import postgres, qdrant
from memory.adapters import redis as redis_adapter
from memory.eval import REPO_ROOT, bench_retrieval, harness
from memory.history import transcript
from memory.recall import cache, planner, prefetch, retrieval
from memory.spaces import embedders
from memory.spaces import records as memory_records

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from config.settings import Settings

VIEWERS = (1_000, 10_000)
MEMORIES = 10
TURNS = (1_000, 10_000, 100_000)
STREAM = "scale"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
NEW_VIEWERS = 20
INGEST_MESSAGES = 200
STAGE_TURNS = 100


def _pct(values: Sequence[float], q: float) -> float:
    return bench_retrieval._pct(values, q)


def _records(viewer: int, count: int, rng: random.Random) -> list[memory_records.MemoryRecord]:
    user_id = f"u{viewer}"
    return [
        memory_records.MemoryRecord(
            id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"scale/{viewer}/{k}")),
            space=identity.personal_key(user_id),
            kind=memory_records.MemoryKind.PERSONAL,
            text=rng.choice(bench_retrieval.STATEMENTS).format(
                t=rng.choice(bench_retrieval.TOPICS)
            ),
            turn_id=f"t{viewer}-{k}",
            user_id=user_id,
            login=f"viewer{viewer}",
            stream=STREAM,
            origin_message_ids=(f"m{viewer}-{k}",),
            created_at=T0 + timedelta(seconds=viewer * 100 + k),
        )
        for k in range(count)
    ]


def _hello(viewer: int) -> models.ChatEvent:
    return models.ChatEvent(
        id=f"hello-{viewer}", stream=STREAM, user_id=f"u{viewer}", login=f"viewer{viewer}",
        text="hello", ts=T0 + timedelta(seconds=viewer),
    )  # fmt: skip


async def build_audience(settings: Settings, viewers: int, memories: int) -> dict[str, Any]:
    """Write ``viewers`` × ``memories``, then time the first memory of a few new viewers."""
    rng = random.Random(viewers)
    started = time.perf_counter()
    async with postgres.open_database(settings) as db:
        from memory import migrate

        await migrate.apply(db)
        store = transcript.Transcript(db)
        for first in range(0, viewers, 500):
            await store.append_events([_hello(v) for v in range(first, min(viewers, first + 500))])
    spaces = await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder())
    async with spaces:
        for viewer in range(viewers):
            await spaces.upsert(_records(viewer, memories, rng))
        built_s = time.perf_counter() - started
        first_ms = await _first_memories(spaces, range(viewers, viewers + NEW_VIEWERS), rng)
    return {
        "build_s": built_s,
        "first_memory_ms": {"p50": statistics.median(first_ms), "p95": _pct(first_ms, 0.95)},
    }


async def first_memory(settings: Settings, first_viewer: int) -> dict[str, float]:
    """A new viewer's first memory in an existing data folder (``NEW_VIEWERS`` of them, numbered
    from ``first_viewer``, which must not be in the folder yet), p50 / p95 in ms."""
    spaces = await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder())
    async with spaces:
        new = range(first_viewer, first_viewer + NEW_VIEWERS)
        first_ms = await _first_memories(spaces, new, random.Random(first_viewer))
    return {"p50": statistics.median(first_ms), "p95": _pct(first_ms, 0.95)}


async def _first_memories(
    spaces: qdrant.QdrantSpaces, viewers: range, rng: random.Random
) -> list[float]:
    first_ms = []
    for viewer in viewers:
        began = time.perf_counter()
        await spaces.upsert(_records(viewer, 1, rng))
        first_ms.append((time.perf_counter() - began) * 1000)
    return first_ms


#: Runs the measured command from a small process: Linux carries ``ru_maxrss`` across fork and
#: exec, so a child forked straight from this (large) benchmark process would report the
#: benchmark's own peak instead of the command's. Prints the child's peak RSS in KiB.
_LAUNCHER = (
    "import os, sys\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    os.execv(sys.executable, [sys.executable, '-m', *sys.argv[1:]])\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "print(usage.ru_maxrss, file=sys.stderr)\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n"
)


def run_cli(args: Sequence[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """Run ``python -m …`` to completion: wall seconds, peak RSS (MB) and exit code."""
    began = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, *args], env=env, cwd=cwd,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False,
    )  # fmt: skip
    seconds = time.perf_counter() - began
    err = proc.stderr.decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"python -m {' '.join(args)} failed ({proc.returncode}): {err[-500:]}")
    peak_kib = int(err.strip().splitlines()[-1])
    return {"seconds": seconds, "rss_mb": peak_kib / 1024}


def _cli_env(data_dir: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith("LIVEMEMORY_")}
    for name in ("DATABASE_URL", "REDIS_URL", "QDRANT_URL", "OLLAMA_HOST"):
        keep.pop(name, None)
    return keep | {
        "PYTHONPATH": str(REPO_ROOT),  # this checkout's code, whatever the venv installed
        "LIVEMEMORY_DATA_DIR": str(data_dir),
        "LIVEMEMORY_MEMORY__EMBEDDER": "offline",
        "OLLAMA_HOST": harness.DEAD_OLLAMA,
    }


#: the checkout's packages the measured commands import
PACKAGES = ("bot", "config", "memory")


def bytecode_cached() -> None:
    """This checkout's modules compiled to bytecode (``__pycache__``), as a user's first run or
    ``pip install`` leaves them: a start-up measured is a user's second and later one, not one
    that also compiles the ~200 modules it imports (0.1-0.17 s of it on 2 cores). Compiled here because a shell with
    ``PYTHONDONTWRITEBYTECODE`` set, as this project's VMs have, never writes them."""
    for package in PACKAGES:
        compileall.compile_dir(REPO_ROOT / package, quiet=1)


def startup_and_inspect(data_dir: Path, viewers: int, runs: int = 3) -> dict[str, Any]:
    """A one-line replay and one viewer's ``inspect``, each ``runs`` times (best and median),
    with the checkout's bytecode cached (``bytecode_cached``)."""
    bytecode_cached()
    env = _cli_env(data_dir)
    line = data_dir / "one-line.jsonl"
    out: dict[str, Any] = {}
    for name, args in (("startup", ("bot", "replay", str(line), "--no-llm")),
                       ("inspect", ("memory.admin", "inspect", "--viewer", "", "--json"))):  # fmt: skip
        figures = []
        for run in range(runs):
            viewer = (run * 7919) % viewers
            if name == "startup":
                event = {"ts": "2026-06-01T20:00:00Z", "stream": STREAM, "user_id": f"u{viewer}",
                         "id": f"startup-{uuid.uuid4().hex}", "login": f"viewer{viewer}",
                         "text": "hello again, do you remember me?"}  # fmt: skip
                line.write_text(json.dumps(event) + "\n", encoding="utf-8")
            else:
                args = (*args[:3], f"viewer{viewer}", "--json")
            figures.append(run_cli(args, env, data_dir))
        out[name] = {
            "seconds_min": min(f["seconds"] for f in figures),
            "seconds_median": statistics.median(f["seconds"] for f in figures),
            "rss_mb_max": max(f["rss_mb"] for f in figures),
        }
    return out


async def memory_stage(settings: Settings, viewers: int) -> dict[str, Any]:
    """The memory stage over this audience in a freshly opened store: cold, then warm."""
    rng = random.Random(1)
    spaces = await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder())
    async with spaces:
        await spaces.preload()  # as the bot does at start (embedded shared layout)
        profiles = bench_retrieval.MemoryProfiles([])
        plans = planner.Planner(settings, lore_entities=["Captain Nebula"])
        batches = bench_retrieval.make_batches(STAGE_TURNS, viewers, rng)
        warm = cache.InProcessCache()

        def cold() -> retrieval.Retriever:
            return retrieval.build_retriever(
                settings, spaces=spaces, profiles=profiles, cache=cache.InProcessCache()
            )

        def warmed() -> retrieval.Retriever:
            return retrieval.build_retriever(settings, spaces=spaces, profiles=profiles, cache=warm)

        cold_totals = (await bench_retrieval._pass(cold, plans, batches))["totals"]
        warm_totals = (await bench_retrieval._pass(warmed, plans, batches))["totals"]
    window_totals, opening_ms = await _window_pass(settings, plans, batches, last_at_close=False)
    late_totals, _ = await _window_pass(settings, plans, batches, last_at_close=True)
    out = {
        name: {"p50": statistics.median(totals), "p95": _pct(totals, 0.95)}
        for name, totals in (
            ("cold", cold_totals), ("warm", warm_totals),
            ("window", window_totals), ("window_last_at_close", late_totals),
        )
    }  # fmt: skip
    out["window_opening"] = {"p50": statistics.median(opening_ms), "p95": _pct(opening_ms, 0.95)}
    return out


async def _window_pass(
    settings: Settings,
    plans: planner.Planner,
    batches: Sequence[models.Batch],
    *,
    last_at_close: bool,
) -> tuple[list[float], list[float]]:
    """Cold again (a freshly opened store, fresh cache), but each batch's events first go through
    the bot's own hook, ``Prefetch.note``, as the session calls it when it stores a message while
    the batch window is open. ``last_at_close=False``: the openings are done when the stage runs
    (every message came at least the opening time before the window closed); True: the batch's
    last message arrives as the window closes, so the stage runs at once and waits for whatever
    of its opening is not done. Returns the stage times and how long the openings took per batch
    (to hold against the window: ``batch.window_seconds``)."""
    spaces = await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder())
    async with spaces:
        await spaces.preload()  # as the bot does at start (embedded shared layout)
        profiles = bench_retrieval.MemoryProfiles([])
        ahead = prefetch.Prefetch(plans, spaces)
        totals: list[float] = []
        opening_ms: list[float] = []
        for batch in batches:
            early = batch.events[:-1] if last_at_close else batch.events
            began = time.perf_counter()
            for event in early:
                ahead.note(event)
            await ahead.settle()
            opening_ms.append((time.perf_counter() - began) * 1000)
            if last_at_close:
                ahead.note(batch.events[-1])
            retriever = retrieval.build_retriever(
                settings, spaces=spaces, profiles=profiles, cache=cache.InProcessCache()
            )
            result = await retriever.retrieve(plans.plan(batch, []), batch, [])
            totals.append(result.timings_ms["memory_total"])
            await ahead.settle()
    return totals, opening_ms


async def audience(viewers: int, memories: int) -> dict[str, Any]:
    with harness.temporary_data_dir("livememory-scale-") as data_dir:
        settings = harness.eval_settings(data_dir)
        row: dict[str, Any] = {"viewers": viewers, "memories_per_viewer": memories}
        row |= await build_audience(settings, viewers, memories)
        row |= await asyncio.to_thread(startup_and_inspect, data_dir, viewers)
        row["memory_stage_ms"] = await memory_stage(settings, viewers)
    return row


FILL = resources.files(__package__).joinpath("scale_fill.sql").read_text(encoding="utf-8")


async def ingest_cost(
    sizes: Sequence[int], *, messages: int = INGEST_MESSAGES, database_url: str | None = None
) -> list[dict[str, Any]]:
    """Per-message transcript cost of one-message turns after ``size`` stored turns (embedded
    Postgres unless ``database_url``: an empty, migrated database)."""
    rows = []
    with harness.temporary_data_dir("livememory-scale-turns-") as tmp:
        settings = harness.eval_settings(tmp, database_url=database_url)
        async with postgres.open_database(settings) as db:
            from memory import migrate

            await migrate.apply(db)
            store = transcript.Transcript(db)
            stored = 0
            for size in sorted(sizes):
                fill = FILL.replace(":first", str(stored)).replace(":last", str(size - 1))
                await db.pool.execute(fill)
                stored = size
                per_message = []
                for n in range(messages):
                    event = models.ChatEvent(
                        id=f"ingest-{size}-{n}", stream="live", user_id="u1", login="viewer1",
                        text="hello", ts=T0 + timedelta(days=400, seconds=size + n),
                    )  # fmt: skip
                    began = time.perf_counter()
                    if not await store.answered([event.id]):
                        await store.append_events([event])
                        turn = await store.start_turn("live", [event.id])
                        await store.finish_turn(
                            turn, stream="live", status=models.TurnStatus.COMPLETED, reply="hi",
                            error=None, ts=event.ts, report={}, consolidate=True,
                        )  # fmt: skip
                    per_message.append((time.perf_counter() - began) * 1000)
                rows.append(
                    {"turns": size, "ms_p50": statistics.median(per_message),
                     "ms_p95": _pct(per_message, 0.95)}
                )  # fmt: skip
    return rows


async def redis_vs_in_process(redis_url: str | None, messages: int = 200) -> dict[str, Any] | None:
    """Replay throughput of one-message turns (sync consolidation), Redis against in-process."""
    if not redis_url:
        return None
    from memory import runtime, session
    from memory.eval import synthetic

    stream = synthetic.generate(seed=3, viewers=20, filler=messages)
    chat = [e for e in stream.events if not e.text.startswith("!")][: messages + 20]
    out: dict[str, Any] = {"messages": messages}
    for name, url in (("in_process", None), ("redis", redis_url)):
        prefix = f"lmscale{uuid.uuid4().hex[:8]}:"
        with harness.temporary_data_dir("livememory-scale-redis-") as tmp:
            settings = harness.eval_settings(
                tmp, overrides={"batch": {"max_messages": 1}, "redis": {"key_prefix": prefix}},
                redis_url=url,
            )  # fmt: skip

            async def deliver(report: models.TurnReport) -> None:
                return None

            async with runtime.lifespan(settings, no_llm=True) as services:
                replay = session.Replay(services, deliver, commands=services.commands,
                                        sync_consolidation=True)  # fmt: skip
                for event in chat[:20]:  # warm-up: connections, collections
                    await replay.feed(event)
                await replay.finish()
                began = time.perf_counter()
                for event in chat[20:]:
                    await replay.feed(event)
                await replay.finish()
                seconds = time.perf_counter() - began
            if url is not None:  # every key of this run: cache and history
                keys = redis_adapter.RedisCache.from_url(url, prefix=prefix)
                await keys.delete_prefix("")
                await keys.aclose()
        out[name] = (len(chat) - 20) / seconds
    out["ratio"] = out["redis"] / out["in_process"]
    return out


async def run(
    *, viewers: Sequence[int], memories: int, turns: Sequence[int], redis_url: str | None
) -> dict[str, Any]:
    from memory.eval import bench

    return {
        "audience": [await audience(n, memories) for n in viewers],
        "ingest": await ingest_cost(turns),
        "consolidation": await bench.consolidation_throughput(),
        "redis": await redis_vs_in_process(redis_url),
    }


def text_report(data: dict[str, Any]) -> str:
    lines = [
        "| viewers × memories | build (s) | first memory p50 / p95 (ms) | start-up min / median (s) "
        "| start-up RSS (MB) | inspect min / median (s) | inspect RSS (MB) "
        "| memory stage cold p50 / p95 (ms) | warm p50 / p95 (ms) "
        "| opened in the window p50 / p95 (ms) | last message at the close p50 / p95 (ms) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in data["audience"]:
        s, i, m = r["startup"], r["inspect"], r["memory_stage_ms"]
        lines.append(
            f"| {r['viewers']:,} × {r['memories_per_viewer']} | {r['build_s']:.0f} "
            f"| {r['first_memory_ms']['p50']:.1f} / {r['first_memory_ms']['p95']:.1f} "
            f"| {s['seconds_min']:.2f} / {s['seconds_median']:.2f} | {s['rss_mb_max']:.0f} "
            f"| {i['seconds_min']:.2f} / {i['seconds_median']:.2f} | {i['rss_mb_max']:.0f} "
            f"| {m['cold']['p50']:.1f} / {m['cold']['p95']:.1f} "
            f"| {m['warm']['p50']:.2f} / {m['warm']['p95']:.2f} "
            f"| {_pair(m.get('window'))} | {_pair(m.get('window_last_at_close'))} |"
        )
    lines += ["", "| stored turns | ingest per message p50 / p95 (ms) |", "|---|---|"]
    lines += [f"| {r['turns']:,} | {r['ms_p50']:.2f} / {r['ms_p95']:.2f} |" for r in data["ingest"]]
    c = data["consolidation"]
    lines += ["", f"consolidation: {c['messages_per_s']:.0f} messages/s ({c['messages']} messages)"]
    r = data["redis"]
    if r is None:
        lines.append("Redis vs in-process: not measured (REDIS_URL unset)")
    else:
        lines.append(
            f"one-message turns: in-process {r['in_process']:.1f} msg/s, Redis {r['redis']:.1f} "
            f"msg/s ({r['ratio']:.0%} of in-process)"
        )
    return "\n".join(lines)


def _audience_costs(rows: list[dict[str, Any]]) -> list[tuple[str, list[float | None]]]:
    """Each plotted cost of the audience rows, in seconds (``None``: not measured)."""

    def ms(figures: dict[str, Any] | None) -> float | None:
        return None if figures is None else figures["p95"] / 1000

    return [
        ("start-up (s)", [r["startup"]["seconds_min"] for r in rows]),
        ("inspect (s)", [r["inspect"]["seconds_min"] for r in rows]),
        ("first memory p50 (s)", [r["first_memory_ms"]["p50"] / 1000 for r in rows]),
        ("memory stage cold p95 (s)", [ms(r["memory_stage_ms"]["cold"]) for r in rows]),
        (
            "memory stage, opened in window p95 (s)",
            [ms(r["memory_stage_ms"].get("window")) for r in rows],
        ),
    ]


def _pair(figures: dict[str, float] | None) -> str:
    return "–" if figures is None else f"{figures['p50']:.1f} / {figures['p95']:.1f}"


def plot(data: dict[str, Any], path: Path) -> Path:
    """Log-log: each cost against the size it grows with (needs matplotlib: ``.[report]``).

    An audience row may name its ``series`` (the store it measured): each series is drawn in a
    line style of its own, each cost in a colour of its own (``scripts/plot_scale.py``)."""
    from memory.eval import report

    plt = report._pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 6))
    series: dict[str, list[dict[str, Any]]] = {}
    for row in data["audience"]:
        series.setdefault(row.get("series", ""), []).append(row)
    styles = dict(zip(series, ("--", "-", ":", "-."), strict=False))
    first = next(iter(series), None)
    for name, rows in series.items():
        rows = sorted(rows, key=lambda r: r["viewers"])
        for colour, (label, values) in enumerate(_audience_costs(rows)):
            points = [(r["viewers"], v) for r, v in zip(rows, values, strict=True) if v]
            if points:  # a cost's colour is the same in every series; the legend names it once
                left.plot(*zip(*points, strict=True), styles[name], color=f"C{colour}",
                          marker="o", label=label if name == first else None)  # fmt: skip
        for r in rows:
            left.annotate(f"×{r['memories_per_viewer']}", (r["viewers"], r["startup"]["seconds_min"]),
                          fontsize=7)  # fmt: skip
    handles, labels = left.get_legend_handles_labels()
    if len(series) > 1:  # the line styles: one per store
        for name, style in styles.items():
            (line,) = left.plot([], [], style, color="black")
            handles.append(line)
            labels.append(name)
    left.set(xscale="log", yscale="log", xlabel="viewers", ylabel="seconds",
             title="Cost against audience size")  # fmt: skip
    left.legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(0, -0.15), ncol=2)
    turns = [r["turns"] for r in data["ingest"]]
    right.plot(turns, [r["ms_p50"] for r in data["ingest"]], marker="o", label="p50")
    right.plot(turns, [r["ms_p95"] for r in data["ingest"]], marker="o", label="p95")
    costs = [r[key] for r in data["ingest"] for key in ("ms_p50", "ms_p95")]
    right.set(xscale="log", yscale="log", xlabel="stored turns", ylabel="ms per message",
              title="Ingest cost against stored turns",
              ylim=(min(costs) / 3, max(costs) * 3))  # a decade or so: flat reads as flat  # fmt: skip
    right.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    return report._save(plt, fig, path)
