"""Context assembly: recall outcomes + working history → one small, sectioned memory block.

Ranking: every item competes on relevance to the batch, across sources. Search hits (recall,
episodic, lore) carry their search score; a profile fact takes the score of the search hit that
repeats it (same memory, or the same words), and one that no hit repeats ranks after every hit —
a profile line that answers nothing is not shown first — except when the viewer explicitly asked
what the bot knows about them, where the profile comes first. Channel state is canonical and always
comes first. The token budget is spent in that order, and the viewer items (profile and recall)
are shown in one section, most relevant first.

Steps: normalize (case, punctuation, whitespace, accents) and deduplicate across sources (a
viewer's items only against that viewer's own, so two viewers saying the same words both keep
theirs; an episode whose lines the viewers' own memories already show adds nothing); drop what
the working history already shows; drop recall items that repeat a profile fact
of the same viewer; cap the block by a token budget; render labelled sections with every item
attributed by login and, given the turn's ``clock``, every memory and profile line labelled with
when it was said (``timelabel``: ``- [alice · 3 weeks ago] …``; the labels count against the
cap). When a viewer explicitly asked what the bot remembers, the block says so if the data is
unavailable or if nothing is stored, so the model admits it instead of inventing.

``dedupe=False`` (the ``no_dedup`` ablation, ``settings.memory.dedupe``) skips the deduplication and
the history drop: every non-empty item is kept, duplicates included; the token cap, the priority
order and the sections still apply.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memory import models
from memory.recall import relevance, timelabel
from memory.recall.words import normalize as normalize  # re-exported: context.normalize

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping, Sequence

RULE_LINE = (
    "Lines are [viewer · when said]. Recent chat beats older memories, the newer of two "
    "statements by one viewer holds, channel state is canonical. Never mix viewers up."
)
#: section titles by section, in prompt order
SECTIONS: tuple[tuple[str, str], ...] = (
    ("viewer", "What viewers told us (most relevant first)"),
    ("episodic", "Earlier on stream"),
    ("earlier", "Past streams"),
    ("lore", "Lore"),
    ("state", "Channel state (canonical)"),
)
#: the section of each source kind (others: their own)
SECTION_OF = {"profile": "viewer", "recall": "viewer"}
#: on equal scores, which kinds get the budget first (state always does: it is canonical)
PRIORITY = ("state", "profile", "recall", "episodic", "earlier", "lore")
#: a profile fact no search hit repeats ranks below every hit (by this much)
UNMATCHED_PROFILE = -1.0
#: a profile fact of a viewer who asked what the bot knows about them ranks above every hit
EXPLICIT_PROFILE = 2.0
#: an episode holding the bot's reply, for a question about what the bot said ("you
#: recommended…", ``PlannedSource.bot_words``), ranks above every other hit by this much
BOT_WORDS_FIRST = 2.0
#: an episode of an earlier stream, for any other question, ranks below every hit and profile
#: fact: it gets what the budget leaves (LongMemEval, 40 questions of the four other types: at its
#: search score, turn recall_all@10 0.725 → 0.575, past episodes crowding out the viewer's lines)
EARLIER_AFTER = -2.0
#: kinds whose items are about the stream or the channel, not about one viewer
STREAM_WIDE = frozenset({"episodic", "earlier", "lore", "state"})
#: kinds whose items are episodes (this stream's, or the channel's earlier streams')
EPISODIC = relevance.MOMENTS
#: one item never takes more than this many characters of the block (an episode with the bot's
#: reply: this much for its viewer lines and this much for the reply)
MAX_ITEM_CHARS = 300
#: what precedes the bot's own words in an episode line: the block is the bot's prompt, so its
#: reply is "you"; never a viewer's login
REPLY_LABEL = " → you replied: "


class _Norms(dict[str, str]):
    """``normalize`` of each text, computed once per assembly (an item's text is compared with
    the history, the profile facts and the items kept before it)."""

    def __missing__(self, text: str) -> str:
        norm = self[text] = normalize(text)
        return norm


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceOutcome:
    """What one planned source gave: items, or the reason it failed."""

    source: models.PlannedSource
    items: tuple[models.RecallItem, ...] = ()
    degraded: models.Degraded | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Assembled:
    #: the items shown in the block, in prompt order
    items: list[models.RecallItem] = field(default_factory=list)
    block: str = ""
    tokens_estimate: int = 0
    #: items the relevance floor left out, per source key
    dropped: dict[str, int] = field(default_factory=dict)


def _history_view(history: Sequence[models.HistoryItem]) -> tuple[set[str], str]:
    ids = {item.message_id for item in history if item.message_id}
    text = " \n ".join(normalize(item.text) for item in history if item.text)
    return ids, f" {text} "


def _shown_by_history(item: models.RecallItem, norm: str, ids: set[str], history_text: str) -> bool:
    """The working history already shows this memory (its messages or its words ``norm``)."""
    if item.origin_message_ids and set(item.origin_message_ids) <= ids:
        return True
    return len(norm) >= 8 and f" {norm} " in history_text


def _overlaps(norm: str, other: str) -> bool:
    if norm == other:
        return True
    shorter, longer = sorted((norm, other), key=len)
    if len(shorter) >= 12 and f" {shorter} " in f" {longer} ":
        return True
    a, b = set(norm.split()), set(other.split())
    return len(a) >= 3 and len(b) >= 3 and len(a & b) / len(a | b) >= 0.8


def _clean(text: str, limit: int = MAX_ITEM_CHARS) -> str:
    """One line, no markdown headings a memory could use to pose as a section."""
    line = " ".join(text.split()).lstrip("#").strip()
    if len(line) > limit:
        line = line[: limit - 1].rstrip() + "…"
    return line


def _shown_text(item: models.RecallItem) -> str:
    """An item's words as the block shows them; an episode's reply after its viewer lines,
    labelled as the bot's own (``REPLY_LABEL``): the viewer lines at most half of the item's
    characters, the reply the rest."""
    if not item.reply:
        return _clean(item.said)
    said = _clean(item.said, MAX_ITEM_CHARS // 2)
    room = MAX_ITEM_CHARS - len(said) - len(REPLY_LABEL)
    return f"{said}{REPLY_LABEL}{_clean(item.reply, room)}"


def _label(item: models.RecallItem) -> str:
    if item.viewer:
        return item.viewer
    labels = {"episodic": "stream", "earlier": "stream", "lore": "lore", "state": "channel"}
    return labels.get(item.source, item.source)


def _line(item: models.RecallItem, clock: timelabel.ChatClock | None = None) -> str:
    """``- [alice · 3 weeks ago] text``: who, and when relative to the turn's chat time (items
    with no time, channel state and lore, and any item when no clock is given: who only)."""
    when = timelabel.label(item, clock) if clock is not None else ""
    label = f"{_label(item)} · {when}" if when else _label(item)
    return f"- [{label}] {_shown_text(item)}"


def _profile_scores(outcomes: Sequence[SourceOutcome], norms: _Norms) -> list[models.RecallItem]:
    """Every item, profile facts re-scored by relevance (see the module docstring)."""
    hits: dict[str | None, list[tuple[str, str, models.RecallItem]]] = {}
    for outcome in outcomes:
        if outcome.source.kind == "recall":
            for hit in outcome.items:
                hits.setdefault(hit.viewer, []).append((hit.memory_id, norms[hit.text], hit))
    items: list[models.RecallItem] = []
    for outcome in outcomes:
        if outcome.source.bot_words:  # asked what the bot said: episodes with its reply first
            items.extend(
                dataclasses.replace(item, score=BOT_WORDS_FIRST + item.score)
                if item.reply
                else item
                for item in outcome.items
            )
            continue
        if outcome.source.kind == "earlier":  # otherwise past streams fill what is left
            items.extend(
                dataclasses.replace(item, score=EARLIER_AFTER + item.score / 100)
                for item in outcome.items
            )
            continue
        if outcome.source.kind != "profile":
            items.extend(outcome.items)
            continue
        for item in outcome.items:
            norm = norms[item.text]
            matched = [
                hit
                for memory_id, text, hit in hits.get(item.viewer, ())
                if memory_id == item.memory_id or _overlaps(norm, text)
            ]
            # as relevant as the hit it repeats (none: it answers nothing the batch asked)
            best = max(matched, key=lambda hit: hit.score) if matched else None
            similarity = best.similarity if best is not None else None
            if outcome.source.explicit:
                score = EXPLICIT_PROFILE + item.score
            elif best is not None:  # just above that hit, so the profile's wording is kept
                score = best.score + 1e-6
            else:
                score = UNMATCHED_PROFILE + item.score / 100
            items.append(dataclasses.replace(item, score=score, similarity=similarity))
    return items


def _ranked(outcomes: Sequence[SourceOutcome], norms: _Norms) -> list[models.RecallItem]:
    """Every item by relevance: channel state first, then best score first across sources (on a
    tie, in ``PRIORITY`` order)."""
    order = {kind: index for index, kind in enumerate(PRIORITY)}
    return sorted(
        _profile_scores(outcomes, norms),
        key=lambda i: (i.source != "state", -i.score, order.get(i.source, len(order))),
    )


def _select(
    outcomes: Sequence[SourceOutcome], history: Sequence[models.HistoryItem], *, dedupe: bool
) -> list[models.RecallItem]:
    """Deduplicated items, best first within a kind, none the history already shows (with
    ``dedupe=False``: every item with text, duplicates and history repeats included)."""
    norms = _Norms()
    if not dedupe:
        return [item for item in _ranked(outcomes, norms) if norms[item.text]]
    ids, history_text = _history_view(history)
    kept: list[models.RecallItem] = []
    seen: list[tuple[str | None, str, str]] = []  # (viewer, kind, normalized text)
    seen_ids: set[str] = set()
    for item in _ranked(outcomes, norms):
        norm = norms[item.text]
        if not norm or item.memory_id in seen_ids:
            continue
        if _shown_by_history(item, norm, ids, history_text):
            continue
        if any(_duplicate(item, norm, other) for other in seen):
            continue
        seen.append((item.viewer, item.source, norm))
        seen_ids.add(item.memory_id)
        kept.append(item)
    return _without_shown_episodes(kept)


def _without_shown_episodes(ranked: Sequence[models.RecallItem]) -> list[models.RecallItem]:
    """Drop an episode whose lines the viewers' own memories ranked above it already show (the
    one-line episode of a recalled statement adds nothing but tokens), and a recalled statement
    that an episode shown first with the bot's reply (``BOT_WORDS_FIRST``) already shows."""
    shown: set[str] = set()
    #: the messages of the episodes shown first for a question about what the bot said
    replied: set[str] = set()
    kept: list[models.RecallItem] = []
    for item in ranked:
        if item.source == "recall" and replied.issuperset(item.origin_message_ids or ("",)):
            continue  # that episode shows the viewer's line already, with the bot's reply
        if item.source in EPISODIC and item.reply and item.score >= BOT_WORDS_FIRST:
            replied.update(item.origin_message_ids)
        if item.source in SECTION_OF:
            shown.update(item.origin_message_ids)
        elif (
            item.source in EPISODIC
            and not item.reply
            and shown.issuperset(item.origin_message_ids or ("",))
        ):
            continue  # an episode with the bot's reply still adds the reply
        kept.append(item)
    return kept


