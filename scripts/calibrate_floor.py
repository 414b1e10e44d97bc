"""Choose the relevance floor of an embedder (``memory.recall.relevance``) on development data.

Replays a case once with the floor off (the turn reports keep every item the token budget held,
each with its similarity to the query), then applies each floor of a grid to those reports and
scores them as ``python -m memory.eval`` does: recall@5, the share of prompt items that cover no
evidence, memory items per probe. The replay is kept in ``--cache`` so a second grid costs
seconds. Applying the floor afterwards leaves out one effect: the tokens a dropped item frees are
not given to an item the budget had cut; the floor only removes, so the figures are a lower
bound of what the live floor gives.

    PYTHONPATH=. .venv/bin/python scripts/calibrate_floor.py --source synthetic --embedder e5
    PYTHONPATH=. .venv/bin/python scripts/calibrate_floor.py --source locomo --half dev \\
        --embedder e5
    PYTHONPATH=. .venv/bin/python scripts/calibrate_floor.py --source longmemeval --half tune \\
        --first 40 --jobs 2 --embedder e5
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import itertools
import logging
import pickle
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory import stopping
from memory.eval import (
    default_data_dir,
    embed_cache,
    harness,
    locomo,
    longmemeval,
    longmemeval_run,
    regulars,
    suite,
)
from memory.recall import context, planner, relevance
from memory.spaces import recency

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from memory import models


def case_for(args: argparse.Namespace) -> harness.Case:
    sizes = suite.FULL
    if args.source == "synthetic":
        return suite.synthetic_case(sizes, seed=args.seed)
    if args.source == regulars.CASE:
        return regulars.case()
    if args.source == "locomo":
        if args.half not in suite.LOCOMO_HALVES:
            raise SystemExit(f"locomo's halves are {', '.join(suite.LOCOMO_HALVES)}")
        sizes = dataclasses.replace(sizes, **suite.LOCOMO_HALVES[args.half])
    return suite.build_case(args.source, args.data_dir, sizes)


#: the shared data file a source replays (the others are generated or in tests/data)
DATA_FILES = {"locomo": locomo.RELATIVE_PATH, longmemeval_run.CASE: longmemeval.RELATIVE_PATH}


def missing_data(source: str, data_dir: Path) -> str | None:
    """What to tell when ``source``'s data file is not in ``data_dir`` (None: it is)."""
    wanted = DATA_FILES.get(source)
    if wanted is None or (data_dir / wanted).is_file():
        return None
    return f"{source} is not in {data_dir / wanted}: give --data-dir"


#: the settings of a replay: the floor off
NO_FLOOR = {"memory": {"relevance_floor": False}}


def replay_settings(recall_limit: int | None, token_budget: int | None) -> dict[str, Any]:
    """``NO_FLOOR`` with the search's limit and the memory block's token budget given (None: the
    default's)."""
    memory = {"relevance_floor": False, "recall_limit": recall_limit, "token_budget": token_budget}
    return {"memory": {k: v for k, v in memory.items() if v is not None}}


async def replay(
    case: harness.Case, embedder: str, overrides: dict[str, Any] = NO_FLOOR
) -> list[models.TurnReport]:
    """The case with the floor off, embedding through the evaluation's cache (a later
    ``python -m memory.eval`` run of the same data embeds nothing again)."""
    return await harness.run_full_isolated(
        case, overrides=overrides, embedder=embedder, embed_cache=embed_cache.DEFAULT_ROOT
    )


def lme_channels(args: argparse.Namespace) -> list[longmemeval.Channel]:
    """LongMemEval's questions of ``--half`` (``tune`` or ``report``), the first ``--first``."""
    if args.half not in longmemeval.HALVES:
        raise SystemExit(f"longmemeval's halves are {', '.join(longmemeval.HALVES)}")
    channels = longmemeval.load(args.data_dir, first=args.first, half=args.half)
    if args.latest_only:
        channels = [c for c in channels if recency.asks_latest(c.question)]
    return channels


async def lme_replay(
    channels: list[longmemeval.Channel],
    embedder: str,
    jobs: int,
    overrides: dict[str, Any] = NO_FLOOR,
) -> list[models.TurnReport]:
    """The questions' turns with the floor off, in the order of ``channels``."""
    turns, _ = await longmemeval_run.replay_isolated(
        channels, embedder=embedder, jobs=jobs, embed_cache=embed_cache.DEFAULT_ROOT,
        overrides=overrides,
    )  # fmt: skip
    return [turns[c.question_id] for c in channels]


