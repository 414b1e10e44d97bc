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

Before the floor, a question that asks for a profile slot, or an everyday one ("does he still
smoke?": ``memory.recall.everyday``), is answered by the statement of it (``answered``;
``PlannedSource.asks``, ``memory.recall.asked``): for "where does @bob live?", when
one of bob's recalled items or profile facts states where he lives, that statement is all of bob
the prompt gets, and a stream-wide source searched with that question alone (the episodes that
share its words: "how long has he been live?") adds nothing. Similarities cannot make that cut:
e5 puts every fact of a short profile within 0.04 of the best, the answer often below the others
(docs/evaluation.md, "Precision", has what it changed). It applies with every embedder: it reads
the texts, not the vectors.

e5's gap is 0.06: on LoCoMo's development half it keeps 0.011 more of R@5 than 0.04 for half an
item more a prompt, the regulars corpus one more answer, LongMemEval's tune half one more question
with all its evidence in the first five, and the held-out halves agree (docs/evaluation.md,
"Precision", "The gap").

Within the floor, four rules make the prompt smaller and its order better for a viewer who asked
for one thing (e5's values, chosen on the development halves with ``scripts/calibrate_floor.py``;
figures in docs/evaluation.md, "Precision"):

* ``per_viewer`` caps that viewer's items at five: on LoCoMo's and the regulars corpus'
  development halves the first five hold the answer as often as all of them (R@5 unchanged), at
  three quarters and half of the items;
* ``order`` ``blend`` orders each viewer's items by the reciprocal-rank fusion of the search's
  fused order and their dense similarity (counted ``dense_weight`` times). The search's lexical
  side ranks a statement sharing the question's words but not its meaning ("my biggest pet
  peeve…" for "any pets?") above the answer; the similarity does not. By similarity alone, such a
  distractor ranked above the answer half as often on the regulars corpus, but LoCoMo, whose
  answers often share the question's names and rare words, lost recall; the blend keeps LoCoMo's
  R@5 and gets most of the regulars' gain.
