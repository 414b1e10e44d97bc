"""``python -m memory.eval.reducers [FILE | --busy]``: one transcript replayed once per history reducer.

``--busy``: busy chat instead of a file — the synthetic multi-viewer stream played at
``BUSY_SPEEDUP``× its pace, so a batch holds about a dozen messages.

Prints, per reducer, the messages in the working history against the messages sent to the model and
the estimated prompt tokens (mean and max over the turns), and how often the summarizing reducer
called the model. Runs on embedded stores without a language model: the summarizing reducer gets a
deterministic extractive stand-in (the first words of each folded line), so the figures measure the
reduction, not summary quality.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import statistics
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory import models, session
from memory.eval import REPO_ROOT, harness, synthetic
from memory.history import reducers, transcript_file

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

REDUCERS = ("none", "counting", "tokens", "summarizing", "turns")
EXAMPLE = REPO_ROOT / "examples" / "stream.jsonl"
WORDS_PER_LINE = 8
BUSY_SPEEDUP = 10.0


def busy_chat(*, speedup: float = BUSY_SPEEDUP, seed: int = 7) -> list[models.ChatEvent]:
    """The synthetic stream (40 viewers, 400 filler lines, no commands) at ``speedup``× its pace."""
    stream = synthetic.generate(seed=seed, viewers=40, filler=400)
    events = [e for e in stream.events if not e.text.startswith("!")]
    start = events[0].ts
    return [dataclasses.replace(e, ts=start + (e.ts - start) / speedup) for e in events]


class ExtractiveSummarizer:
    """A ``ports.ChatModel`` stand-in for summaries: keeps the first words of each line."""

    def __init__(self) -> None:
        self.calls = 0

    #: no window: prompts are not reduced to fit one
    context_tokens: int | None = None

    async def check(self) -> None:
        return None

    async def chat(
        self,
        messages: Sequence[models.PromptMessage],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        model: str | None = None,
        max_tokens: int | None = None,
    ) -> models.ModelReply:
        self.calls += 1
        lines = [line for line in messages[-1].content.splitlines() if line.strip()]
        short = [" ".join(line.split()[:WORDS_PER_LINE]) for line in lines]
        return models.ModelReply(content="; ".join(short))


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Row:
    reducer: str
    turns: int
    history_mean: float
    history_max: int
    sent_mean: float
    sent_max: int
    tokens_mean: float
    tokens_max: int
    model_calls: int
    messages: int


async def replay_with(
    reducer: str,
    events: Sequence[models.ChatEvent],
    workdir: Path,
    *,
    history: Mapping[str, Any] | None = None,
    database_url: str | None = None,
) -> Row:
    """Replay ``events`` with ``reducer`` (embedded stores in ``workdir``, or ``database_url``)."""
    settings = harness.eval_settings(
        workdir,
        overrides={"history": {**(history or {}), "reducer": reducer}},
        database_url=database_url,
    )
    summarizer = ExtractiveSummarizer()
    reports: list[models.TurnReport] = []

    async def deliver(report: models.TurnReport) -> None:
        if report.command is None:
            reports.append(report)

    from memory import runtime as services_module

    async with services_module.lifespan(settings, no_llm=True, background_worker=False) as svc:
        if reducer == "summarizing":
            reducer_obj = reducers.build_reducer(settings, db=svc.db, model=summarizer)
            svc.pipeline.seams = dataclasses.replace(svc.pipeline.seams, reducer=reducer_obj)
        replay = session.Replay(svc, deliver, commands=svc.commands)
        for event in events:
            await replay.feed(event)
        await replay.finish()
    in_history = [r.prompt.messages_in_history for r in reports]
    sent = [r.prompt.messages_sent for r in reports]
    tokens = [r.prompt.tokens_estimate for r in reports]
    return Row(
        reducer=reducer,
        turns=len(reports),
        history_mean=statistics.fmean(in_history),
        history_max=max(in_history),
        sent_mean=statistics.fmean(sent),
        sent_max=max(sent),
        tokens_mean=statistics.fmean(tokens),
        tokens_max=max(tokens),
        model_calls=summarizer.calls,
        messages=sum(len(r.message_ids) for r in reports),
    )


async def run(
    events: Sequence[models.ChatEvent], history: Mapping[str, Any] | None = None
) -> list[Row]:
    rows = []
    for reducer in REDUCERS:
        with harness.temporary_data_dir(f"livememory-reducer-{reducer}-") as tmp:
            rows.append(await replay_with(reducer, events, tmp, history=history))
    return rows


def table(rows: Sequence[Row]) -> str:
    head = (
        "| reducer | turns (messages) | in history (mean / max) | sent (mean / max) "
        "| tokens (mean / max) | summary calls (of turns) |\n|---|---|---|---|---|---|"
    )
    body = [
        f"| `{r.reducer}` | {r.turns} ({r.messages}) | {r.history_mean:.1f} / {r.history_max} "
        f"| {r.sent_mean:.1f} / {r.sent_max} | {r.tokens_mean:.0f} / {r.tokens_max} "
        f"| {_calls(r) if r.reducer == 'summarizing' else '–'} |"
        for r in rows
    ]
    return "\n".join([head, *body])


def _calls(row: Row) -> str:
    return f"{row.model_calls} ({row.model_calls / row.turns:.0%})" if row.turns else "0"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memory.eval.reducers", description=__doc__)
    parser.add_argument("file", nargs="?", type=Path, default=EXAMPLE)
    parser.add_argument(
        "--max-messages", type=int, help="counting/turns budget (default: settings)"
    )
    parser.add_argument("--token-budget", type=int, help="tokens budget (default: settings)")
    parser.add_argument(
        "--busy",
        action="store_true",
        help=f"busy chat: the synthetic stream at {BUSY_SPEEDUP:g}× pace",
    )
    args = parser.parse_args(argv)
    if not args.busy and not args.file.is_file():
        print(f"error: no such transcript file: {args.file}", file=sys.stderr)
        return 1
    history = {
        key: value
        for key, value in (("max_messages", args.max_messages), ("token_budget", args.token_budget))
        if value is not None
    }
    events = busy_chat() if args.busy else list(transcript_file.read(args.file))
    rows = asyncio.run(run(events, history))
    budgets = ", ".join(f"{k}={v}" for k, v in history.items()) or "default budgets"
    source = f"busy chat ({BUSY_SPEEDUP:g}x synthetic)" if args.busy else str(args.file)
    print(f"{source} ({budgets}): messages in the working history vs sent, per reducer")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