def lme_figures(
    channels: list[longmemeval.Channel], reports: list[models.TurnReport]
) -> dict[str, Any]:
    """``python -m memory.eval``'s LongMemEval figures of the questions' floored turns."""
    turns = {c.question_id: r for c, r in zip(channels, reports, strict=True)}
    rankings, texts = longmemeval_run.system_prompts(channels, turns)
    values = longmemeval_run.score(channels, rankings, config="full", texts=texts).metrics
    return {
        "any@5": values["turn_any@5"],
        "all@5": values["turn_all@5"],
        "fresh@5": values.get("freshness@5") or float("nan"),  # nan: no knowledge update
        "P@5": values["precision@5"],
        "irrelevant": values["irrelevant_share"]["value"],
        "items/probe": values["items_per_prompt"],
    }


def floored(
    reports: list[models.TurnReport],
    floor: relevance.Floor | None,
    *,
    slots: bool = True,
    authors: Mapping[str, str] | None = None,
) -> list[models.TurnReport]:
    """The reports with ``floor`` applied to their items as context assembly applies it;
    ``authors``: message id → its author's user id (``author_ids``; None: the rule for a
    question about others, ``Floor.moment_margin``, is not applied)."""
    out = []
    for report in reports:
        explicit = {s.viewer for s in report.plan.sources if broad(s) and s.viewer}
        uncapped = {s.kind for s in report.plan.sources if s.bot_words}
        asks = relevance.asks_of(report.plan.sources) if slots else None
        latest = relevance.latest_of(report.plan.sources)
        about = (
            relevance.about_of(
                report.plan.sources, {authors[m] for m in report.message_ids if m in authors}
            )
            if authors is not None
            else ()
        )
        kept, _ = relevance.keep(
            report.recall, floor, open_viewers=explicit, uncapped=uncapped, asks=asks,
            latest=latest, about=about,
        )  # fmt: skip
        out.append(dataclasses.replace(report, recall=kept))
    return out


def author_ids(case: harness.Case) -> dict[str, str]:
    """Message id → its author's user id (``floored``'s ``authors``)."""
    return {event.id: event.user_id for event in case.events}


def broad(source: models.PlannedSource) -> bool:
    """``PlannedSource.broad``, also for reports replayed before the planner set it."""
    bot = {context.normalize(harness.BOT_NAME)}
    return source.explicit and not planner.content_terms(
        context.normalize(source.query), exclude=bot
    )


def figures(case: harness.Case, reports: list[models.TurnReport]) -> dict[str, Any]:
    result = harness.score(case, reports, config="full")
    metrics = result.metrics
    probes = {m for p in case.probes for m in [p.message_id]}
    asked = [r for r in reports if probes & set(r.message_ids)]
    items = sum(len(r.recall) for r in asked) / max(len(asked), 1)
    return {
        "R@5": metrics["recall@5"],
        "R@10": metrics["recall@10"],
        "irrelevant": metrics["irrelevant_share"]["value"],
        "items/probe": items,
        **(_regulars(result) if case.name == regulars.CASE else {}),
    }