def _duplicate(item: models.RecallItem, norm: str, other: tuple[str | None, str, str]) -> bool:
    viewer, kind, other_norm = other
    if norm == other_norm:
        # a viewer's own statement is theirs even when another viewer said the same words;
        # stream-wide items (episodic, lore, state) name no viewer: their text alone decides
        return item.source in STREAM_WIDE or viewer == item.viewer
    # a recall item that repeats a profile fact of the same viewer adds nothing
    return (
        item.source == "recall"
        and kind == "profile"
        and viewer == item.viewer
        and (_overlaps(norm, other_norm))
    )


def _notices(outcomes: Sequence[SourceOutcome]) -> dict[str, list[str]]:
    """Lines for viewers who explicitly asked: data unavailable, partly unavailable, or nothing stored."""
    per_viewer: dict[str, list[SourceOutcome]] = {}
    for outcome in outcomes:
        if outcome.source.explicit and outcome.source.viewer:
            per_viewer.setdefault(outcome.source.viewer, []).append(outcome)
    notices: dict[str, list[str]] = {}
    for viewer, group in per_viewer.items():
        failed = [o for o in group if o.degraded is not None]
        found = sum(len(o.items) for o in group if o.degraded is None)
        kind = "recall" if any(o.source.kind == "recall" for o in group) else group[0].source.kind
        if failed and not found:
            text = (
                f"Memory about {viewer} is unavailable right now (retrieval failed). Say you "
                "cannot recall it at the moment; do not guess or invent anything about them."
            )
        elif failed:
            text = (
                f"Part of the memory about {viewer} could not be loaded; say only what is listed "
                "here and do not invent the rest."
            )
        elif not found:
            text = f"Nothing is stored about {viewer} yet. Say so honestly; do not invent memories."
        else:
            continue
        notices.setdefault(kind, []).append(f"- [{viewer}] {text}")
    return notices


