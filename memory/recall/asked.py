"""Which profile slots a question asks for (English and Italian): "where does @bob live?" asks
``location``, "che lavoro fa?" ``job``, "does she have any animals?" ``pet``.

``slots(query) -> frozenset[str]`` reads a planned source's query (normalized with
``words.normalize``; names and the bot's name may already be gone). Its names are the keys of
``memory.consolidate.profile_slots`` (``pet`` stands for every ``pet:<kind>``), so a question's
slots can be compared with what a remembered statement sets (``profile_slots.slots_of``): when the
profile holds the slot a question asks for, that fact is the answer (``memory.recall.relevance``);
and the everyday slots the profile keeps no value of (``memory.recall.everyday``: an instrument,
a sport, a team, driving, smoking, diet, a partner, children, siblings, parents), answered by a
recalled statement of them.

A question put to the bot about itself ("where do you live?", "da dove vieni?") asks for no
viewer's slot (that is lore), nor does one about a viewer's relative but for the relation itself
("la moglie di @dave che lavoro fa?" would otherwise be answered with Dave's own job). The
patterns are strict on purpose: a question that only mentions a slot's word ("how does he get to
his job?", "my pet peeve", "come si chiama il mio animale?" is ``pet``, not ``name``) must not be
taken for one that asks for it, since an answered slot replaces the rest of that viewer's items.

``states(text)`` is the other side: the slots a viewer's statement gives a value.
"""

from __future__ import annotations

import re

from memory.consolidate import profile_slots, profile_words
from memory.recall import everyday
from memory.recall.words import normalize

#: slot → what a question asking for it looks like (on normalized text: lower case, no accents,
#: no punctuation, apostrophes as spaces: "what's" → "what s")
_ASKS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (slot, re.compile(pattern))
    for slot, pattern in (
        (
            "location",
            r"\bwhere (?:\w+ ){0,3}(?<!\byou )(?:live|lives|living|based)\b"
            r"|\b(?:which|what) (?:city|town|country) (?:\w+ ){0,3}(?:live|lives|living)\b"
            r"|\bdove (?:abit[ao]|viv[eo])\b|\bin (?:che|quale) citta (?:abit[ao]|viv[eo])\b",
        ),
        (
            "hometown",
            r"\bwhere (?:is|s|am|was) (?:\w+ ){0,3}from\b"
            r"|\bwhere (?:\w+ ){0,3}(?<!\byou )(?:born|grow up|grew up)\b"
            r"|\b(?:di|da) dove (?:e|sono|viene|vengo)\b|\bdove (?:e|sono) (?:nat|cresciut)",
        ),
        (
            "job",
            r"\bwhat (?:\w+ ){0,3}do (?:for (?:a )?(?:living|work|money)|at work)\b"
            r"|\bwhat (?:is|s|was) (?:\w+ ){0,3}(?:job|occupation|profession)\b"
            r"|\bwhat (?:kind of )?(?:job|work) (?:does|do|did)\b"
            r"|\bwhere (?:does|do|did) (?:\w+ ){0,2}work\b"
            r"|\bche lavoro (?:fa|faccio|facevo|faceva)\b|\bdi cosa si occupa\b"
            r"|\bcosa fa (?:di lavoro|nella vita)\b|\bche mestiere\b",
        ),
        (
            "pet",
            r"\b(?:have|has|had|got|own|owns) (?:any |an? |some )?(?:pets?|animals?)\b"
            r"(?! (?:peeve|peeves|project))"
            r"|\bwhat (?:kind of |kinds of )?pets? (?:does|do|did)\b"
            r"|\b(?:my|your) (?:pet|animal) s name\b"
            r"|\b(?:ha|hai|ho|hanno) (?:un |una |degli |qualche )?animal[ei]\b"
            r"|\bcome si chiama il (?:mio|tuo|suo) animale\b",
        ),
        (
            "study",
            r"\bwhat (?:does|do|did|is|s|was) (?:\w+ ){0,2}(?:study|studying|major|majoring)\b"
            r"|\bcosa (?:studia|studi|studio|studiava)\b|\bche (?:facolta|universita)\b",
        ),
        (
            "age",
            r"\bhow old (?:is|am) (?:he|she|i)$|\bhow old (?:is|am)$"
            r"|\bquanti anni (?:ha|ho)$",
        ),
        (
            "name",
            r"\b(?:what s|what is|remember|know) my name\b|\bcome mi chiamo\b",
        ),
        *everyday.ASKS,
    )
)


#: pets, EN and IT, singular and plural: wider than ``profile_slots.PETS`` (plurals, an
#: aquarium) and without its words that are food or a figure of speech without a pet's name after
#: them ("ho mangiato pesce", "ho fatto da cavia"): a statement here needs no name
_PETS = (
    r"(?:cats?|kittens?|(?<!\bhot )dogs?|pupp(?:y|ies)|rabbits?|bunn(?:y|ies)|hamsters?|parrots?|birds?"
    r"|budgies?|horses?|ponies|pony|fish|goldfish|turtles?|tortoises?|ferrets?|snakes?|lizards?"
    r"|guinea pigs?|geckos?"
    r"|aquariums?|acquari[oi]"
    r"|gatt[oaie]|gattin[oaie]|can[ei]|cagnolin[oaie]|cucciol[oi]|conigli[oe]?|coniglietta"
    r"|cricet[oi]|cavall[oi]|pappagall[oi]|pesci|pesciolin[oi]|tartarug[ahe]|furett[oi]|serpent[ei])\b"
)


