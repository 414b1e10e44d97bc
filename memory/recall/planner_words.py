"""The planner's vocabularies (English and Italian), normalized with ``context.normalize``.

Phrase lists are ``|``-separated and matched word-bounded on normalized text; word sets are matched
against single normalized words.
"""

from __future__ import annotations

import re

from memory.recall import context


def phrases(text: str) -> tuple[str, ...]:
    """``"a b|c"`` → normalized phrases (the lexicons below are ``|``-separated)."""
    return tuple(context.normalize(part) for part in text.split("|") if part.strip())


#: asking the bot to recall something (EN + IT)
RECALL_REQUEST = phrases(
    "do you remember|you remember|remember me|remember when|what do you know about|"
    "what do you remember|what you know about|did i tell you|did i ever tell you|i told you|"
    "ti ricordi|ricordi di me|ricordi quando|ricordi cosa|cosa sai di|che sai di|cosa ricordi|"
    "che ricordi|ti ho detto|te l'avevo detto|ti avevo detto|"
    # "when did I tell you …?": answered with the memory's time label (memory.recall.timewords)
    "when did i say|when did i mention|quando ho detto|quando ti ho parlato|"
    "quando ti ho raccontato"
)
#: the speaker names themself (EN + IT pronouns and possessives)
SELF_PRONOUNS = frozenset(phrases("me|my|i|mine|myself|mi|mio|mia|miei|mie|io|m"))
#: the speaker talks about themself (EN + IT; Italian drops the pronoun, so first-person verbs
#: too). Some of those verbs are also nouns ("che lavoro fa?": "what is their job?"), so a question
#: that names another viewer counts as about the speaker only by ``SELF_PRONOUNS``
SELF_WORDS = SELF_PRONOUNS | frozenset(
    phrases("faccio|sono|ho|abito|vivo|lavoro|studio|chiamo|avevo|dicevo")
)
#: a reference to earlier in the stream (EN + IT)
TIME_REFERENCE = phrases(
    "earlier|at the start|at the beginning|in the beginning|last time|you said|we talked|"
    "we were talking|all'inizio|poco fa|l'altra volta|hai detto|abbiamo parlato|"
    "stavamo parlando|dicevi|last stream|previous stream|l'ultima live|la live scorsa|"
    "la scorsa live|l'ultimo stream|lo stream scorso"
)
#: weaker time words ("I was a nurse before" is no reference): they count only in a question
WEAK_TIME_REFERENCE = phrases(
    "before|previously|a while ago|what happened|prima|cosa è successo|che è successo|"
    "cos'è successo"
)
#: "do you remember …" without a time word: earlier in the stream unless it is about the speaker
REMEMBER_REFERENCE = phrases(
    "do you remember|you remember|remember what|remember when|ti ricordi|ricordi cosa|"
    "ricordi quando"
)
#: questions about the bot's own story or personality (EN + IT)
SELF_STORY = phrases(
    "who made you|who created you|who built you|who are you|what are you|your story|"
    "your backstory|your personality|about yourself|where are you from|where do you come from|"
    "how old are you|your name|chi ti ha creato|chi ti ha fatto|chi ti ha programmato|chi sei|"
    "cosa sei|la tua storia|raccontami di te|parlami di te|da dove vieni|quanti anni hai|"
    "come ti chiami|il tuo carattere"
)
#: structured-state domains and the words that refer to them (EN + IT)
STATE_DOMAINS: dict[str, tuple[str, ...]] = {
    "requests": phrases(
        "request|requests|requested|queue|song request|richiesta|richieste|coda|in coda"
    ),
    "relationships": phrases(
        "sibling|siblings|brother|brothers|sister|sisters|cousin|cousins|married|husband|wife|"
        "girlfriend|boyfriend|related|fratello|fratelli|sorella|sorelle|cugino|cugina|cugini|"
        "sposati|marito|moglie|fidanzato|fidanzata|parenti"
    ),
    "notes": phrases("note|notes|nota|appunto|appunti"),
    "jokes": phrases(
        "inside joke|inside jokes|running joke|our joke|the joke|battuta|battute|tormentone|"
        "scherzo|barzelletta"
    ),
}
INTERROGATIVES = frozenset(
    phrases(
        "who|what|where|when|why|how|which|whose|do|does|did|is|are|can|could|would|will|should|"
        "chi|cosa|dove|quando|perché|perche|come|quale|quali|quanto|quanti|quanta|sai|hai"
    )
)
MEDIA_WORDS = frozenset(phrases("clip|video|screenshot|pic|photo|image|foto|immagine|link"))
URL = re.compile(r"(https?://|www\.)\S+|\b[\w-]+\.(com|tv|gg|it|net|org|io|be|ly)/\S*", re.I)
#: words that carry no search content (EN + IT)
STOPWORDS = frozenset(
    phrases(
        "the|a|an|and|or|but|of|to|in|on|at|for|with|about|from|that|this|these|those|it|its|is|"
        "are|was|were|be|been|do|does|did|have|has|had|you|your|we|our|they|them|he|she|his|her|"
        "what|who|where|when|why|how|which|there|here|then|than|so|just|really|very|can|could|"
        "would|will|should|not|no|yes|know|remember|said|say|tell|told|happened|start|beginning|"
        "before|earlier|again|time|last|while|ago|lol|hey|hi|hello|thanks|il|lo|la|gli|le|un|uno|"
        "una|di|da|con|su|per|tra|fra|che|non|sono|sei|era|hai|ho|ha|abbiamo|avete|hanno|del|"
        "della|dei|delle|al|alla|nel|nella|ti|ci|vi|si|ne|tu|lui|lei|noi|voi|loro|cosa|chi|dove|"
        "quando|perche|come|prima|inizio|all|detto|dire|dicevi|ricordi|ricordo|successo|sai|poco|"
        "fa|volta|altra|ciao|quel|quella|quello|questo|questa|anche|ancora|piu|molto|ok|okay|"
        "grazie|tutti|stai|sto|bene|me|my|i|mine|myself|mi|mio|mia|miei|mie|io|m"
    )
)