def assemble(
    outcomes: Sequence[SourceOutcome],
    history: Sequence[models.HistoryItem],
    *,
    token_budget: int,
    dedupe: bool = True,
    clock: timelabel.ChatClock | None = None,
    floor: relevance.Floor | None = None,
    slot_answers: bool = True,
    authors: Collection[str] = (),
) -> Assembled:
    """Build the memory block from the sources' outcomes (see the module docstring); ``clock``:
    the turn's chat time and stream, which every memory line's time label is relative to;
    ``floor``: the relevance floor items must pass; ``slot_answers``: a statement of the slot a
    question asks for stands for the rest of its viewer's items; ``authors``: the user ids of the
    batch's authors, whose questions about others the floor's ``moment_margin`` applies to (all
    three ``memory.recall.relevance``)."""
    notices = _notices(outcomes)
    open_viewers = {o.source.viewer for o in outcomes if o.source.broad and o.source.viewer}
    candidates, dropped = relevance.keep(
        _select(outcomes, history, dedupe=dedupe),
        floor,
        open_viewers=open_viewers,
        uncapped={o.source.kind for o in outcomes if o.source.bot_words},
        asks=relevance.asks_of(o.source for o in outcomes) if slot_answers else None,
        latest=relevance.latest_of(o.source for o in outcomes),
        about=relevance.about_of((o.source for o in outcomes), authors),
    )
    used = _cost(RULE_LINE) + sum(
        _cost(_title(kind)) + sum(_cost(line) for line in lines) for kind, lines in notices.items()
    )
    kinds_used = {SECTION_OF.get(kind, kind) for kind in notices}
    chosen: list[models.RecallItem] = []
    lines: dict[int, str] = {}  # each candidate's line, by the item's id (rendered once)
    for item in candidates:
        line = lines[id(item)] = _line(item, clock)
        cost = _cost(line)
        section = SECTION_OF.get(item.source, item.source)
        if section not in kinds_used:
            cost += _cost(_title(item.source))
        if used + cost > token_budget:
            continue
        used += cost
        kinds_used.add(section)
        chosen.append(item)
    if not chosen and not notices:
        return Assembled(dropped=dropped)
    # asked what the bot said: the episodes (holding its replies) come before the viewer section
    first = EPISODIC if any(o.source.bot_words for o in outcomes) else frozenset()
    ordered, block = _render(chosen, notices, lines, first=first)
    return Assembled(
        items=ordered, block=block, tokens_estimate=models.estimate_tokens(block), dropped=dropped
    )


