"""The consolidation filter: which chat messages are worth a personal memory (English and Italian).

Deterministic and model-free. A message is kept when one of its clauses is a *durable
self-statement*: the author says something lasting about themself ("I work as a graphic designer",
"sono di Milano", "my cat is called Miso", "we adopted two cats", "been working as a nurse for six
years"). Everything else is dropped with a reason, checked in this order: empty, command, link,
sarcasm, roleplay, emote spam, short reaction; then per clause: greeting, question, about the bot /
the addressee, reported speech or someone else's fact ("alice said: …", "bob is a chef irl"),
hypothetical, ephemeral, not a self statement.

A message with no first-person clause is still the author's evidence when it answers a question
put to them (``previous``, the message before it by someone else, asked "you…?": "Pepperoni of
course!") or says enough on its own about their life (at least ``MIN_CONTENT_WORDS`` content words:
"They're tough kids, both of them"), unless it is about the stream ("chat is wild today"), opens by
speaking to someone ("You'd be a great counselor! …") or names someone with an @mention. Measured
by ``python -m memory.eval`` (``evidence kept`` on LoCoMo, ``noise stored`` on the synthetic stream).

A message addressed to the bot (its name, ``@name`` or bare, from ``bot_names``) or to someone else
(a leading ``@mention``) whose clause is about the addressee ("@Mnemo you are my favourite bot",
"Mnemo sei il migliore") is not a self-statement, even with a first-person word in it; nor is one
with a clause that only calls the streamer or the chat ("good job on that clutch, streamer").
Italian drops the pronoun, so first-person verbs mark the speaker; those that are also nouns
("gioco", "lavoro", "studio") count only where no article or preposition makes them the noun
("in quel gioco sei solo carne da cannone").

``classify(text)`` returns a ``Verdict`` so evaluations can report why a message was dropped.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory.spaces import embedders

if TYPE_CHECKING:
    from collections.abc import Collection

# -- reasons ---------------------------------------------------------------------------------
KEEP = "self_statement"
EMPTY = "empty"
COMMAND = "command"
LINK = "link"
SARCASM = "sarcasm"
ROLEPLAY = "roleplay"
EMOTE_SPAM = "emote_spam"
SHORT_REACTION = "short_reaction"
GREETING = "greeting"
QUESTION = "question"
HYPOTHETICAL = "hypothetical"
EPHEMERAL = "ephemeral"
NOT_SELF = "not_self_statement"
ABOUT_BOT = "about_the_bot"
ABOUT_ADDRESSEE = "about_addressee"
REPORTED = "reported_or_about_someone_else"
STREAM_TALK = "stream_talk"
#: why a message without a first-person clause is kept all the same
ANSWER = "answer"
DESCRIPTIVE = "descriptive_statement"
#: the reasons of a kept message (``Verdict.keep``)
KEPT_REASONS = frozenset({KEEP, ANSWER, DESCRIPTIVE})
#: the reasons of a message that is only a reaction (``is_reaction``)
_REACTION_REASONS = frozenset({EMOTE_SPAM, SHORT_REACTION})
#: a statement without a first-person word is kept when it has at least this many content words
MIN_CONTENT_WORDS = 3
#: … or this many when it answers a question put to its author ("Pepperoni of course!")
MIN_ANSWER_WORDS = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """Whether a message becomes a personal memory, and why."""

    keep: bool
    #: ``self_statement`` when kept, else the first reason it was dropped
    reason: str


# -- vocabularies ----------------------------------------------------------------------------
#: Twitch/BTTV/7TV emotes (case-sensitive, as typed in chat)
_EMOTE_NAMES = (
    "Kappa Keepo KappaPride PogChamp Pog POG POGGERS PogU KEKW KEK LUL LULW OMEGALUL monkaS "
    "monkaW PepeHands PepeLaugh FeelsBadMan FeelsGoodMan FeelsStrongMan Jebaited BibleThump "
    "ResidentSleeper Kreygasm 4Head TriHard NotLikeThis WutFace HeyGuys VoHiYo CoolStoryBob "
    "SeemsGood catJAM Sadge widepeepoHappy widepeepoSad peepoClap peepoHappy EZ Clap HYPERS "
    "Copium copium xqcL D: :) :( :D :P :O ;) <3 xD XD xd Kreygasm DansGame SwiftRage BabyRage "
    "PJSalt CoolCat GivePLZ TakeNRG PopCorn HSWP SMOrc OSFrog MrDestructoid DinoDance "
    "GlitchCat NomNom ppHop Okayge Aware Clueless monkaHmm PauseChamp WAYTOODANK forsenE pepeD "
    "PepePls modCheck Stare"
)
EMOTES = frozenset(_EMOTE_NAMES.split())
_CAMEL_EMOTE = re.compile(r"^[a-z]{2,}[A-Z][A-Za-z0-9]*$")
#: sarcasm / joke markers (a statement with one of them is not taken at face value)
_SARCASM = re.compile(
    r"(?:^|\s)/(?:s|j|sarcasm)\b|#sarcasm\b|\bjk\b|\bjust kidding\b|\bkidding\b|\bnot really\b"
    r"|\bscherz(?:o|avo|ando)\b|\bsto scherzando\b|\bironia\b|\bKappa\b|\bKeepo\b|🙃|😏",
)
#: roleplay: ``*does X*`` or ``/me``
_ROLEPLAY = re.compile(r"\*[^*\s][^*]*\*|^/me\b|^\s*_[^_]+_\s*$")
_URL = re.compile(r"(?:https?://|www\.)\S+|\b\S+\.(?:com|net|org|tv|it|io|gg|ly)(?:/\S*)?\b", re.I)
_MENTION = re.compile(r"@\w+")
#: short reactions, after lower-casing and collapsing repeated letters
_REACTION_WORDS = (
    "lol lmao lmfao rofl pog poggers gg ggwp wp ez omg omfg wow wtf rip f nice ok okay k yes "
    "yep yeah yup no nope nah true facts based mood same lul kek kekw w l xd hype hyped letsgo "
    "clutch big cringe sus bruh oof rekt ty thx thanks np gj si sì vero grande bella bravo "
    "brava daje dai noo boh mah ahah ahaha ahahah eheh grazie prego top assurdo pazzesco figo "
    "anch'io esatto certo giusto madonna oddio"
)
REACTIONS = frozenset(_REACTION_WORDS.split()) | {
    "let's go",
    "lets go",
    "me too",
    "same here",
    "me neither",
    "my bad",
    "oh no",
    "oh my god",
    "thank you",
    "anche io",
    "mamma mia",
}
_LAUGH = re.compile(
    r"^(?:ho)+$|^(?:a?h[aeiu]){2,}h?$|^(?:[aeiu]h){2,}$|^l+o+l+$|^x+d+$|^k{3,}$|^(?:ja){2,}$"
)
#: interjections that contain a first-person word without being about the author
_INTERJECTIONS = re.compile(
    r"\b(?:oh my (?:god|gosh|goodness)|my god|my bad|my dude|my guy|my man|my friend|mamma mia"
    r"|mio dio|oh mio dio|dio mio|me too|me neither|anch'?io|anche io|per me)\b"
)
_GREETING = re.compile(
    r"^(?:hi+|hello+|hey+a?|hiya|yo+|sup|howdy|gm|gn|good (?:morning|evening|night|afternoon)"
    r"|bye+|cya|see (?:ya|you)|o7|welcome|ciao+|salve|buongiorno|buonasera|buonanotte|hola"
    r"|benvenut[oaie]|a domani|alla prossima|bentornat[oaie])\b"
)
_QUESTION_START = re.compile(
    r"^(?:what|why|how|who|whom|whose|where|when|which|wtf is|anyone|anybody"
    r"|(?:am|are|is|do|does|did|can|could|would|will|should|shall|have|has|was|were|may|might)"
    r" (?:i|you|we|he|she|it|they|this|that|there|u|ya|anyone)\b"
    r"|che|cosa|perch[eé]|come|chi|dove|quando|quant[oiae]|quale|quali|hai|sei|avete|siete"
    r"|posso|puoi|potete|ti ricordi|vi ricordate|ricordi)\b"
)
_HYPOTHETICAL = re.compile(
    r"\b(?:if i|if my|i'd|i would|i wish|i'?d like|i want to be|imagine|what if|suppose"
    r"|se (?:io )?(?:fossi|avessi|potessi|vivessi|lavorassi)|vorrei|sarei|avrei|magari|immagina)\b"
)
#: first-person subject markers (objects like "me" in "tell me" do not count)
_FIRST_PERSON_EN = re.compile(
    r"\b(?:i|i'm|im|i've|ive|i'll|i'd|my|mine|myself|we|we're|we've|we'll|our|ours|ourselves)\b"
    # an elided subject opens the clause: "been working as a nurse for six years", "just moved",
    # "turned 25 yesterday"
    r"|^(?:been|just (?:got|started|moved|bought|finished|joined|came back)|gotta|started"
    r"|finished|moved|bought|went|visited|tried|got (?:a|an|my|into|back)|working|living"
    r"|studying|(?:just )?turned \d{1,2})\b"
)
_FIRST_PERSON_IT = re.compile(
    r"\b(?:io|sono|mi chiamo|mi sono|mi trasferisco|mi piace|mi piacciono|mio|mia|miei|mie|ho"
    r"|vivo|abito|lavoro|studio|faccio|gioco|amo|adoro|odio|preferisco|parlo|vengo|tifo|suono"
    r"|guido|colleziono|insegno|possiedo|ascolto|leggo|cucino|disegno|programmo|sviluppo"
    r"|devo|sto|vado|torno)\b"
)
#: Italian first-person verbs that are also nouns ("lavoro", "gioco"): after an article, a
#: demonstrative, a preposition or "bel"/"buon" they are the noun ("in quel gioco sei solo carne da
#: cannone", "bel lavoro"), not the speaker's verb ("gioco a calcetto", "lavoro come sviluppatore")
_IT_NOUN_USE = re.compile(
    r"(?:\b(?:il|lo|un|uno|del|dello|nel|nello|al|allo|dal|dallo|col|sul|sullo|quel|quello"
    r"|questo|ogni|tuo|suo|nostro|vostro|loro|di|a|in|per|con|da|su|tra|fra|bel|buon|gran"
    r"|nuovo)\s+|\b(?:l|quest)')"
    r"(?:lavoro|studio|gioco|odio|tifo|suono|disegno|sviluppo|ascolto)\b"
)
_EPHEMERAL = re.compile(
    r"\bi'?m (?:so |very |really |just |literally )?(?:hungry|thirsty|tired|sleepy|bored|back|here"
    r"|lurking|eating|dead|dying|crying|screaming|late|done|leaving|off|going to (?:bed|sleep)"
    r"|gonna (?:go|sleep|cry)|watching|playing|listening|shaking|laughing)\b"
    r"|\bi (?:need|have|gotta|got|must) (?:to )?(?:go|sleep|leave|pee|eat)\b|\bbe (?:right )?back\b"
    r"|\bi (?:just )?(?:died|lost|won|joined|got here|arrived|woke up|sneezed)"
    r"(?:\s+(?:again|lol|here|the (?:stream|chat|game|match|round)))?\s*[.!]*$|\bi can'?t (?:even|breathe)\b"
    r"|\bi'?m (?:so )?(?:bad|good|trash) at this\b|\bbrb\b|\bafk\b"
    r"|\bho (?:fame|sete|sonno)\b|\bsono (?:stanc[oa]|tornat[oa]|qui|arrivat[oa]|mort[oa]|in ritardo)\b"
    r"|\b(?:vado|devo andare) a (?:dormire|letto|mangiare)\b|\bdevo (?:andare|scappare)\b"
    r"|\bsto (?:mangiando|arrivando|guardando|giocando|morendo|piangendo)\b|\btorno subito\b"
    r"|\b(?:this|that|these|questo|questa|questi|queste) (?:game|song|boss|stream|level|run|part|map"
    r"|round|match|clip|emote|chat|music|track|fight|one|gioco|canzone|partita|livello|pezzo|live)\b"
    r"|\b(?:love|hate|like|adoro|odio|amo) (?:this|that|questo|questa)\s*$"
)
#: a clause whose subject is "you" (EN + IT), after the addressee's name and a greeting
_SECOND_PERSON = re.compile(
    r"^(?:you(?:'re|re| are| r| were| was|'ve| have| look| sound| seem| rock| rule| make"
    r"| deserve| never| always| da)\b|u r\b|ur (?:the|so|my|a|an|too|really|very)\b|your\b"
    r"|tu\b|sei\b|siete\b|ti\b|il tuo\b|la tua\b|i tuoi\b|le tue\b|hai\b)"
)
_LEADING_MENTION = re.compile(r"^\s*@\w+")
#: reported speech, or a clause whose subject is someone else by name ("alice said: …",
#: "marco abita a Bologna", "bob is a chef irl", "me l'ha detto su discord")
_REPORTED = re.compile(
    r"^@?[\w']+ (?:said|says|wrote|told (?:me|us)|thinks|dice|diceva|ha detto|scrive)\b"
    r"|\b(?:told me|told us|me l'ha detto|ce l'ha detto|according to|secondo lui|secondo lei)\b"
    r"|\birl\b"
)
_THIRD_PARTY_SUBJECT = re.compile(
    r"^@?([\w']+) (?:is|lives|works|studies|abita|vive|lavora|studia|è|e') "
)
#: words of talk about the stream itself, never a memory about its author
_STREAM_WORDS = re.compile(
    r"\b(?:chat|stream|streamer|streaming|raid|raiding|viewers?|clip|lag|lagging|emotes?|subs?"
    r"|live|vod|boss|speedrun|jump|shot|giocata|diretta|partita)\b"
)
#: a clause that is only a call to the streamer or the chat (EN + IT)
_STREAM_VOCATIVE = re.compile(r"^(?:streamer|streamers|chat|mods?|raga|ragazzi)$")
#: second-person words: the previous message asked the author something ("what's your favourite
#: pizza?"), or a clause is about the one addressed
_ASKS_YOU = re.compile(r"\b(?:you|your|yours|u|ur|ya|tu|tuo|tua|tuoi|tue|ti|hai|sei|te)\b")
#: a clause opening with one of these is about a thing, not a third person
_PRONOUNS = frozenset(
    [
        "it",
        "this",
        "that",
        "there",
        "he",
        "she",
        "they",
        "what",
        "who",
        "life",
        "everything",
        "everyone",
        "nothing",
        "something",
        "which",
        "esso",
        "questo",
        "quello",
        "lui",
        "lei",
        "loro",
    ]
)
_CLAUSE_SPLIT = re.compile(r"(?<=[.!?;,\n])\s*|\s+(?:but|ma|però)\s+")
_REPEATS = re.compile(r"(.)\1{2,}")


def _fold(text: str) -> str:
    """Lower-case, NFKC, straight apostrophes."""
    return unicodedata.normalize("NFKC", text).casefold().replace("’", "'").replace("`", "'")


def _is_emoji(token: str) -> bool:
    return all(unicodedata.category(ch) in {"So", "Sk", "Cf", "Mn"} for ch in token)


def _is_emote(token: str) -> bool:
    bare = token.strip(".,!?")
    return bool(bare) and (bare in EMOTES or _is_emoji(bare) or bool(_CAMEL_EMOTE.match(bare)))


def _words(text: str) -> list[str]:
    return re.findall(r"[\w']+", _fold(text))


def _whole_message_reason(text: str) -> str | None:
    if text.startswith("!"):
        return COMMAND
    if not _URL.sub("", text).strip(" \t.,!?:;-"):
        return LINK
    if _SARCASM.search(text):
        return SARCASM
    if _ROLEPLAY.search(text):
        return ROLEPLAY
    tokens = text.split()
    emotes = sum(1 for token in tokens if _is_emote(token))
    folded_tokens = {_fold(t) for t in tokens}
    if emotes == len(tokens) or (len(tokens) >= 3 and emotes / len(tokens) >= 0.6):
        return EMOTE_SPAM
    if len(tokens) >= 4 and len(folded_tokens) == 1:
        return EMOTE_SPAM
    return _reaction_reason(text)


def is_reaction(text: str) -> bool:
    """Whether ``text`` is only a reaction: laughter, an emote, "gg", "KEKW", "ahah" (it says
    nothing a search could want; e5 rates such a short line near to every question)."""
    cleaned = _MENTION.sub(" ", text).strip()
    return not cleaned or _whole_message_reason(cleaned) in _REACTION_REASONS


def _reaction_reason(text: str) -> str | None:
    words = _words(_URL.sub("", text))
    if not words:
        return EMOTE_SPAM
    collapsed = " ".join(_REPEATS.sub(r"\1", w) for w in words)
    if collapsed in REACTIONS or " ".join(words) in REACTIONS:
        return SHORT_REACTION
    if all(_is_reaction_word(w) for w in words):
        return SHORT_REACTION
    return None


def _is_reaction_word(word: str) -> bool:
    return (
        word in REACTIONS
        or _REPEATS.sub(r"\1", word) in REACTIONS
        or bool(_LAUGH.match(_REPEATS.sub(r"\1\1", word)))
    )


def _first_person(folded: str) -> bool:
    plain = _INTERJECTIONS.sub(" ", folded)
    return bool(
        _FIRST_PERSON_EN.search(plain) or _FIRST_PERSON_IT.search(_IT_NOUN_USE.sub(" ", plain))
    )


def _bot_name_pattern(bot_names: Collection[str]) -> re.Pattern[str] | None:
    names = sorted({_fold(n).lstrip("@").strip() for n in bot_names} - {""}, key=len, reverse=True)
    if not names:
        return None
    return re.compile(r"(?<![\w@])@?(?:" + "|".join(re.escape(n) for n in names) + r")(?!\w)", re.I)


def _addressee(text: str, bot_pattern: re.Pattern[str] | None) -> str | None:
    """``about_the_bot`` when the message names the bot, ``about_addressee`` when it opens with
    someone else's ``@mention``, else None."""
    if bot_pattern is not None and bot_pattern.search(_fold(text)):
        return ABOUT_BOT
    return ABOUT_ADDRESSEE if _LEADING_MENTION.match(text) else None