#: questions about the bot's feelings, fears, likes and preferences (EN + IT); they plan ``lore``
#: only when the message or its batch addresses the bot
BOT_PERSONAL = phrases(
    "are you scared|are you afraid|what scares you|what are you scared of|what are you afraid of|"
    "do you like|do you love|do you hate|do you enjoy|do you prefer|would you rather|"
    "what do you like|what do you love|what do you hate|what do you prefer|what do you enjoy|"
    "how do you feel|do you feel|do you have feelings|do you get lonely|do you get bored|"
    "do you dream|what do you dream|are you happy|are you sad|are you lonely|are you alive|"
    "are you real|what makes you happy|what makes you sad|your hobby|your hobbies|"
    "hai paura|di cosa hai paura|cosa ti spaventa|ti spaventa|ti piace|ti piacciono|"
    "ti piacerebbe|cosa ti piace|ami|odi|preferisci|cosa preferisci|come ti senti|ti senti|"
    "sei felice|sei triste|sei viva|sei vivo|hai sentimenti|cosa sogni|ti annoi|i tuoi hobby"
)
#: "your … favourite" / "il tuo … preferito": a possessive and a preference word in one message
YOUR_WORDS = frozenset(phrases("your|yours|ur|tuo|tua|tuoi|tue"))
#: the bot as the subject of a question ("what do you run on?", "tu cosa mangi?")
YOU_WORDS = frozenset(phrases("you|u|yourself|tu|te|ti"))
FAVOURITE_WORDS = frozenset(
    phrases(
        "favourite|favorite|favourites|favorites|fav|fave|preferito|preferita|preferiti|preferite"
    )
)
#: common words that are never read as a bare viewer name ("the", "game", "love"…); a viewer whose
#: login is one of them is recognised only as ``@login``
COMMON_WORDS = frozenset(
    phrases(
        "all|any|art|bad|bed|big|bit|bot|boy|box|bro|bug|bus|buy|car|cat|chat|clip|cool|cute|day|"
        "dog|eat|end|epic|fan|far|few|fun|game|games|get|god|got|guy|guys|hot|let|lot|low|man|mod|"
        "new|nice|now|old|one|out|own|pro|put|red|run|sad|see|set|sir|six|sub|sun|ten|top|try|two|"
        "use|war|way|win|yet|able|also|back|best|boss|come|dead|done|down|each|even|ever|fast|feel|"
        "fine|food|free|from|full|girl|give|glad|good|great|hard|help|here|high|home|hope|idea|"
        "into|just|keep|kind|king|last|life|like|line|live|long|look|lose|lost|love|luck|made|"
        "make|many|mate|more|most|much|must|name|need|next|only|open|over|play|real|rest|same|"
        "save|show|side|some|song|soon|star|stop|such|sure|take|team|than|that|them|then|they|"
        "this|time|true|turn|very|want|week|well|what|when|will|wish|with|word|work|year|your|"
        "about|after|again|alive|angel|being|blue|chill|could|dark|death|doing|dream|every|first|"
        "funny|going|happy|heart|hello|music|never|night|other|party|people|power|ready|right|"
        "shadow|should|since|sleep|small|sorry|still|stream|streamer|thanks|thing|things|think|"
        "today|viewer|viewers|watch|where|which|while|world|would|wrong|young|anni|bene|bello|"
        "bella|buono|casa|cane|ciao|dai|gatto|gioco|giorno|grande|male|mamma|molto|notte|nuovo|"
        "ora|papa|poi|sole|tanto|tempo|tutto|uomo|vita|voglio|amico|amica|amore|sempre|stasera|"
        "oggi|domani|ieri|adesso|chat|live|raga|ragazzi"
    )
)
#: words before a viewer's name that make them the object of a question naming two viewers ("what
#: did alice say TO bob?", "cosa pensa alice DI bob?"); "bob's" (normalized "bob s") is one too
OBJECT_BEFORE = frozenset(
    phrases(
        "to|with|for|about|from|besides|of|at|by|than|toward|towards|"
        "a|ad|con|per|di|da|su|tra|fra|verso|senza"
    )
)
#: "alice and bob": bob has alice's role
AND_WORDS = frozenset(phrases("and|or|nor|e|ed|o|oppure"))
#: a name after these is the source of what is asked ("according to alice, what…")
SOURCE_BEFORE = ("according to", "secondo")
#: a ``@name`` mention and a bare name token (login charset, word-bounded)
AT_NAME = re.compile(r"@(\w+)")
NAME_TOKEN = re.compile(r"(?<![@\w])\w+")