def _cost(line: str) -> int:
    """What one line (and its newline) adds to ``models.estimate_tokens`` of the block, rounded up,
    so the sum over the lines never under-counts the block (the cap holds)."""
    return max(-(-(len(line) + 1) // 4), len(line.split()))


def _title(kind: str) -> str:
    section = SECTION_OF.get(kind, kind)
    return f"## {dict(SECTIONS).get(section, section.capitalize())}"


def _render(
    chosen: Iterable[models.RecallItem],
    notices: dict[str, list[str]],
    lines_of: Mapping[int, str],
    *,
    first: frozenset[str] = frozenset(),
) -> tuple[list[models.RecallItem], str]:
    """The block's sections in prompt order; ``lines_of``: each chosen item's line, by its id."""
    by_kind: dict[str, list[models.RecallItem]] = {}
    for item in chosen:
        by_kind.setdefault(SECTION_OF.get(item.source, item.source), []).append(item)
    sectioned: dict[str, list[str]] = {}
    for kind, extra in notices.items():
        sectioned.setdefault(SECTION_OF.get(kind, kind), []).extend(extra)
    kinds = [kind for kind, _ in SECTIONS if kind in first]
    kinds += [kind for kind, _ in SECTIONS if kind not in first]
    kinds += sorted(k for k in {*by_kind, *sectioned} if k not in kinds)
    lines = [RULE_LINE]
    ordered: list[models.RecallItem] = []
    for kind in kinds:
        items, extra = by_kind.get(kind, []), sectioned.get(kind, [])
        if not items and not extra:
            continue
        lines.append(_title(kind))
        lines.extend(lines_of[id(item)] for item in items)
        lines.extend(extra)
        ordered.extend(items)
    return ordered, "\n".join(lines)