def _about_addressee(folded: str) -> bool:
    greeting = _GREETING.match(folded)
    rest = folded[greeting.end() :] if greeting else folded
    return bool(_SECOND_PERSON.match(rest.lstrip(" ,.!:;-")))


def _clause_reason(clause: str, addressee: str | None = None, *, first: bool = True) -> str | None:
    """None when the clause is a durable self-statement, else why it is not. ``first``: the
    message's first clause (a later one opening with "where"/"dove" is a relative clause, not a
    question: "greetings from Dublin, where I live")."""
    folded = _fold(clause).strip()
    if folded.endswith("?"):
        return QUESTION
    if addressee is not None and _about_addressee(folded):
        return addressee
    if first and _QUESTION_START.match(folded):
        return QUESTION
    if _REPORTED.search(folded):
        return REPORTED
    greeting = _GREETING.match(folded)
    if greeting:
        rest = folded[greeting.end() :].strip(" ,.!")
        if not rest or _reaction_reason(rest) is not None or not _first_person(rest):
            return GREETING
        folded = rest
    if _HYPOTHETICAL.search(folded):
        return HYPOTHETICAL
    plain = _INTERJECTIONS.sub(" ", folded)
    if not _first_person(plain):
        return NOT_SELF
    if len(_words(plain)) < 2:
        return SHORT_REACTION
    if _EPHEMERAL.search(plain):
        return EPHEMERAL
    return None


