"""Supersession: which of a viewer's memories a newer statement of theirs replaces (pure rules).

A viewer's newer self-statement about the same thing marks the older memories *superseded*
(``MemorySpaces.supersede``): they stay stored, listed, exported and erasable, but search leaves them
out unless a question asks about the past (``include_superseded``). "The same thing" is one of:

* **the same profile slot** (``profile.derive``): "I moved to Turin" supersedes "I live in Rome"
  (``location``), "lavoro come barista" / "lavoro come programmatore" (``job``) — when the values
  differ ("I live in Rome" said twice supersedes nothing) and every named slot of the older memory is
  set again by the newer one (so "I'm 25 and I live in Rome" is not hidden by a move: its age stays
  recallable, and recency ranking puts the move first);
* **the same subject**, changed: the newer statement has a change cue and shares content words
  (``embedders.terms``, the cue words and a few generic verbs left out) with the older one — one
  shared word with a strong cue ("anymore", "no longer", "moved", "switched", "quit", "non … più",
  "mi sono trasferito", "ho cambiato", "ho lasciato" …), two with a weak one ("now", "these days",
  "adesso", "ora", "ormai" …), and at least a third (weak cue: half) of the shorter statement's
  content words, both statements chat lines of at most ``MAX_TERMS`` content words (long conversational
  turns share a name or two and a cue word by chance): "I don't study architecture anymore, I switched to design" supersedes
  "I study architecture"; "ho cambiato lavoro" supersedes "lavoro in un bar".

Never superseding: a question, a hypothetical or plan ("if I moved to Berlin", "I might switch to
law", "vorrei trasferirmi a Milano"), reported speech, and — for the subject rule — a statement about
someone else ("my sister moved to Milan", "mio fratello ha lasciato il lavoro") or to someone
("now you're helping others"); and nothing supersedes a question or a hypothetical. Only memories of the
same viewer in the same space, and only an older one: the times are the statements' own chat times
(``MemoryRecord.said_at``), not the order they are processed in, so a VOD imported late never hides
what the viewer said after it — the newer memory supersedes the imported one instead.

``plan`` decides the marks of a space: a memory's mark names the *earliest* newer memory that
supersedes it (Rome → Turin → Milan: Rome is superseded by Turin, Turin by Milan), at that memory's
chat time, so a retried job plans the same marks (idempotent). A mark pointing at a memory that is no
longer stored (forgotten, corrected away) is re-planned against the memories that remain, and cleared
when none supersedes it: the older memory is current again.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory.consolidate import profile
from memory.spaces import embedders, records

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping, Sequence
    from datetime import datetime

#: the kinds of a viewer's own memories, the only ones that supersede or are superseded
KINDS = frozenset(
    {records.MemoryKind.PERSONAL, records.MemoryKind.FACT, records.MemoryKind.CORRECTION}
)
#: change-cue strengths
NONE, WEAK, STRONG = 0, 1, 2
#: shared content words the subject rule needs, by cue strength
SHARED_NEEDED = {WEAK: 2, STRONG: 1}
#: and the share of the shorter statement's content words they must be (long conversational
#: messages share a name or two by chance: LoCoMo's turns superseded each other by the hundred)
SHARE_NEEDED = {WEAK: 1 / 2, STRONG: 1 / 3}
#: the subject rule reads chat lines: a statement of more content words than this is a paragraph
#: of conversation, where cue words and shared words meet by chance
MAX_TERMS = 12

_STRONG_EN = (
    r"any ?more|no longer|moved|relocated|switched|changed"
    r"|quit|quitted|stopped|gave up|given up|dropped out|left (?:my|the|that)|used to|instead"
    r"|new (?:job|place|city|school|course|major)|graduated|retired|got fired|got a job"
    r"|started (?:a new|working|studying)|just started|became|not anymore|finally finished"
)
_STRONG_IT = (
    r"non\b.*\bpi[uù]|trasferit[oaie]|traslocat[oaie]|cambiat[oaie]|lasciat[oaie]|smess[oaie]"
    r"|mollat[oaie]|licenziat[oaie]|passat[oaie] a|nuovo lavoro|nuova casa|invece|laureat[oaie]"
    r"|in pensione|ho iniziato|ho cominciato|non pi[uù]"
)
_STRONG = re.compile(rf"\b(?:{_STRONG_EN}|{_STRONG_IT})\b", re.I)
_WEAK = re.compile(
    r"\b(?:now|nowadays|these days|currently|at the moment|lately|adesso|ora|attualmente|ormai"
    r"|al momento|ultimamente|oggi(?:giorno)?)\b",
    re.I,
)
#: the cue phrases and generic verbs whose terms never count as a shared subject
_IGNORED = (
    "anymore any more no longer moved relocated switched changed quit stopped gave given dropped "
    "left used instead new graduated retired fired started just became finally finished now "
    "nowadays days currently moment lately adesso ora attualmente ormai momento ultimamente oggi "
    "trasferito trasferita cambiato cambiata lasciato lasciata smesso mollato licenziato passato "
    "nuovo nuova invece iniziato cominciato più piu really actually still also love like hate "
    "enjoy think want get got go going make doing thing things stuff much lot amo adoro piace "
    "faccio fare cosa cose molto tanto thanks thank hey hi hello wow yeah yes glad great awesome "
    "cool nice grazie ciao bello bella"
)
IGNORED_TERMS = frozenset(embedders.terms(_IGNORED))

_QUESTION = re.compile(r"\?\s*$")
_HYPOTHETICAL = re.compile(
    r"\b(?:if|whether|would|could|might|maybe|perhaps|someday|one day|wish|wanna|want to"
    r"|gonna|going to|will|plan(?:ning)? to|thinking (?:of|about)|considering|hope to|i'd|i'll"
    r"|next (?:week|month|year)|imagine|suppose|what if"
    r"|se|vorrei|voglio|magari|forse|potrei|dovrei|mi piacerebbe|penso di|pensando di|sto pensando"
    r"|chiss[aà]|un giorno|l'anno prossimo|il mese prossimo|prossim[oa]|tra un|fra un"
    r"|trasferir[mò]|cambier[oò]|lascer[oò]|smetter[oò])\b",
    re.I,
)
_SOMEONE_ELSE = re.compile(
    r"\b(?:my|our) (?:\w+ )?(?:sister|brother|mom|mum|mother|dad|father|parents|wife|husband"
    r"|girlfriend|boyfriend|partner|friend|friends|son|daughter|kid|kids|cousin|aunt|uncle"
    r"|grandma|grandpa|grandmother|grandfather|roommate|flatmate|neighbou?r|boss|colleague|family)"
    r"|\b(?:he|she|they|them|his|her|their)\b(?! (?:said|told))"
    r"|\b(?:mi[ao]|la mia|il mio|i miei|le mie|un mio|una mia) (?:sorella|fratello|madre|mamma"
    r"|padre|pap[aà]|genitori|moglie|marito|ragazza|ragazzo|fidanzat[oa]|amic[oaie]|figli[oa]"
    r"|cugin[oa]|zi[oa]|nonn[oa]|coinquilin[oa]|vicin[oa]|capo|collega|famiglia)"
    r"|\b(?:lui|lei|loro)\b"
    # speaking to someone: about them ("now you're helping others", "tu ora lavori a Roma")
    r"|\b(?:you|your|yours|you're|youre|you've|u|ur|tu|tuo|tua|tuoi|tue|voi|vostr[oaie])\b",
    re.I,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Statement:
    """What the rules read of one memory."""

    id: str
    user_id: str | None
    said_at: datetime
    #: the named profile slots it sets (``location`` → ``turin``), notes left out
    slots: Mapping[str, str]
    #: its content terms, cue words and generic verbs left out
    terms: frozenset[str]
    #: its change cue: ``NONE``, ``WEAK``, ``STRONG``
    cue: int
    #: a question, hypothetical or reported: supersedes nothing
    hedged: bool
    #: about someone else: supersedes nothing by subject
    other: bool
    superseded_by: str | None = None


#: a name the speaker addresses ("Thanks, Maria!", "hey Gina,", "…, Mel.", "@alice"): shared by
#: chance by two lines to the same person, never the subject of a change
_VOCATIVE = re.compile(
    r"@\w+"
    r"|(?:^|(?<=[,.!?;]))\s*(?i:(?:thanks|thank you|hey|hi|hello|yeah|yep|yup|wow|oh|ok|okay|sure"
    r"|sorry|congrats|grazie|ciao|dai|ehi)\W*\s*)?[A-Z][\w'-]*\s*(?=[,!?.;]|$)"
)


@functools.lru_cache(maxsize=65_536)
def _features(text: str) -> tuple[tuple[tuple[str, str], ...], frozenset[str], int, bool, bool]:
    text = text.replace("’", "'")
    hedged = bool(
        _QUESTION.search(text) or _HYPOTHETICAL.search(text) or profile.is_reported_speech(text)
    )
    slots = tuple((slot, value.casefold()) for slot, value in profile.derive(text))
    cue = STRONG if _STRONG.search(text) else WEAK if _WEAK.search(text) else NONE
    terms = frozenset(embedders.terms(_VOCATIVE.sub(" ", text))) - IGNORED_TERMS
    return slots, terms, cue, hedged, bool(_SOMEONE_ELSE.search(text))


def statement(record: records.MemoryRecord) -> Statement:
    """The features of a memory the rules compare."""
    slots, terms, cue, hedged, other = _features(record.text)
    return Statement(
        id=record.id,
        user_id=record.user_id,
        said_at=record.said_at,
        slots=dict(slots),
        terms=terms,
        cue=cue,
        hedged=hedged,
        other=other,
        superseded_by=record.superseded_by,
    )


def reason(newer: Statement, older: Statement) -> str | None:
    """Why ``newer`` supersedes ``older`` (``slot:location``, ``subject``), or None."""
    if (
        newer.id == older.id
        or newer.user_id is None
        or newer.user_id != older.user_id
        or newer.said_at <= older.said_at
        or newer.hedged
    ):
        return None
    changed = sorted(
        slot for slot, value in older.slots.items() if newer.slots.get(slot, value) != value
    )
    if changed and set(older.slots) <= set(newer.slots):
        return f"slot:{changed[0]}"
    if newer.cue == NONE or newer.other or older.hedged:
        return None
    shared = len(newer.terms & older.terms)
    shorter, longer = sorted((len(newer.terms), len(older.terms)))
    if longer > MAX_TERMS:
        return None
    if shared >= SHARED_NEEDED[newer.cue] and shared >= SHARE_NEEDED[newer.cue] * shorter:
        return "subject"
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Mark:
    """A change of one memory's mark: superseded ``by`` at ``at`` (both None: cleared)."""

    id: str
    by: str | None
    at: datetime | None
    reason: str


