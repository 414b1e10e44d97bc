"""The consolidation filter's verdict on every chat line of the evaluation data, and what a change
to it changes: which messages become personal memories, without replaying anything.

    PYTHONPATH=. .venv/bin/python scripts/noise_verdicts.py --json /tmp/before.json
    # change memory/consolidate/noise.py, then
    PYTHONPATH=. .venv/bin/python scripts/noise_verdicts.py --compare /tmp/before.json

Each line is classified as consolidation sees it (``noise.classify`` with the bot's name, and
the line before it when another viewer wrote that) and alone. A source whose kept lines do not
change stores the same memories, so its figures cannot move (~30 s for all five sources).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from memory.consolidate import noise
from memory.eval import default_data_dir, harness, longmemeval, regulars, suite

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

    from memory import models

#: verdict rows: message id, text, reason with the line before, reason alone
Row = tuple[str, str, str, str]


def sources(data_dir: Path) -> Iterator[tuple[str, Sequence[models.ChatEvent]]]:
    yield "synthetic", suite.synthetic_case(suite.FULL).events
    yield regulars.CASE, regulars.case().events
    for name in ("locomo", "irc"):
        yield name, suite.build_case(name, data_dir, suite.FULL).events
    yield "longmemeval", [e for c in longmemeval.load(data_dir) for e in c.events]


def verdicts(events: Iterable[models.ChatEvent]) -> list[Row]:
    rows: list[Row] = []
    before: models.ChatEvent | None = None
    names = (harness.BOT_NAME,)
    for event in events:
        previous = before.text if before and before.user_id != event.user_id else None
        with_previous = noise.classify(event.text, bot_names=names, previous=previous)
        alone = noise.classify(event.text, bot_names=names)
        rows.append((event.id, event.text, with_previous.reason, alone.reason))
        before = event
    return rows


def compare(old: dict[str, list[Row]], new: dict[str, list[Row]], shown: int) -> None:
    for name, rows in new.items():
        was = {row[0]: row for row in old.get(name, [])}
        changed = [(was[r[0]], r) for r in rows if r[0] in was and tuple(was[r[0]]) != r]
        kept = [pair for pair in changed if _kept(pair[0]) != _kept(pair[1])]
        print(
            f"{name}: {len(rows)} lines, {len(changed)} verdicts changed, {len(kept)} kept/dropped"
        )
        for before, after in (kept or changed)[:shown]:
            print(f"  {after[0]} {after[1][:80]!r}: {before[2]} -> {after[2]}")


def _kept(row: Sequence[str]) -> tuple[bool, bool]:
    return row[2] in noise.KEPT_REASONS, row[3] in noise.KEPT_REASONS


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=default_data_dir())
    p.add_argument("--json", type=Path, help="write the verdicts here")
    p.add_argument("--compare", type=Path, help="verdicts written before a change")
    p.add_argument("--show", type=int, default=20, help="changed lines shown per source")
    args = p.parse_args()
    out = {name: verdicts(events) for name, events in sources(args.data_dir)}
    if args.json:
        args.json.write_text(json.dumps(out))
    if args.compare:
        compare(json.loads(args.compare.read_text()), out, args.show)
    elif not args.json:
        sys.exit("give --json FILE, --compare FILE or both")


if __name__ == "__main__":
    main()
