"""Which profile slots a viewer's own statement sets or clears (English and Italian patterns).

``slots_of(text) -> dict[str, str | None]`` is the one entry point: each key is a slot the
statement speaks about (``name``, ``age``, ``location``, ``hometown``, ``job``, ``employer``,
``study``, ``pet:<kind>``); the value is what it now holds (``"Turin"``), or ``None`` when the
statement says the slot no longer holds ("I don't study architecture anymore", "non abito più a
Roma", "I quit my job"). An empty dict: the statement is about no slot. Supersession can rely on
it: a statement that sets or clears slot X makes every older statement of the same viewer about X
out of date. (``profile.slots_of`` is the same function.)

The text is cut into clauses (punctuation, "and"/"but"/"e"/"ma"/"però"); a clause counts only when
it asserts, about the speaker, now:

* not hypothetical, wished, planned, believed or asked ("if I lived in Paris", "I'd be a great
  nurse", "vorrei fare il medico", "everyone thinks I'm a nurse", "I'm a nurse?");
* first person only ("my sister lives in Milan", "mio fratello fa il cuoco", "@bob is a nurse",
  "my son turned 5" set nothing) and not negated ("non lavoro come barista");
* "I'm a …" / "sono un …" / "faccio il …" only with an occupation (``profile_words``): "I'm a bit
  tired", "I'm a huge fan of X", "sono un po' stanco", "faccio la spesa" are no jobs;
* "I study …" / "studio …" only with what is studied: "I study in the library", "studio per
  l'esame", "Studio Ghibli films are the best" are no studies (``profile_words.field``).

A sarcastic message ("/s", "jk", "Kappa", "yeah right", "sì, come no", "yeah, and I'm an astronaut")
or reported speech ("alice said: I am 12", a quoted line) sets nothing at all. Within one statement
a later clause wins over an earlier one, and a value over a clear ("I quit my job, I'm a tester now"
sets job: tester).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from memory.consolidate import profile_words as words

if TYPE_CHECKING:
    from collections.abc import Callable

#: pet words (EN/IT) → the kind used in the ``pet:<kind>`` slot
PETS = {
    "cat": "cat",
    "kitten": "cat",
    "gatto": "cat",
    "gatta": "cat",
    "gattino": "cat",
    "dog": "dog",
    "puppy": "dog",
    "cane": "dog",
    "cagnolino": "dog",
    "cagnolina": "dog",
    "rabbit": "rabbit",
    "coniglio": "rabbit",
    "hamster": "hamster",
    "criceto": "hamster",
    "parrot": "bird",
    "bird": "bird",
    "pappagallo": "bird",
    "fish": "fish",
    "pesce": "fish",
    "turtle": "turtle",
    "tartaruga": "turtle",
    "tortoise": "turtle",
    "guinea pig": "guinea pig",
    "cavia": "guinea pig",
    "coniglietta": "rabbit",
    "coniglietto": "rabbit",
    "bunny": "rabbit",
    "ferret": "ferret",
    "furetto": "ferret",
    "snake": "reptile",
    "serpente": "reptile",
    "lizard": "reptile",
    "gecko": "reptile",
    "geco": "reptile",
    "iguana": "reptile",
    "bearded dragon": "reptile",
}
_PET = "|".join(sorted(PETS, key=len, reverse=True))


#: the clause boundaries of a statement
_CLAUSES = re.compile(
    r"(?<=[.!?;,\n])\s*|\s+(?:and|but|so|because|'?cause|since|while|when|whenever|though"
    r"|although|e|ed|ma|però|pero|perché|perche|quindi|mentre|quando|anche se)\s+",
    re.I,
)
_PIU = re.compile(r"\bpiu(?:'|\b)", re.I)
#: a clause that does not assert a present fact about the speaker
_NOT_ASSERTED = re.compile(
    r"\b(?:if|unless|suppose|supposing|imagine|pretend|pretending|wish|would|could|should|might"
    r"|i'd|want to|wanna|hope to|plan to|planning to|dream|someday|one day|maybe|perhaps|will"
    r"|i'll|gonna|going to|think|thinks|thought|believe|believes|assume|assumes|guess|apparently"
    r"|supposedly|se|vorrei|magari|sogno|immagina|fingi|un giorno|da grande|potrei|dovrei|forse"
    r"|pensa|pensano|crede|credono|voglio|diventerò|sarò|farò)\b",
    re.I,
)
_SARCASM = re.compile(
    r"(?:^|\s)/(?:s|j|sarcasm)\b|#sarcasm|\bj/?k\b|\bjust kidding\b|\bkidding\b|\bnot really\b"
    r"|\byeah,? right\b|\bas if\b|\bsure,? jan\b|\bscherz(?:o|avo|ando)\b|\bironi[ac]\w*\b"
    r"|\bcome no\b|\bKappa\b|\bKeepo\b|🙃|😏|🤡"
    r"|^(?:oh\s+)?(?:yeah|yea|sure|right|certo|s[iì],? certo|ah s[iì])[\s,!.]+(?:and|e)\s+"
    r"(?:i'?m|i am|io sono|sono)\b",
    re.I,
)
#: a negation right before a matched phrase ("non lavoro come …", "I never live in …")
_NEGATED = re.compile(r"\b(?:non|not|never|mai|no longer)\s+$", re.I)

#: someone else's words, reported or quoted: "alice said: I am 12", "carla dice che vive a Roma",
#: '"I live in Venice" - alice', «sono di Napoli» (a whole quoted line)
_REPORTED = (
    re.compile(
        r"\b(?:said|says|saying|told (?:me|us|everyone)|tells (?:me|us)|claims?|claimed|wrote|"
        r"ha detto|dice(?:va)? che|diceva|ha scritto|mi ha detto|sostiene)\b\s*[:,\"“«]?",
        re.IGNORECASE,
    ),
    re.compile(r"^\s*[\"“«'].+[\"”»']\s*[-–—~]+\s*@?\w+\s*$"),
    re.compile(r"^\s*[\"“«].+[\"”»]\s*$"),
)


def is_reported_speech(text: str) -> bool:
    """Whether ``text`` reports or quotes someone's words (never the speaker's own statement)."""
    return any(pattern.search(text) for pattern in _REPORTED)


def _plain(rest: str) -> str | None:
    return words.plain_value(rest) or None


def _number(rest: str) -> str | None:
    return rest


_ADV = r"(?:(?:now|currently|officially|finally|still|actually|basically|literally|just)\s+)?"
_ADV_IT = (
    r"(?:io|ora|adesso|oggi|ormai|finalmente|comunque|ufficialmente|anche|pure|già|beh|quindi)"
)
_ART_IT = r"(?:(?:un|una|uno)\s+|un'\s*)?"
_ART_IT_DEF = r"(?:(?:il|la|lo)\s+|l'\s*)"
#: any article after an explicit job phrase ("as a", "come un'", "faccio il")
_ART = r"\s+(?:(?:an?|un|una|uno|il|la|lo)\s+|un'|l')?"
#: "a 25 year old", "a 25-year-old"
_YEAR_OLD = r"(?:years?|yr)[- ]old\b"
#: what may come between "I" and "turned 25"
_WHEN = r"(?:just|finally|officially|recently|also|literally|actually|yesterday|today)"
_NOT_UNIT = (
    r"(?!\s*(?:%|(?:minutes?|mins?|hours?|hrs?|seconds?|secs?|days?|weeks?|months?|degrees?|times"
    r"|percent|pm|am|k|hp|euros?|dollars?|bucks|pounds|kg|kilos?|lbs?|cm|m|games?|of)\b))"
)
_AGE_END = (
    r"(?:\s*(?:years?\s+old|yo|y/o|yrs?(?:\s+old)?))?"
    r"(?=\s*$|\s*[.,!;)]|\s+(?:now|btw|lol|too|today|as of|here)\b)"
)

#: (slot, pattern, reader): a clause matching ``pattern`` sets ``slot`` to ``reader(group 1)``
_SETS: tuple[tuple[str, re.Pattern[str], Callable[[str], str | None]], ...] = tuple(
    (slot, re.compile(pattern, re.I), reader)
    for slot, pattern, reader in (
        (
            "name",
            r"\b(?:my name is|my name's|call me|i'?m called|mi chiamo|il mio nome è)\s+(.+)",
            _plain,
        ),
        ("age", r"\b(?:i'?m|im|i am)\s+(?:now\s+)?(\d{1,2})" + _AGE_END, _number),
        ("age", r"\bho\s+(\d{1,2})\s+anni\b(?!\s+(?:di|d'|fa|che))", _number),
        (
            "age",
            r"(?:^(?:" + _WHEN + r"\s+)*turned|\bi'?ve\s+(?:" + _WHEN + r"\s+)*turned"
            r"|\bi\s+(?:" + _WHEN + r"\s+)*turn(?:ed)?)\s+(\d{1,2})\b" + _NOT_UNIT,
            _number,
        ),
        ("age", r"\b(?:i'?m|i am)\s+(?:turning)\s+(\d{1,2})\b" + _NOT_UNIT, _number),
        ("age", r"\b(?:i'?m|im|i am)\s+an?\s+(\d{1,2})[- ]?" + _YEAR_OLD, _number),
        ("age", r"\bsono (?:un|una|uno) \w+ di (\d{1,2}) anni\b", _number),
        (
            "age",
            r"\b(?:compio|ho (?:appena\s+)?(?:fatto|compiuto)|faccio)\s+(\d{1,2})\s+anni\b"
            r"(?!\s+(?:di|d'|fa|che))",
            _number,
        ),
        (
            "location",
            r"(?:\b(?:i|we)\s+(?:now\s+|still\s+|currently\s+)?live in|\bi'?m (?:now )?living in"
            r"|\bi'?m based in|\b(?:i|we|i'?ve|we'?ve)\s+(?:just\s+|recently\s+|finally\s+)?moved"
            r"(?: back)? to|^(?:just\s+|recently\s+)?moved(?: back)? to"
            r"|(?:i'?ve been|^been) living in|\bi\s+relocated to|\bvivo (?:a|in|ad)"
            r"|\babito (?:a|in|ad)|\bmi sono (?:appena\s+)?trasferit[oa] (?:a|in|ad)"
            r"|\bmi trasferisco (?:a|in|ad)|\bsono (?:andat[oa]|tornat[oa]) a vivere (?:a|in|ad))"
            r"\s+(.+)",
            words.place,
        ),
        (
            "hometown",
            r"\b(?:i'?m from|i am from|i come from|i was born in|sono di|vengo da"
            r"|sono nat[oa] (?:a|in))\s+(.+)",
            words.place,
        ),
        (
            "job",
            r"(?:\b(?:i work as|i'?m (?:now |currently )?working as|my job is|i'?m employed as"
            r"|i got hired as|i was hired as|i'?ve been working as|i (?:just )?started working as)"
            r"|^(?:been|(?:just\s+)?started) working as)" + _ART + r"(.+)",
            words.job_value,
        ),
        (
            "job",
            r"(?:^|\bi\s+|\bi'?ve\s+)(?:just\s+|recently\s+|finally\s+)?(?:started|got|landed"
            r"|found|began|took|accepted)\s+(?:a\s+|my\s+|the\s+)?(?:new\s+)?(?:job|position|role"
            r"|gig|internship)\s+as" + _ART + r"(.+)",
            words.job_value,
        ),
        (
            "job",
            r"\b(?:lavoro come|di mestiere faccio|sono stat[oa] assunt[oa] come"
            r"|ho (?:appena\s+)?(?:iniziato|cominciato) a lavorare come"
            r"|ho (?:appena\s+)?(?:iniziato|cominciato|trovato|preso) (?:un\s+)?(?:nuovo\s+)?"
            r"lavoro come)" + _ART + r"(.+)",
            words.job_value,
        ),
        ("job", r"\b(?:i'?m|im|i am)\s+" + _ADV + r"an?\s+(.+)", words.occupation_en),
        ("job", r"\bi (?:just )?became an?\s+(.+)", words.occupation_en),
        (
            "job",
            r"\b(?:i'?m|im|i am)\s+an?\s+\d{1,2}[- ]?" + _YEAR_OLD + r"\s+(.+)",
            words.occupation_en,
        ),
        ("job", r"(?:^|\b" + _ADV_IT + r"\s+)sono\s+" + _ART_IT + r"(.+)", words.occupation_it),
        ("job", r"\bfaccio\s+" + _ART_IT_DEF + r"(.+)", words.occupation_it),
        ("job", r"\bsono diventat[oa]\s+" + _ART_IT + r"(.+)", words.occupation_it),
        (
            "employer",
            r"(?:\bi work (?:at|for)|\blavoro (?:per|presso|alla|al)|(?:^|\bi\s+|\bi'?ve\s+)"
            r"(?:just\s+)?(?:started|got|landed|found)\s+(?:a\s+)?(?:new\s+)?(?:job|position"
            r"|internship)\s+(?:at|with))\s+(.+)",
            _plain,
        ),
        (
            "study",
            r"(?:\bi study|\bi'?m (?:now |currently )?studying|\bi(?:'m)? major(?:ing)? in"
            r"|\bi'?m doing a (?:degree|masters?|phd|bachelor'?s?) in|(?:^|\b" + _ADV_IT + r"\s+)"
            r"studio|\bsono (?:uno |una )?student(?:e|essa) di|\bstudentessa di)\s+(.+)",
            words.field,
        ),
        ("study", r"\b(?:i'?m|im|i am)\s+" + _ADV + r"an?\s+(.+)", words.student_en),
    )
)

_ANYMORE = r".*\b(?:anymore|any more)\b"
_JOB = ("job", "employer")
#: (slots, pattern): a clause matching ``pattern`` says these slots no longer hold
_CLEARS: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = tuple(
    (slots, re.compile(pattern, re.I))
    for slots, pattern in (
        (("location",), r"\bi (?:don'?t|do not) live in" + _ANYMORE + r"|\bi no longer live in"),
        (("location",), r"\bi (?:just )?moved (?:out of|away from)\b"),
        (("location",), r"\bnon (?:vivo|abito|sto) più\b"),
        (("job",), r"\bi (?:don'?t|do not) work as" + _ANYMORE + r"|\bi no longer work as\b"),
        (("employer",), r"\bi (?:don'?t|do not) work (?:at|for)" + _ANYMORE),
        (("employer",), r"\bi no longer work (?:at|for)\b"),
        (_JOB, r"\bi (?:don'?t|do not) work\s+(?:anymore|any more)\b|\bi no longer work\s*$"),
        (
            _JOB,
            r"(?:^|\bi\s+)(?:just\s+)?(?:quit|left|lost)\s+my\s+job\b"
            r"|\bi got (?:fired|laid off|sacked)"
            r"|\bi'?m (?:now\s+)?(?:unemployed|jobless|between jobs|out of work)\b",
        ),
        (("job",), r"\bnon (?:lavoro più come|faccio più (?:il|la|lo|l'))"),
        (("employer",), r"\bnon lavoro più (?:per|presso|alla|al|da)\b"),
        (_JOB, r"\bnon lavoro più\s*$"),
        (
            _JOB,
            r"\bho (?:appena\s+)?(?:lasciato|perso) (?:il (?:mio )?)?lavoro\b"
            r"|\bmi (?:sono|hanno) licenziat[oa]\b|\bsono (?:disoccupat[oa]|senza lavoro)\b",
        ),
        (("study",), r"\bi (?:don'?t|do not) study" + _ANYMORE + r"|\bi no longer study\b"),
        (("study",), r"\bi'?m not studying" + _ANYMORE + r"|\bi'?m no longer studying\b"),
        (
            ("study",),
            r"\bi (?:just )?(?:stopped|quit) studying\b|\bi (?:just )?dropped out\b"
            r"|\bi (?:just |finally )?graduated\b|\bi'?m (?:not|no longer) an? student\b",
        ),
        (
            ("study",),
            r"\bnon studio più\b|\bho smesso di studiare\b|\bho lasciato l'università\b"
            r"|\bmi sono (?:appena\s+)?laureat[oa]\b"
            r"|\bnon sono più (?:uno |una )?student(?:e|essa)\b",
        ),
    )
)
#: "I'm not a barista anymore", "I'm no longer a nurse", "non sono più un cuoco"
_NO_LONGER_EN = re.compile(
    r"\bi'?m (?:not an?\s+(.+?)\s+(?:anymore|any more)|no longer an?\s+(.+))", re.I
)
_NO_LONGER_IT = re.compile(r"\bnon sono più\s+" + _ART_IT + r"(.+)", re.I)
#: the new study after a cleared one: "I switched to design", "sono passata a economia"
_SWITCHED = re.compile(
    r"\b(?:i\s+)?(?:switched|changed) (?:over )?to\s+(.+)|\bsono passat[oa] a\s+(.+)", re.I
)


_PET_PATTERNS = (
    re.compile(
        rf"\bmy\s+(?:\w+\s+)?({_PET})(?:'s name is| is called| is named| named| called)\s+(.+)",
        re.I,
    ),
    re.compile(
        rf"\b(?:i have|i'?ve got|i got) an?\s+(?:\w+\s+)?({_PET})\s+(?:called|named)\s+(.+)",
        re.I,
    ),
    re.compile(
        rf"\bil mio\s+({_PET})\s+si chiama\s+(.+)|\bla mia\s+({_PET})\s+si chiama\s+(.+)", re.I
    ),
    re.compile(rf"\bho un[ao']?\s+({_PET})(?:\s+\w+)?\s+(?:che si chiama|di nome)\s+(.+)", re.I),
)


def _clauses(text: str) -> list[str]:
    """The clauses of ``text``, with straight apostrophes and "piu"/"piu'" written "più"."""
    plain = _PIU.sub("più", text.replace("’", "'").replace("`", "'"))
    return [c for c in _CLAUSES.split(plain) if c.strip(" .,!?;")]


def _asserted(clause: str) -> bool:
    return not clause.rstrip().endswith("?") and not _NOT_ASSERTED.search(clause)


def _sets(clause: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for pattern in _PET_PATTERNS:
        for match in pattern.finditer(clause):
            groups = [g for g in match.groups() if g]
            if name := words.plain_value(groups[1]):
                found.setdefault(f"pet:{PETS[groups[0].casefold()]}", name)
    for slot, pattern, reader in _SETS:
        if slot in found:
            continue
        for hit in pattern.finditer(clause):
            if _NEGATED.search(clause[: hit.start()]):
                continue
            if value := reader(hit.group(1)):
                found[slot] = value
                break
    return found


def _clears(clause: str) -> set[str]:
    cleared = {slot for slots, pattern in _CLEARS if pattern.search(clause) for slot in slots}
    if hit := _NO_LONGER_EN.search(clause):
        rest = hit.group(1) or hit.group(2)
        cleared |= {"job"} if words.occupation_en(rest) else set()
    if (hit := _NO_LONGER_IT.search(clause)) and words.occupation_it(hit.group(1)):
        cleared.add("job")
    return cleared


def slots_of(text: str) -> dict[str, str | None]:
    """The slots ``text`` sets (slot → value) or clears (slot → None); see the module docstring."""
    if _SARCASM.search(text) or is_reported_speech(text):
        return {}
    values: dict[str, str] = {}
    cleared: set[str] = set()
    for clause in _clauses(text):
        if not _asserted(clause):
            continue
        values.update(_sets(clause))
        cleared |= _clears(clause)
    if "study" in cleared and "study" not in values:
        for clause in filter(_asserted, _clauses(text)):
            if (hit := _SWITCHED.search(clause)) and (field := words.plain_value(hit[1] or hit[2])):
                values["study"] = field
    result: dict[str, str | None] = dict.fromkeys(sorted(cleared - values.keys()))
    result.update(values)
    return result
