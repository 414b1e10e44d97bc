"""Whether LongMemEval loses an episode to "a turn of reactions alone is no episode".

Consolidation writes no episode for an unanswered turn whose lines are all reactions
(``noise.is_reaction``). This replays, with the offline embedder, the questions of the development
part that hold such a turn ("Thanks", "yes", "me too") and counts the episodes consolidation
wrote and those it left out (the episode builder is wrapped to count; nothing else changes). None
left out means LongMemEval's figures, of either embedder, do not move (~3 min):

    PYTHONPATH=. .venv/bin/python scripts/lme_reaction_episodes.py
"""

from __future__ import annotations

import argparse
import asyncio
import collections
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory.consolidate import consolidation, noise
from memory.eval import default_data_dir, longmemeval, longmemeval_run

if TYPE_CHECKING:
    from memory import models


def holds_reactions_alone(channel: longmemeval.Channel) -> bool:
    """Whether one of the channel's turns (its parts ``…-p0``, ``…-p1``) is all reactions."""
    turns: dict[str, list[models.ChatEvent]] = collections.defaultdict(list)
    for event in channel.events:
        turns[event.id.rsplit("-p", 1)[0]].append(event)
    return any(all(noise.is_reaction(e.text) for e in parts) for parts in turns.values())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=default_data_dir())
    args = p.parse_args()
    channels = [c for c in longmemeval.load(args.data_dir) if holds_reactions_alone(c)]
    written, left_out = 0, []
    build = consolidation.Consolidator._episode

    def counting(self: consolidation.Consolidator, *a: Any) -> Any:
        nonlocal written
        episode = build(self, *a)
        events = a[2]
        if episode is not None:
            written += 1
        elif any(not e.is_command and not self.is_bot(e) for e in events):
            left_out.append([e.text for e in events])
        return episode

    consolidation.Consolidator._episode = counting  # type: ignore[method-assign,assignment]
    asyncio.run(longmemeval_run.replay_isolated(channels, embedder="offline", jobs=1))
    print(f"{len(channels)} questions hold a turn of reactions alone: {written} episodes written,")
    print(f"{len(left_out)} left out{': ' if left_out else ''}{left_out[:10] if left_out else ''}")


if __name__ == "__main__":
    main()
