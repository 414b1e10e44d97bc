"""Recency in ranking: of a viewer's memories that answer the query comparably, the newer first.

Used by ``store.rank`` on the ranked hits of one search. Going down the ranking, a viewer's own
memory (personal, fact, correction) joins the group of a memory ranked above it when the two are
comparable, and each group is shown newest first (``said_at``); groups keep their place. Two
memories are comparable when

* **they match the same query terms** (``indexed_terms``: text, speaker, the question a memory
  answers; at least one) and the lower one scores at least ``RECENCY_BAND`` of the higher —
  it then joins the group right above it. Fused scores are ranks (``spaces.lexical``), so two
  near-identical chat lines ("I live in Rome", "I live in Turin these days") score 1.5 and 1.0
  whatever their raw similarities; or
* **they are about the same subject of a question about a state** (``asks_state``: how many,
  how much, how long, how often, current, so far, most recent …): each matches at least
  ``SUBJECT_TERMS`` query terms besides the speaker's name (which every memory of theirs matches: "what did Caroline research?"), the
  terms they share are at least ``SUBJECT_SHARE`` of the terms the one matching fewer matches,
  and the lower one scores at least ``SUBJECT_BAND`` of the higher — it then joins that group
  wherever it is above. Long statements ("…I've been using my Fitbit Charge 3 for 6 months now…", later
  "…my Fitbit Charge 3, which I've had for 9 months…") match a question's subject words alike and
  differ in a dozen others, so their fused ranks lie far apart and their matched terms are seldom
  exactly the same: the first rule never compared them (LongMemEval's knowledge-update questions).

A count, an amount, a duration, a frequency or what is current changes over time, so the latest
statement of it holds; a question about an event ("what did Caroline research?") is answered by
the event's own telling, and later mentions of its subject are retellings: the subject rule is
for questions about a state only (LoCoMo's development half: R@1 0.377 → 0.290 with it on every
question). A question about an event in the past tense (``asks_event``: "what did …", "where was
…", naming no state) and one about *when* something happened (``asks_when``: "when did I move to
Turin?", "quando …", and the time between events: "how many days passed between …", "how many
weeks ago …", read from the statements made at the time) are left alone by both rules. An old memory that is the only answer is never
buried: a newer one joins its group only by
matching the same query terms. The groups' order is kept in the scores: the reordered hits take
the original scores best first, so context assembly, which sorts by score, shows the same order.
A re-rank in Python over the fetched candidates, the same on a Qdrant server and embedded.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory.spaces import lexical, records

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping, Sequence

    from memory import ports

#: same query terms: a memory scoring at least this share of the one above it is comparable. 2/3
#: is the fused score of the second place over the first when both rank alike in every ranking
RECENCY_BAND = 0.66
#: same subject: each memory matches at least this many query terms (besides the speaker) ...
SUBJECT_TERMS = 2
#: ... the shared ones are at least this share of the terms the one matching fewer matches ...
SUBJECT_SHARE = 2 / 3
#: ... and the lower scores at least this share of the higher
SUBJECT_BAND = 0.25
#: a question about when: "when", "what time/day/year", "how long ago", "quando", "che giorno", and
#: the time between events ("how many days passed between / before / since …", "how many weeks
#: ago …"; LongMemEval's tune half: turn all@5 of its three such temporal questions 0 → 1, the
#: groups had put a session's later lines first)
_WHEN = re.compile(
    r"\b(?:when|what (?:time|day|date|year|month)|how long ago|quando|che (?:giorno|ora|anno)"
    r"|how many (?:days|weeks|months|years) (?:(?:had|have|has) )?(?:ago|passed|before|after"
    r"|between|since|earlier|later)|quant[ie] (?:giorni|settimane|mesi|anni) (?:fa|sono passat[ie]"
    r"|prima|dopo|tra|fra))\b",
    re.IGNORECASE,
)
#: a question about a state that changes (EN + IT)
_STATE = re.compile(
    r"\b(?:how (?:many|much|long|often)|current(?:ly)?|so far|now|nowadays|these days|still"
    r"|at the moment|most recent(?:ly)?|recent(?:ly)?|latest|quant[oiae]|da quanto|attualmente"
    r"|adesso|ora|ancora|finora|ultimamente|al momento)\b",
    re.IGNORECASE,
)
#: a past-tense question (EN + IT): about an event unless it names a state. Italian: the
#: passato prossimo ("cosa ho comprato", "dove sei andata", "che film abbiamo visto"), a remote
#: past or an imperfect of essere ("fu", "era")
_EVENT = re.compile(
    r"\b(?:did|was|were|fu|furono|era|erano)\b|"
    r"\b(?:ho|hai|ha|abbiamo|avete|hanno|sono|sei|siamo|siete|è)\s+(?:\w+\s+)?"
    r"\w+(?:at|ut|it|tt|st|ss|rs|ev)[oaie]\b",
    re.IGNORECASE,
)
#: the memory kinds recency ranks (a viewer's own; episodes and lore keep their scores)
RECENT_KINDS = frozenset(
    {records.MemoryKind.PERSONAL, records.MemoryKind.FACT, records.MemoryKind.CORRECTION}
)


def indexed_terms(
    record: records.MemoryRecord, sparse: ports.SparseEncoder = lexical.ENCODER
) -> frozenset[int]:
    """The term ids a memory is found by lexically in the ``sparse`` scheme: its text's, its
    speaker's login's and the question's it answers (``ports.SparseEncoder.document``)."""
    login = record.login.replace("_", " ") if record.login else ""
    return frozenset(sparse.query(f"{record.text} {login}")[0]).union(record.context_terms)