#: a viewer's relative → the slot of the viewer's it is ("": a relation no slot keeps)
_RELATIONS: tuple[tuple[str, str], ...] = (
    (
        "partner",
        r"wife|husband|girlfriend|boyfriend|partner|fiancee?|spouse|moglie|marito|ragazz[oa]"
        r"|fidanzat[oa]|compagn[oa]",
    ),
    ("siblings", r"brothers?|sisters?|siblings|twin|fratell[oi]|sorell[ae]|gemell[oa]"),
    ("parents", r"mum|mom|dad|mother|father|parents|madre|padre|mamma|papa|genitori"),
    ("children", r"sons?|daughters?|kids?|child|children|figli[oae]?"),
    (
        "",
        r"friends?|boss|cousin|uncle|aunt|grandma|grandpa|grandmother|grandfather|nan|flatmate"
        r"|roommate|neighbou?r|colleague|coworker|amic[oaie]|capo|cugin[oa]|zi[oa]|nonn[oa]"
        r"|coinquilin[oa]|collega",
    ),
)
_RELATIVE_WORD = "(" + "|".join(words for _, words in _RELATIONS) + ")"
#: a relative the question is about: "@dave's wife", "his brother", "la moglie di @dave", "sua
#: sorella"; not one the viewer is with or like ("where does he live with his wife?", "dove vive
#: con sua moglie?")
_RELATIVE = re.compile(
    r"(?<!\bwith )(?<!\blike )(?<!\band )(?<!\bcon )(?<!\bcome )(?<!\be )"
    r"(?:\b(?:s|his|her|their|my) (?:older |younger |little |big |twin |ex )?"
    + _RELATIVE_WORD
    + r"\b|\b(?:il|la|lo|i|le|l) "
    + _RELATIVE_WORD
    + r" (?:di|del|della)\b"
    + r"|\b(?:suo|sua|suoi|sue|mio|mia|miei|mie) "
    + _RELATIVE_WORD
    + r"\b)"
)


def _relation(word: str) -> str:
    return next(slot for slot, words in _RELATIONS if re.fullmatch(words, word))


def slots(query: str) -> frozenset[str]:
    """The profile slots ``query`` (normalized) asks for; ``pet`` for any pet. A question about a
    viewer's relative ("la moglie di @dave che lavoro fa?", "where is @sofi's boyfriend from?")
    asks for no slot of the viewer's but the relation's own ("who are @nina's parents?")."""
    found = frozenset(slot for slot, pattern in _ASKS if pattern.search(query))
    if found and (relatives := list(_RELATIVE.finditer(query))):
        own = {_relation(next(word for word in m.groups() if word)) for m in relatives}
        return found & frozenset(slot for slot in own if slot)
    return found


#: slot → a viewer's statement about it that sets no profile value (``profile_slots`` wants a
#: value it can keep: "my dog Biscuit chewed my slippers" names no pet it stores, "greetings from
#: Toronto, where I live" puts the city in another clause), on normalized text
_STATES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (slot, re.compile(pattern))
    for slot, pattern in (
        (
            "pet",
            r"\b(?:my|our|il mio|la mia|i miei|le mie)(?: \w+)? "
            + _PETS
            + r"|\b(?:i have|i ve got|i got|we have|ho|abbiamo)"
            + r"(?! (?:a )?(?:fear|phobia|paura|il terrore|terrore|la fobia))(?: \w+){0,2} "
            + _PETS,
        ),
        (
            "location",
            r"\bwhere i live\b|\bmy (?:place|flat|apartment|house) is in\b|\bi m based in\b",
        ),
        ("hometown", r"\bi grew up in\b|\bsono cresciut[oa] (?:a|in)\b|\bborn and raised in\b"),
    )
)
#: the everyday slots' statements (``everyday.STATES``), read in what the viewer stated: "what
#: type of guitar? been playing long?" asks the other, it says nothing of the speaker
_EVERYDAY = tuple((slot, re.compile(pattern)) for slot, pattern in everyday.STATES)
#: a sentence that asks (up to its question mark)
_QUESTION = re.compile(r"[^.!?\n]*\?+")


#: "being a nurse is brutal": the speaker's occupation, said in passing
_BEING = re.compile(r"\bbeing an? (\w+)\b")


#: slot → the words its statements are made of (``everyday.WORDS``, and pets')
_WORDS = {
    **everyday.WORDS,
    "pet": "pet pets cat dog rabbit hamster parrot fish horse gatto cane coniglio criceto"
    " pappagallo pesci cavallo",
}


def search_words(asks: frozenset[str]) -> str:
    """What a viewer's space is searched with, beside the question, for the statements of the
    slots ``asks`` names ("guido macchina auto patente…" for "ha la patente?"); empty when no slot
    has such words (a profile slot's value is the profile's)."""
    return " ".join(_WORDS[slot] for slot in sorted(asks) if slot in _WORDS)


def states(text: str) -> frozenset[str]:
    """The slots a viewer's statement gives a value (``pet`` for any pet):
    ``profile_slots.slots_of``, the plainer statements of ``_STATES`` and, in its sentences that
    ask nothing, the everyday slots (``everyday``)."""
    found = {slot.split(":", 1)[0] for slot, value in profile_slots.slots_of(text).items() if value}
    norm = normalize(text)
    found |= {slot for slot, pattern in _STATES if pattern.search(norm)}
    said = normalize(_QUESTION.sub(" ", text)) if "?" in text else norm
    found |= {slot for slot, pattern in _EVERYDAY if pattern.search(said)}
    if any(m.group(1) in profile_words.OCCUPATIONS_EN for m in _BEING.finditer(norm)):
        found.add("job")
    return frozenset(found)