def _regulars(result: harness.Result) -> dict[str, float]:
    """The regulars corpus' own figures, per part (``dev``: tuned on; ``held-out``, ``fresh``:
    reported)."""
    regulars.annotate(result, regulars.load())
    groups = result.metrics["regulars"]
    return {
        f"{key} {half}": groups[half][metric]["value"]
        for half in regulars.PARTS
        if half in groups
        for key, metric in (("top3", "answer_top3"), ("distractor", "distractor_above"))
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--source",
        choices=("synthetic", "locomo", regulars.CASE, longmemeval_run.CASE),
        default="synthetic",
    )
    p.add_argument(
        "--half", choices=(*suite.LOCOMO_HALVES, *longmemeval.HALVES), default="dev",
        help="locomo: dev or held-out; longmemeval: tune or report",
    )  # fmt: skip
    p.add_argument("--first", type=int, help="longmemeval: only the half's first N questions")
    p.add_argument("--jobs", type=int, default=1, help="longmemeval: processes of the replay")
    p.add_argument(
        "--latest-only", action="store_true",
        help="longmemeval: only the questions the latest statement answers (recency.asks_latest)",
    )  # fmt: skip
    p.add_argument("--seed", type=int, default=suite.SEED)
    p.add_argument("--embedder", default="e5")
    p.add_argument("--data-dir", type=Path, default=default_data_dir())
    p.add_argument("--cache", type=Path, default=Path("/tmp/livememory-floor"))
    p.add_argument("-v", "--verbose", action="store_true", help="log the replay's progress")
    p.add_argument(
        "--recall-limit", type=int,
        help="the replay's memory.recall_limit (a viewer's search's items; default: the setting's)",
    )  # fmt: skip
    p.add_argument(
        "--token-budget", type=int,
        help="the replay's memory.token_budget (the memory block's tokens; default: the setting's)",
    )  # fmt: skip
    p.add_argument("--absolute", default="0.70,0.75,0.78,0.80,0.82")
    p.add_argument("--gap", default="0.02,0.03,0.04,0.06,0.08,1.0")
    p.add_argument("--stream-wide", default="10", help="caps of a stream-wide source's items")
    p.add_argument("--per-viewer", default="0", help="caps of one viewer's items (0: none)")
    p.add_argument(
        "--dense-weight", default="1", help="in the blend order: the dense order's weight"
    )
    p.add_argument(
        "--order", default="fused", help="fused,similarity,blend: how a viewer's items rank"
    )
    p.add_argument(
        "--slots",
        default="on",
        help="on,off: a question for a profile slot answered by its statement (relevance.answered)",
    )
    p.add_argument(
        "--latest-first",
        default="off",
        help="on,off: a question the latest statement answers gets its viewer's items newest first",
    )
    p.add_argument(
        "--latest-gap", default="none",
        help="gaps for such a question's viewer (none: --gap)",
    )  # fmt: skip
    p.add_argument(
        "--moment-margin", default="none",
        help="in a question about others, a moment of the stream's least similarity over their "
        "best item's (none: no such rule)",
    )  # fmt: skip
    args = p.parse_args()
    if missing := missing_data(args.source, args.data_dir):
        p.error(missing)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    args.cache.mkdir(parents=True, exist_ok=True)
    score: Callable[[list[models.TurnReport]], dict[str, Any]]
    settings = replay_settings(args.recall_limit, args.token_budget)
    if args.source == longmemeval_run.CASE:
        channels = lme_channels(args)
        only = "-latest" if args.latest_only else ""
        name = f"{args.source}-{args.half}-{args.first or 'all'}{only}-{args.embedder}"
        run = functools.partial(lme_replay, channels, args.embedder, args.jobs, settings)
        score = functools.partial(lme_figures, channels)
        probes = len(channels)
        authors = {c.asked.id: c.user_id for c in channels}
    else:
        case = case_for(args)
        name = f"{args.source}-{args.half}-{args.seed}-{args.embedder}"
        run = functools.partial(replay, case, args.embedder, settings)
        score = functools.partial(figures, case)
        probes = len(case.probes)
        authors = author_ids(case)
    for key, value in settings["memory"].items():  # a replay of other settings is another
        if key != "relevance_floor":
            name += f"-{key}{value}"
    stored = args.cache / f"{name}.pickle"
    if stored.is_file():
        reports = pickle.loads(stored.read_bytes())
    else:
        reports = stopping.run_interrupted(run())
        stored.write_bytes(pickle.dumps(reports))
    print(f"{args.source}, {args.embedder}: {len(reports)} turns, {probes} probes")
    for slots in args.slots.split(","):
        print(
            f"no floor, slot answers {slots}:",
            score(floored(reports, None, slots=slots == "on", authors=authors)),
        )
    grid = itertools.product(
        [float(x) for x in args.absolute.split(",")],
        [float(x) for x in args.gap.split(",")],
        [int(x) for x in args.stream_wide.split(",")],
        [int(x) for x in args.per_viewer.split(",")],
        args.order.split(","),
        [float(x) for x in args.dense_weight.split(",")],
        args.slots.split(","),
        args.latest_first.split(","),
        [None if x == "none" else float(x) for x in args.latest_gap.split(",")],
        [None if x == "none" else float(x) for x in args.moment_margin.split(",")],
    )
    for absolute, gap, cap, per_viewer, order, weight, slots, latest, latest_gap, moment in grid:
        floor = relevance.Floor(
            absolute=absolute, gap=gap, stream_wide=cap, per_viewer=per_viewer or None,
            order=order, dense_weight=weight, latest_first=latest == "on", latest_gap=latest_gap,
            moment_margin=moment,
        )  # fmt: skip
        shown = score(floored(reports, floor, slots=slots == "on", authors=authors))
        print(f"absolute {absolute:.2f} gap {gap:.2f} cap {cap} per viewer {per_viewer} {order} {weight} slots {slots} latest first {latest} gap {latest_gap} moments {moment}: " + "  ".join(
            f"{k} {v:.3f}" for k, v in shown.items()
        ))  # fmt: skip


if __name__ == "__main__":
    main()