def _earliest(
    older: Statement, candidates: Iterable[Statement], kept: Statement | None
) -> tuple[Statement, str] | None:
    found = [(s, r) for s in candidates if (r := reason(s, older)) is not None]
    if kept is not None:
        found.append((kept, "kept"))
    return min(found, key=lambda pair: (pair[0].said_at, pair[0].id), default=None)


def plan(memories: Sequence[records.MemoryRecord], new: Collection[str] = ()) -> list[Mark]:
    """The mark changes of one space's ``memories`` after the memories ``new`` were written.

    Planned: every new memory against all others; every other memory against the new ones (its
    current mark kept unless a new memory is earlier); and every memory whose mark points at a
    memory no longer among ``memories``, against all (cleared when none supersedes it)."""
    own = [statement(r) for r in memories if r.kind in KINDS]
    by_id = {s.id: s for s in own}
    fresh = [s for s in own if s.id in new]
    marks: list[Mark] = []
    for older in own:
        current = by_id.get(older.superseded_by) if older.superseded_by else None
        dangling = older.superseded_by is not None and current is None
        everything = older.id in new or dangling
        found = _earliest(older, own if everything else fresh, current)
        if found is None:
            if dangling:
                marks.append(Mark(id=older.id, by=None, at=None, reason="superseder gone"))
            continue
        by, why = found
        if by.id != older.superseded_by:
            marks.append(Mark(id=older.id, by=by.id, at=by.said_at, reason=why))
    return marks