* ``latest_first``: when the latest statement answers the question (``latest_of``: "where do I
  currently keep my sneakers?", "how many times have I met Alex?"), the items kept of that viewer
  that share a word with the question are shown newest first instead (the others are no telling
  of it: "I brew my own beer" for "does he still smoke?"). The blend had undone the search's recency
  (``memory.spaces.recency``) there: a changed fact's older telling, as similar to the question
  as the newer one, came first. Applied after the cap, it changes the order, never what is kept;
  ``latest_gap`` widens the gap for that viewer, since the newest telling is often said in
  passing ("…can you compare these tripods? By the way, my new 70-200mm lens…") and lies further
  from the question than the older one.
* ``moment_margin``: in a question about a viewer other than its author ("what does @bob do?",
  ``about_of``), a moment of the stream (an episode of this stream or of a past one) is kept only
  when it is at least as near the question as the best of that viewer's items. The viewer's own
  statements come first in the prompt; a moment no nearer the question repeats them or is about
  something else: on LoCoMo's and the regulars corpus' development questions it takes a third
  and a fifth of an item from a prompt and no evidence from its first five. A viewer asking about
  themself, and a question about what the bot said, keep their moments as before.

The floors are per embedder, since each spreads similarities differently (e5's related texts sit
at 0.8-0.9, unrelated ones at 0.7-0.8). They are chosen with ``scripts/calibrate_floor.py`` on
development data and reported on data they were not chosen on (docs/evaluation.md, "Precision").
An embedder with none gets no floor: the offline embedder's, whose profile facts often answer
without any search hit repeating them (a floor took the synthetic stream's recall@5 from 0.970
to 0.72 at best), and Ollama's models, which were not measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from memory.recall import asked
from memory.spaces import lexical, recency

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Mapping

    from memory import models


#: the orders ``Floor.order`` knows
ORDERS = ("fused", "similarity", "blend")


@dataclass(frozen=True, slots=True)
class Floor:
    #: an item under this similarity is never kept
    absolute: float
    #: an item more than this below the best similarity of its group is not kept
    gap: float
    #: at most this many items of a stream-wide source (episodes, lore): their searches match
    #: the question's words in other viewers' lines and the streamer's canon, rarely its answer
    stream_wide: int = 10
    #: at most this many items of one viewer who asked for one thing (None: no cap); a viewer
    #: who asked an open question about themself (``open_viewers``) is never capped
    per_viewer: int | None = None
    #: how each viewer's items are ordered: ``fused`` (the search's fused score), ``similarity``
    #: (their dense similarity), ``blend`` (reciprocal-rank fusion of those two orders); the
    #: items keep the places the viewer's items had, so the order across viewers is unchanged
    order: Literal["fused", "similarity", "blend"] = "fused"
    #: in ``blend``, how many times the similarity order counts (the fused order: once)
    dense_weight: float = 1.0
    #: for a viewer whose question the latest statement answers (``latest_of``), the items
    #: kept of theirs that share a word with it newest first, in the places they hold
    #: (``newest_first``; what is kept does not change)
    latest_first: bool = False
    #: for such a viewer, the ``gap`` instead (None: ``gap``): a changed fact's newest telling,
    #: often said in passing about something else, lies further from the question than the rest
    latest_gap: float | None = None
    #: in a question about viewers other than its author (``keep``'s ``about``), a moment of the
    #: stream (``MOMENTS``) is kept only when its similarity is at least their best item's plus
    #: this (None: no such rule): the viewers' own statements come first in the prompt and say
    #: what they said better than an episode that is no nearer the question
    moment_margin: float | None = None

    def __post_init__(self) -> None:
        if self.order not in ORDERS:
            raise ValueError(f"unknown order {self.order!r}: one of {', '.join(ORDERS)}")


#: by embedder name, without its ``:dim`` suffix
FLOORS: dict[str, Floor] = {
    "e5-small-q4-v1": Floor(
        absolute=0.70,
        gap=0.06,
        stream_wide=1,
        per_viewer=5,
        order="blend",
        dense_weight=3.0,
        latest_first=True,
        latest_gap=0.08,
        moment_margin=0.0,
    ),
}
#: the reciprocal-rank constant of ``Floor.order`` ``blend`` (Qdrant's fusion uses 2 as well)
BLEND_K = 2
#: sources whose items are about one viewer (grouped by viewer)
VIEWER_SOURCES = frozenset({"profile", "recall", "state"})
#: sources whose items are a viewer's own statements (a slot answer is one of them)
_STATEMENTS = frozenset({"profile", "recall"})
#: sources whose items are moments of the stream (this stream's episodes, past streams')
MOMENTS = frozenset({"episodic", "earlier"})


def floor_for(embedder_name: str) -> Floor | None:
    """The floor of an embedder (``offline-hash-v1:384`` → the offline one's), or None."""
    return FLOORS.get(embedder_name.rsplit(":", 1)[0])


def group(item: models.RecallItem) -> str:
    """The items whose best similarity an item is compared with."""
    return _group_of(item.source, item.viewer)


def _group_of(kind: str, viewer: str | None) -> str:
    """``group`` of the items of a source of ``kind`` (about ``viewer``)."""
    return f"viewer:{viewer}" if kind in VIEWER_SOURCES else f"source:{kind}"


def source_key(item: models.RecallItem) -> str:
    """The item's source as timings and degraded lists name it (``recall:alice``)."""
    return f"{item.source}:{item.viewer}" if item.viewer else item.source


def keep(
    items: Iterable[models.RecallItem],
    floor: Floor | None,
    *,
    open_viewers: Collection[str] = (),
    uncapped: Collection[str] = (),
    asks: Mapping[str, frozenset[str]] | None = None,
    latest: Mapping[str, str] | None = None,
    about: Collection[str] = (),
) -> tuple[list[models.RecallItem], dict[str, int]]:
    """The items worth their tokens, in their order, and how many each source lost to the floor
    (``floor`` None: only what a slot answer leaves out). ``open_viewers``: logins the floor does
    not apply to; ``uncapped``: source kinds whose items ``Floor.stream_wide`` does not cap (the
    episodes of a question about what the bot said); ``asks``: by ``group``, the profile slots
    its question asks for (``asks_of``); ``latest``: by ``group``, the question the latest
    statement answers (``latest_of``); ``about``: logins of the viewers the batch asks about
    who did not write it (``about_of``: ``Floor.moment_margin``)."""
    latest = latest or {}
    ranked, dropped, leading = answered(items, asks or {})
    if floor is None:
        return ranked, dropped
    kept, ranked = ranked[:leading], ranked[leading:]  # channel state and slot answers
    if floor.order != "fused":
        ranked = reorder(
            ranked, dense_weight=floor.dense_weight if floor.order == "blend" else None
        )
    best: dict[str, float] = {}
    for item in (*kept, *ranked):  # a slot answer is its viewer's best (``moment_margin``)
        if item.similarity is not None:
            key = group(item)
            best[key] = max(best.get(key, item.similarity), item.similarity)
    moments = _moment_floor(floor, best, about, uncapped)
    shown: dict[str, int] = {}
    for item in ranked:
        if _worth(item, floor, best, open_viewers, latest, moments) and not _capped(
            item, floor, shown, open_viewers, uncapped
        ):
            key = _cap_key(item)
            shown[key] = shown.get(key, 0) + 1
            kept.append(item)
        else:
            key = source_key(item)
            dropped[key] = dropped.get(key, 0) + 1
    if floor.latest_first and latest:
        kept = newest_first(kept, latest)
    return kept, dropped


def about_of(sources: Iterable[models.PlannedSource], authors: Collection[str]) -> set[str]:
    """The logins of the viewers whose statements the plan searches who are not among the batch's
    ``authors`` (user ids): the viewers a question asks about ("what does @bob do?")."""
    return {
        source.viewer
        for source in sources
        if source.kind in _STATEMENTS and source.viewer and source.user_id not in authors
    }


def _moment_floor(
    floor: Floor, best: Mapping[str, float], about: Collection[str], uncapped: Collection[str]
) -> float | None:
    """The similarity a moment of the stream needs (``Floor.moment_margin``), or None: no rule
    (no margin, no viewer asked about with an item, or a question about what the bot said)."""
    found = [best[key] for key in (_group_of("recall", login) for login in about) if key in best]
    if floor.moment_margin is None or not found or MOMENTS & set(uncapped):
        return None
    return max(found) + floor.moment_margin


def latest_of(sources: Iterable[models.PlannedSource]) -> dict[str, str]:
    """By ``group``, the question the latest statement answers ("where do I currently keep my
    sneakers?", "how many times have I met Alex?": ``recency.asks_latest``); not a question
    about the past ("where did I live before?") nor an open one about the viewer."""
    return {
        _group_of(source.kind, source.viewer): source.query
        for source in sources
        if source.kind in _STATEMENTS
        and source.viewer
        and not (source.past or source.broad)
        and recency.asks_latest(source.query)
    }


def newest_first(
    items: list[models.RecallItem], questions: Mapping[str, str]
) -> list[models.RecallItem]:
    """The statements of each group of ``questions`` (``_STATEMENTS`` with a ``said_at``) that
    share a word with its question (``lexical.ENCODER``'s terms: "sneakers", "smoke") newest
    first, in the places they hold; every other item stays put. A statement that shares none is
    not a telling of what was asked ("I brew my own beer" for "does he still smoke?"). A stable
    sort: same time, same order."""
    terms = {key: set(lexical.ENCODER.query(text)[0]) for key, text in questions.items()}

    def telling(item: models.RecallItem) -> bool:
        return (
            item.source in _STATEMENTS
            and item.said_at is not None
            and group(item) in terms
            and bool(terms[group(item)].intersection(lexical.ENCODER.query(item.said)[0]))
        )

    def newest(members: list[models.RecallItem]) -> list[models.RecallItem]:
        return sorted(members, key=lambda m: -m.said_at.timestamp() if m.said_at else 0.0)

    return _in_places(items, telling, newest)


def asks_of(sources: Iterable[models.PlannedSource]) -> dict[str, frozenset[str]]:
    """By ``group``, the slots the plan's sources ask for (``PlannedSource.asks``)."""
    asks: dict[str, frozenset[str]] = {}
    for source in sources:
        if source.asks and not source.broad:
            key = _group_of(source.kind, source.viewer)
            asks[key] = asks.get(key, frozenset()) | source.asks
    return asks


def answered(
    items: Iterable[models.RecallItem], asks: Mapping[str, frozenset[str]]
) -> tuple[list[models.RecallItem], dict[str, int], int]:
    """The items left when a viewer's profile answers the slot a question asks for ("where does
    @bob live?", and bob's memory says "I live in Turin"): the items that state it come first
    (after channel state), bob's other items go, and so do the items of a stream-wide source
    whose every question asked only slots answered that way. Channel state stays. Also how many
    items each source lost, and how many answers lead the list (the floor keeps them: a profile
    fact no search hit repeats has no similarity to be judged by)."""
    ranked = list(items)
    answering: set[int] = set()
    slots: set[str] = set()
    for index, item in enumerate(ranked):
        wanted = asks.get(group(item))
        # a superseded statement is recalled only for a question about the past ("where did
        # she live before?"): there it answers too, labelled as such
        if not wanted or item.source not in _STATEMENTS:
            continue
        if stated := wanted & asked.states(item.text):
            answering.add(index)
            slots.update(stated)
    if not answering:
        return ranked, {}, 0
    settled = {group(ranked[index]) for index in answering}
    state = [item for item in ranked if item.source == "state"]
    answers = [ranked[index] for index in sorted(answering)]
    rest: list[models.RecallItem] = []
    dropped: dict[str, int] = {}
    for index, item in enumerate(ranked):
        if item.source == "state" or index in answering:
            continue
        key = group(item)
        wanted = asks.get(key, frozenset())
        if key in settled or (item.source not in VIEWER_SOURCES and wanted and wanted <= slots):
            dropped[source_key(item)] = dropped.get(source_key(item), 0) + 1
        else:
            rest.append(item)
    return [*state, *answers, *rest], dropped, len(state) + len(answers)


def reorder(
    ranked: list[models.RecallItem], *, dense_weight: float | None = None
) -> list[models.RecallItem]:
    """Each viewer's items (``VIEWER_SOURCES``) reordered by similarity, best first (given a
    ``dense_weight``: by the reciprocal-rank fusion of that order, counted ``dense_weight``
    times, and theirs), in the places that viewer's items held; items without a similarity
    (channel state) stay put. Sorts are stable: on a tie, the fused order decides."""

    def by_similarity(members: list[models.RecallItem]) -> list[models.RecallItem]:
        # fused rank = position in ``members``
        order = sorted(range(len(members)), key=lambda k: -(members[k].similarity or 0.0))
        if dense_weight is not None:
            dense = {k: rank for rank, k in enumerate(order)}
            order = sorted(
                range(len(members)),
                key=lambda k: -(1 / (BLEND_K + k) + dense_weight / (BLEND_K + dense[k])),
            )
        return [members[k] for k in order]

    return _in_places(
        ranked,
        lambda item: item.source in VIEWER_SOURCES and item.similarity is not None,
        by_similarity,
    )


def _in_places(
    items: list[models.RecallItem],
    moves: Callable[[models.RecallItem], bool],
    arrange: Callable[[list[models.RecallItem]], list[models.RecallItem]],
) -> list[models.RecallItem]:
    """The items of each ``group`` that ``moves`` rearranged by ``arrange`` in the places they
    hold (the order across groups is unchanged); every other item stays put."""
    places: dict[str, list[int]] = {}
    for index, item in enumerate(items):
        if moves(item):
            places.setdefault(group(item), []).append(index)
    out = list(items)
    for indices in places.values():
        arranged = arrange([items[i] for i in indices])
        for index, member in zip(indices, arranged, strict=True):
            out[index] = member
    return out


def _cap_key(item: models.RecallItem) -> str:
    return group(item) if item.source in VIEWER_SOURCES else item.source


def _capped(
    item: models.RecallItem,
    floor: Floor,
    shown: dict[str, int],
    open_viewers: Collection[str],
    uncapped: Collection[str],
) -> bool:
    """The item's group has its cap's worth of items already."""
    count = shown.get(_cap_key(item), 0)
    if item.source in VIEWER_SOURCES:
        if item.source == "state" or floor.per_viewer is None or item.viewer in open_viewers:
            return False
        return count >= floor.per_viewer
    return item.source not in uncapped and count >= floor.stream_wide


def _worth(
    item: models.RecallItem,
    floor: Floor,
    best: dict[str, float],
    open_viewers: Collection[str],
    latest: Mapping[str, str],
    moments: float | None = None,
) -> bool:
    if item.source == "state" or (item.viewer is not None and item.viewer in open_viewers):
        return True
    if item.similarity is None:  # a profile fact no hit repeats; a search without vectors
        return item.source != "profile"
    if moments is not None and item.source in MOMENTS and item.similarity < moments:
        return False
    key = group(item)
    top = best.get(key, item.similarity)
    gap = floor.gap
    if floor.latest_gap is not None and key in latest:
        gap = floor.latest_gap
    return item.similarity >= floor.absolute and item.similarity >= top - gap