def classify(text: str, *, bot_names: Collection[str] = (), previous: str | None = None) -> Verdict:
    """Decide whether a chat message is a durable self-statement worth a personal memory.

    ``bot_names`` (the bot's login / display name) lets a message that names the bot without ``@``
    be read as addressed to it. ``previous``: the message just before it in the stream, by someone
    else (None when unknown or by the same author).
    """
    bot_pattern = _bot_name_pattern(bot_names)
    addressee = _addressee(text, bot_pattern)
    cleaned = _MENTION.sub(" ", text)
    if bot_pattern is not None:
        cleaned = bot_pattern.sub(" ", cleaned)
    cleaned = cleaned.strip()
    if not cleaned:
        return Verdict(keep=False, reason=EMPTY)
    if reason := _whole_message_reason(cleaned):
        return Verdict(keep=False, reason=reason)
    first: str | None = None
    content, addressed, called = 0, False, False
    clauses = [c for c in _CLAUSE_SPLIT.split(cleaned) if c.strip(" .,!?;")]
    for clause_number, clause in enumerate(clauses):
        reason = _clause_reason(clause, addressee, first=first is None)
        if reason is None:
            return Verdict(keep=True, reason=KEEP)
        first = first or reason
        if reason == NOT_SELF:
            words = _content_words(clause)
            # opening by speaking to someone ("You'd be a great counselor! …"): about them
            addressed = addressed or (words < 0 and clause_number == 0)
            # a clause that only calls the streamer or the chat speaks to them, wherever it
            # stands ("good job on that clutch, streamer"): the message is about them
            called = called or bool(_STREAM_VOCATIVE.match(_fold(clause).strip(" .,!?;:")))
            content += max(words, 0)
    if first == NOT_SELF and not addressed and not called:
        asked = previous if previous and _addressee(previous, bot_pattern) is None else None
        return _without_first_person(text, content, asked)
    return Verdict(keep=False, reason=first or NOT_SELF)