def stored_terms(record: records.MemoryRecord, sparse: ports.SparseEncoder) -> dict[str, Any]:
    """``indexed_terms`` as a stored point keeps them (``store.TERMS_KEY``), with the scheme they
    are ids of: a search then reads them instead of tokenizing every candidate again (~8 µs a
    candidate, 20 candidates a search; see docs/evaluation.md, 'The embedded store')."""
    return {"scheme": sparse.version, "ids": sorted(indexed_terms(record, sparse))}


def read_terms(value: Any, sparse: ports.SparseEncoder) -> frozenset[int] | None:
    """The terms ``stored_terms`` kept, when they are of ``sparse``'s scheme (None: a point
    written before them, or copied from a collection of another scheme)."""
    if isinstance(value, dict) and value.get("scheme") == sparse.version:
        return frozenset(value.get("ids") or ())
    return None


@dataclass(slots=True)
class _Ranked:
    hit: records.MemoryHit
    matched: frozenset[int]
    #: the query terms it matches besides its speaker's name (every memory of theirs has it)
    subject: frozenset[int]


def _own(hit: records.MemoryHit) -> bool:
    return hit.record.kind in RECENT_KINDS


def same_terms(lower: _Ranked, head: _Ranked, band: float) -> bool:
    return (
        bool(lower.matched)
        and lower.matched == head.matched
        and lower.hit.score >= band * head.hit.score
    )


def same_subject(lower: _Ranked, head: _Ranked) -> bool:
    fewer = min(len(lower.subject), len(head.subject))
    return (
        fewer >= SUBJECT_TERMS
        and len(lower.subject & head.subject) >= SUBJECT_SHARE * fewer
        and lower.hit.score >= SUBJECT_BAND * head.hit.score
    )


def asks_state(query: str) -> bool:
    """A question about a state that changes: a count, an amount, a duration, a frequency, what
    is current or latest ("how many pages have I read so far?", "where do I currently keep …")."""
    return _STATE.search(query) is not None


def asks_event(query: str, *, state: bool | None = None) -> bool:
    """A question about an event, in the past tense and naming no state ("what did Caroline
    research?", "where was Tim last week?"): its own telling answers it, later mentions of its
    subject are retellings. ``state``: ``asks_state(query)`` when already known."""
    if state is None:
        state = asks_state(query)
    return not state and _EVENT.search(query) is not None


def asks_when(query: str) -> bool:
    """A question about when something happened ("when did I move?", "quando…"): answered by
    the statement made at the time, not by the newest retelling, so recency leaves it alone."""
    return _WHEN.search(query) is not None


def asks_latest(query: str) -> bool:
    """A question the latest statement answers: about a state (``asks_state``), neither about
    when something happened (``asks_when``) nor about a past event (``asks_event``)."""
    state = asks_state(query)
    return state and not asks_when(query) and not asks_event(query, state=state)


def recent_first(
    query: str,
    hits: Sequence[records.MemoryHit],
    *,
    band: float | None = None,
    sparse: ports.SparseEncoder = lexical.ENCODER,
    indexed: Mapping[str, frozenset[int]] | None = None,
    query_terms: Collection[int] | None = None,
) -> list[records.MemoryHit]:
    """The hits best first, comparable answers of a viewer newest first (module docstring).
    ``band``: ``RECENCY_BAND`` when None (above 1: the same-terms rule never groups);
    ``sparse``: the scheme the hits were found by (their ``context_terms`` are its ids);
    ``indexed``: ``indexed_terms`` already known, by memory id (``read_terms``);
    ``query_terms``: the query's term ids in ``sparse``, when the search made them already."""
    known = indexed or {}
    band = RECENCY_BAND if band is None else band
    ordered = sorted(hits, key=lambda h: (-h.score, -h.record.said_at.timestamp(), h.record.id))
    state = asks_state(query)
    if asks_when(query) or asks_event(query, state=state):
        return ordered
    terms = set(sparse.query(query)[0] if query_terms is None else query_terms)
    groups: list[list[_Ranked]] = []
    logins: dict[str, set[int]] = {}
    for hit in ordered:
        own_terms = known.get(hit.record.id)
        if own_terms is None:
            own_terms = indexed_terms(hit.record, sparse)
        matched = own_terms & terms
        login = hit.record.login or ""
        if login not in logins:  # a viewer's hits share their login's terms
            logins[login] = set(sparse.query(login.replace("_", " "))[0]) if login else set()
        ranked = _Ranked(
            hit=hit,
            matched=matched,
            subject=matched - logins[login],
        )
        group = _group_of(ranked, groups, band, state=state) if _own(hit) else None
        if group is None:
            groups.append([ranked])
        else:
            group.append(ranked)
    reordered = [
        ranked.hit
        for group in groups
        for ranked in sorted(group, key=lambda r: -r.hit.record.said_at.timestamp())
    ]
    scores = [hit.score for hit in ordered]
    return [
        hit if hit.score == score else dataclasses.replace(hit, score=score)
        for hit, score in zip(reordered, scores, strict=True)
    ]


def _group_of(
    ranked: _Ranked, groups: list[list[_Ranked]], band: float, *, state: bool
) -> list[_Ranked] | None:
    """The group ``ranked`` joins: the one right above by the same terms, else (``state``: a
    question about a state) the highest one whose head is about the same subject."""
    if groups and _own(groups[-1][0].hit) and same_terms(ranked, groups[-1][0], band):
        return groups[-1]
    if not state or len(ranked.subject) < SUBJECT_TERMS:  # ``same_subject`` needs as many
        return None
    same_viewer = (g for g in groups if g[0].hit.record.user_id == ranked.hit.record.user_id)
    return next((g for g in same_viewer if _own(g[0].hit) and same_subject(ranked, g[0])), None)
