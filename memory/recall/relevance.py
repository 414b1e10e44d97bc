"""Which recalled items are worth their tokens: the relevance floor of context assembly.

A search always returns its best candidates, whether or not any of them answers: a regular's
space holds dozens of everyday statements, and the top ten of them for "does she have any
animals?" are mostly about other things. Ranks and fused scores cannot tell; the dense similarity
of each hit to the query can (``MemoryHit.similarity``). An item is kept when its similarity is

* at least the embedder's ``absolute`` floor (nothing near it is relevant), and
* within ``gap`` of the best similarity of its group (the items of one viewer, or of one
  stream-wide source): a search whose best hit is clearly relevant keeps only what is near it.

A profile fact takes the similarity of the search hit it repeats; one that no hit repeats answers
nothing the batch asked and is dropped. Channel state is canonical and always kept; an item with
no similarity (a search that did not read vectors) is kept. A viewer who asked an open question
about themself (``PlannedSource.broad``: "what do you remember about me?") gets every item of
theirs; one who asked for one thing ("do you remember my pet's name?") gets what answers it.

The floors are per embedder, since each spreads similarities differently (e5's related texts sit
at 0.8-0.9, unrelated ones at 0.7-0.8). They are chosen with ``scripts/calibrate_floor.py`` on
development data and reported on data they were not chosen on (docs/evaluation.md, "Precision").
An embedder with none gets no floor: the offline embedder's, whose profile facts often answer
without any search hit repeating them (a floor took the synthetic stream's recall@5 from 0.970
to 0.72 at best), and Ollama's models, which were not measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable

    from memory import models


@dataclass(frozen=True, slots=True)
class Floor:
    #: an item under this similarity is never kept
    absolute: float
    #: an item more than this below the best similarity of its group is not kept
    gap: float
    #: at most this many items of a stream-wide source (episodes, lore): their searches match
    #: the question's words in other viewers' lines and the streamer's canon, rarely its answer
    stream_wide: int = 10


#: by embedder name, without its ``:dim`` suffix
FLOORS: dict[str, Floor] = {
    "e5-small-q4-v1": Floor(absolute=0.70, gap=0.04, stream_wide=1),
}
#: sources whose items are about one viewer (grouped by viewer)
VIEWER_SOURCES = frozenset({"profile", "recall", "state"})


def floor_for(embedder_name: str) -> Floor | None:
    """The floor of an embedder (``offline-hash-v1:384`` → the offline one's), or None."""
    return FLOORS.get(embedder_name.rsplit(":", 1)[0])


def group(item: models.RecallItem) -> str:
    """The items whose best similarity an item is compared with."""
    return f"viewer:{item.viewer}" if item.source in VIEWER_SOURCES else f"source:{item.source}"


def source_key(item: models.RecallItem) -> str:
    """The item's source as timings and degraded lists name it (``recall:alice``)."""
    return f"{item.source}:{item.viewer}" if item.viewer else item.source


def keep(
    items: Iterable[models.RecallItem],
    floor: Floor | None,
    *,
    open_viewers: Collection[str] = (),
    uncapped: Collection[str] = (),
) -> tuple[list[models.RecallItem], dict[str, int]]:
    """The items worth their tokens, in their order, and how many each source lost to the floor
    (``floor`` None: all of them). ``open_viewers``: logins the floor does not apply to;
    ``uncapped``: source kinds whose items ``Floor.stream_wide`` does not cap (the episodes of a
    question about what the bot said)."""
    ranked = list(items)
    if floor is None:
        return ranked, {}
    best: dict[str, float] = {}
    for item in ranked:
        if item.similarity is not None:
            key = group(item)
            best[key] = max(best.get(key, item.similarity), item.similarity)
    kept: list[models.RecallItem] = []
    dropped: dict[str, int] = {}
    shown: dict[str, int] = {}
    for item in ranked:
        capped = item.source not in VIEWER_SOURCES and item.source not in uncapped
        if _worth(item, floor, best, open_viewers) and not (
            capped and shown.get(item.source, 0) >= floor.stream_wide
        ):
            shown[item.source] = shown.get(item.source, 0) + 1
            kept.append(item)
        else:
            key = source_key(item)
            dropped[key] = dropped.get(key, 0) + 1
    return kept, dropped


def _worth(
    item: models.RecallItem,
    floor: Floor,
    best: dict[str, float],
    open_viewers: Collection[str],
) -> bool:
    if item.source == "state" or (item.viewer is not None and item.viewer in open_viewers):
        return True
    if item.similarity is None:  # a profile fact no hit repeats; a search without vectors
        return item.source != "profile"
    top = best.get(group(item), item.similarity)
    return item.similarity >= floor.absolute and item.similarity >= top - floor.gap