def _content_words(clause: str) -> int:
    """Content words of a clause that is neither about someone else nor about the stream (0), or
    -1 when it speaks to someone ("you…"): then the whole message is about them."""
    folded = _fold(_URL.sub(" ", clause)).strip()
    subject = _THIRD_PARTY_SUBJECT.match(folded)
    if (subject and subject.group(1) not in _PRONOUNS) or _STREAM_WORDS.search(folded):
        return 0
    if _ASKS_YOU.search(folded):  # about the one addressed, not the author: the message is theirs
        return -1
    return sum(1 for w in _words(folded) if w not in embedders.STOPWORDS and not w.isdigit())


def _without_first_person(text: str, content: int, previous: str | None) -> Verdict:
    """A message with no first-person clause: kept when it answers a question put to its author
    (``previous``: not one put to the bot or to an @mentioned viewer),
    or when it says enough on its own (a description of the author's life: "They're tough kids",
    "Been busy volunteering at the shelter") and is not about someone else or the stream."""
    if _MENTION.search(text):  # addressed to someone: about them
        return Verdict(keep=False, reason=NOT_SELF)
    if previous is not None:
        asked = _fold(previous).strip()
        if asked.endswith("?") and _ASKS_YOU.search(asked) and content >= MIN_ANSWER_WORDS:
            return Verdict(keep=True, reason=ANSWER)
    if content >= MIN_CONTENT_WORDS:
        return Verdict(keep=True, reason=DESCRIPTIVE)
    return Verdict(keep=False, reason=NOT_SELF)
