"""The everyday slots a question asks for and a statement answers, beside the profile's
(``memory.recall.asked``): the instrument a viewer plays, the sport they practise, the team they
support ("what sport does he follow?", "per che squadra tifa?"), whether they drive or smoke,
what they eat, who their partner is, their children, siblings and parents (a question for their
family asks for all three), and (statements only) what they study.

The profile (``memory.consolidate.profile_slots``) keeps no value for these: they are many-valued
("il sabato gioco a pallavolo", "corro la mattina") or said in too many ways to keep one value of.
They exist for the question that asks for one of them with none of the answer's words ("does she
eat meat?" for "I'm vegetarian", "ha la patente?" for "non guido", "suona qualche strumento?" for
"il pianoforte è la mia passione"): e5 puts such an answer within hundredths of the viewer's other
statements, often below one that shares the question's words ("the kitchen filled with smoke…"
for "does he still smoke?"). As with the profile's slots, a statement that gives the slot leads
that viewer's items and the rest of them go (``memory.recall.relevance.answered``).

Both sides read normalized text (``words.normalize``: lower case, no accents, no punctuation,
apostrophes as spaces). A question's patterns are strict: one that only mentions the slot's word
("what does @luca's girlfriend do?", "which team won last night?", "did that smoke grenade kill
him?", "can a usb drive run ubuntu?") asks for none of them; nor does "what martial art does he
practise?", which the whole of a viewer's sports would not answer. A statement's are the slot's own
words where they are unambiguous in chat (a "keyboard" is a gamer's, "piano" and "basso" are also
plain Italian words, "Guitar Hero" is a game): those need a verb of playing. A team is a name
no list can hold: "I support …" counts unless a pronoun or a quantity follows ("I support you"),
"follow" only with a league ("I follow like 40 cooking accounts" is no team), and a fan only of
football ("a huge Souls fan" is a game's).

Chosen from the regulars corpus' ``dev`` questions (docs/evaluation.md, "Precision", "Everyday
slots"), in English and Italian; the team slot from a ``held-out`` question, so what it is worth
is read on the corpus' ``fresh`` part, which was written before the slot.
"""

from __future__ import annotations

_INSTRUMENTS = (
    r"(?:pianos|piano (?:lessons?|teacher)|guitars?(?! hero)|violins?|cellos?|flutes?|clarinets?"
    r"|saxophones?|saxes|trumpets?|trombones?|ukuleles?|harps?|accordions?|harmonicas?|banjos?"
    r"|mandolins?|drums|drum kit"
    r"|pianist|guitarist|bassist|drummer|violinist|cellist|flautist|saxophonist|trumpeter"
    r"|pianoforte|chitarr[ae]|violin[oi]|violoncell[oi]|flaut[oi]|clarinett[oi]|sassofon[oi]"
    r"|fisarmonic[ae]|mandolin[oi]|pianista|chitarrista|bassista|batterista|violinista"
    r"|violoncellista|flautista|sassofonista|trombettista)"
)
#: instruments whose name is also an everyday word: only after a verb of playing
_PLAYED = (
    r"\b(?:i play|i m playing|i ve been playing|i played|learning (?:how )?to play|started playing"
    r"|suono|sto suonando"
    r"|ho suonato|suonavo|strimpello|imparando a suonare) (?:the |a |an |il |la |lo |l |un |una )?"
    r"(?:\w+ )?(?:bass|keyboards?|organ|synths?|piano|basso|batteria|tastiera|organo|tromba|sax)\b"
)
_SPORTS = (
    r"(?:football|soccer|basketball|volleyball|tennis|padel|badminton|rugby|baseball|hockey|golf"
    r"|swimming|cycling|climbing|bouldering|jogging|marathons?|yoga|pilates|crossfit|boxing"
    r"|kickboxing|karate|judo|jiu jitsu|bjj|taekwondo|fencing|rowing|skiing|snowboarding"
    r"|surfing(?! the (?:web|net|internet))|triathlons?|weightlifting|powerlifting|go running"
    r"|went running|gym(?! leader| badge)"
    r"|calcio|calcetto|pallavolo|basket|pallacanestro|nuoto|ciclismo|arrampicata|maratona|boxe"
    r"|scherma|canottaggio|palestra|sci(?! fi)|corro|vado a correre)"
)

#: what follows "I support" and is not a team ("I support you", "I support the idea")
_NOT_A_TEAM = (
    r"(?:you|u|it|this|that|these|them|him|her|your|ur|my|our|every\w*|all|both|lots|loads|some"
    r"|many|an?|no|any|people|streamers?|creators?|small|local|indie"
    r"|the (?:idea|stream|streamer|channel|decision|change|cause|community|plan|mods?))"
)
#: what a fan follows ("I follow the Premier League", "seguo la Serie A")
_LEAGUES = (
    r"(?:football|soccer|premier league|serie a|champions league|la liga|bundesliga|calcio"
    r"|formula 1|formula one|f1|motogp|nba|nfl|nhl|mlb)\b"
)

#: a question for a viewer's family asks for their children, siblings and parents alike
_FAMILY = r"|\b(?:have|has|got) (?:any )?family\b|\b(?:ha|hai) (?:famiglia|parenti)\b"

#: slot → what a question asking for it looks like
ASKS: tuple[tuple[str, str], ...] = (
    (
        "instrument",
        r"\b(?:play|plays|playing) (?:\w+ ){0,2}(?:musical )?instruments?\b"
        r"|\bwhat (?:musical )?instruments? (?:\w+ ){0,3}(?:play|plays|playing)\b"
        r"|\bsuon\w* (?:\w+ ){0,2}strument[oi]\b|\b(?:che|quale|quali) strument[oi] suon\w*\b",
    ),
    (
        "sport",
        r"\b(?:play|plays|playing|practi[cs]es?) (?:any |a |some )?sports?\b"
        r"|\b(?:do|does) (?:\w+ ){0,2}do (?:any |a |some )?sports?\b"
        r"|\bwhat sports? (?:does|do|did) (?:\w+ ){0,2}(?:play|do|practi[cs]e)\b"
        r"|\bis (?:\w+ ){0,2}sporty\b"
        r"|\b(?:pratica|pratichi|fa|fai) (?:qualche |uno |dello |degli |molto )?sport\b"
        r"|\bche sport (?:pratica|pratichi|fa|fai)\b|\b(?:e|sei) sportiv[oa]\b",
    ),
    (
        "team",
        r"\b(?:which|what) (?:football |soccer |sports? )?(?:teams?|clubs?) (?:\w+ ){0,3}"
        r"(?:support|supports|supporting|follow|follows|root|roots|cheer|cheers|into)\b"
        r"|\bwhat sports? (?:does|do|did) (?:\w+ ){0,2}(?:follow|watch)\b"
        r"|\b(?:support|supports|follow|follows|root for|roots for) (?:any |a |some )?"
        r"(?:football |soccer |sports? )?(?:teams?|clubs?)\b"
        r"|\b(?:follow|follows|watch|watches) (?:any |much )?(?:football|soccer|sports?)\b"
        r"|\b(?:is|s) (?:\w+ ){0,2}(?:a )?(?:football|soccer|sports?) fan\b"
        r"|\b(?:che|quale) squadra (?:\w+ ){0,2}(?:tifa|tifi|segue|segui|supporta)\b"
        r"|\bper chi (?:tifa|tifi)\b|\b(?:tifa|tifi) (?:per )?(?:qualche|una) squadra\b"
        r"|\b(?:e|sei) (?:un |una )?tifos[oa]\b|\b(?:segue|segui) (?:il )?calcio\b"
        r"|\bdi che squadra (?:e|sei)\b",
    ),
    (
        "drive",
        r"\b(?:does|do|can|did) (?:\w+ ){0,2}drive(?:$| a car| yet| now| anymore)"
        r"|\bdriv(?:ing|er s|ers) licen[cs]e\b"
        r"|\b(?:have|has|got|own|owns) (?:a |any )?car(?:$| now| yet| anymore)"
        r"|\b(?:ha|hai|ho) (?:la )?patente\b|\bsa guidare\b|\bguida(?: la macchina| l auto)?$"
        r"|\b(?:ha|hai|ho) (?:la |una |un |l )?(?:macchina|auto)\b",
    ),
    (
        "smoke",
        r"\b(?:do|does|did) (?:\w+ ){0,2}(?:still )?smoke(?:$| anymore| cigarettes| still| or)"
        r"|\bsmoker\b"
        r"|\bfuma(?: ancora)?$|\bfuma (?:ancora|sigarette)\b|\b(?:fumatore|fumatrice)\b",
    ),
    (
        "diet",
        r"\b(?:eat|eats|eating) (?:any |much |a lot of )?(?:meat|fish|pork|beef|dairy|gluten)\b"
        r"|\b(?:is|am|are) (?:\w+ ){0,2}(?:vegetarian|vegan|pescatarian)\b"
        r"|\bwhat (?:kind of )?diet\b"
        r"|\b(?:mangia|mangi|mangio) (?:la |il |i )?(?:carne|pesce|glutine|latticini)\b"
        r"|\b(?:puo|puoi|posso) mangiare (?:la |il |i )?(?:carne|pesce|glutine|latticini)\b"
        r"|\b(?:e|sei|sono) (?:\w+ ){0,2}(?:vegetarian|vegan)[oaie]\b|\bche dieta\b",
    ),
    (
        "partner",
        r"\b(?:is|s) (?:\w+ ){0,2}(?:married|engaged|seeing someone|single(?:$| or| now))\b"
        r"|\b(?:is|s) (?:\w+ ){0,2}dating (?:anyone|someone)\b"
        r"|\bwho (?:is|s) (?:\w+ ){0,2}(?:dating|married to|seeing|going out with)\b"
        r"|\b(?:have|has|got) (?:a )?(?:partner|boyfriend|girlfriend|husband|wife|spouse)\b"
        r"|\b(?:e|sei) (?:\w+ ){0,2}(?:sposat|fidanzat)[oa]\b|\bcon chi (?:e |sta|esce)"
        r"|\b(?:ha|hai) (?:un |una |il |la )?"
        r"(?:ragazz[oa]|fidanzat[oa]|compagn[oa]|marito|moglie)\b"
        r"|\b(?:e|sei) single\b",
    ),
    (
        "children",
        r"\b(?:have|has|got) (?:any |a )?(?:kids?|children|child|sons?|daughters?)\b"
        r"|\bis (?:\w+ ){0,2}a (?:mum|mom|dad|father|mother|parent)\b"
        r"|\b(?:ha|hai) (?:dei |delle |un |una )?(?:figli[oe]?|figlia|bambin[ie])\b"
        r"|\b(?:e|sei) (?:mamma|papa|madre|padre)\b" + _FAMILY,
    ),
    (
        "siblings",
        r"\b(?:have|has|got) (?:any |a )?(?:siblings?|brothers?|sisters?|twin)\b"
        r"|\bis (?:\w+ ){0,2}(?:a twin|an only child)\b"
        r"|\b(?:ha|hai) (?:dei |delle |un |una )?(?:fratell[oi]|sorell[ae]|gemell[oi])\b"
        r"|\b(?:e|sei) (?:figli[oa] unic[oa]|gemell[oa])\b" + _FAMILY,
    ),
    ("parents", r"\b(?:who|what) (?:are|were) (?:\w+ ){0,2}parents\b" + _FAMILY),
)

#: slot → a viewer's statement that gives it
STATES: tuple[tuple[str, str], ...] = (
    ("instrument", r"\b" + _INSTRUMENTS + r"\b|" + _PLAYED),
    ("sport", r"\b" + _SPORTS + r"\b"),
    (
        "team",
        r"\bi (?:support|root for|cheer for) (?!" + _NOT_A_TEAM + r"\b)\w+"
        r"|\b(?:football|soccer|club|team) (?:fan|supporter)\b|\bi m an? \w+ supporter\b"
        r"|\bi (?:follow|watch) (?:the )?" + _LEAGUES + r"|\bseason ticket\b|\bstadium\b"
        r"|\bmy (?:football |soccer )?(?:team|club) (?:won|lost|drew|beat|got)\b"
        r"|(?<!\bil )(?<!\bdel )\btifo (?!(?:per )?(?:te|voi|tutti)\b)\w+"
        r"|\b(?:sono|siamo) (?:un |una |dei )?tifos[oiae]\b|\bstadio\b|\bin curva\b"
        r"|\b(?:juventin[oaie]|interist[ai]|milanist[ai]|romanist[ai]|laziali?)\b"
        r"|\bla mia squadra\b|\b(?:seguo|guardo) (?:il |la )?" + _LEAGUES,
    ),
    (
        "drive",
        r"\bi (?:don t |do not |can t |cannot |never |still )?drive\b|\bmy (?:\w+ )?car\b"
        r"|\bdriv(?:ing|er s) licen[cs]e\b|\bdriving test\b"
        r"|\bguido\b|\bpatente\b|\bla mia (?:\w+ )?(?:macchina|auto)\b"
        r"|\bho (?:la |una |un |l )?(?:macchina|auto)\b",
    ),
    (
        "smoke",
        r"\b(?:cigarettes?|cigs|smoking|smoker|vaping|vape)\b"
        r"|\bi (?:don t |never |still |used to )?smoke\b"
        r"|\b(?:sigarett[ae]|fumare|fumatore|fumatrice|svapo)\b|\b(?:non |ancora )fumo\b",
    ),
    (
        "diet",
        r"\b(?:vegetarian|vegan|pescatarian|plant based|celiac|coeliac|gluten free"
        r"|lactose intolerant|halal|kosher)\b|\bdon t eat (?:meat|fish|pork)\b"
        r"|\b(?:vegetarian|vegan|celiac|pescetarian)[oaie]\b|\bsenza glutine\b"
        r"|\bintollerante al lattosio\b|\bnon mangio (?:carne|pesce)\b",
    ),
    (
        "partner",
        r"\bmy (?:\w+ )?(?:boyfriend|girlfriend|husband|wife|fiance|fiancee|spouse)\b"
        r"|\bmy partner\b(?! in crime)|\b(?:got|are|we re|i m|i am) (?:just )?(?:engaged|married)\b"
        r"|\bi m single\b|\b(?:mio marito|mia moglie|il mio ragazzo|la mia ragazza|il mio compagno"
        r"|la mia compagna|il mio fidanzato|la mia fidanzata|il mio partner)\b"
        r"|\bsono (?:sposat|fidanzat)[oa]\b|\bsono single\b",
    ),
    (
        "children",
        r"\bmy (?:\w+ )?(?:son|sons|daughters?|kids|children)\b"
        r"|\bi (?:have|ve got) (?:\w+ ){0,2}(?:kids|children|sons|daughters)\b"
        r"|\b(?:mio figlio|mia figlia|i miei figli|le mie figlie)\b"
        r"|\bho (?:\w+ )?(?:figli[oe]?|figlia|bambin[ie])\b",
    ),
    (
        "siblings",
        r"\bmy (?:\w+ ){0,2}(?:brothers?|sisters?|siblings?|twin)\b"
        r"|\bi (?:have|ve got) (?:\w+ ){0,2}(?:brothers?|sisters?|siblings)\b"
        r"|\bi m (?:a twin|an only child)\b"
        r"|\b(?:mio fratello|mia sorella|i miei fratelli|le mie sorelle|mi[oa] gemell[oa])\b"
        r"|\bho (?:\w+ ){0,2}(?:fratell[oi]|sorell[ae])\b|\bsiamo gemell[ie]\b"
        r"|\bsono (?:gemell[oa]|figli[oa] unic[oa])\b",
    ),
    (
        "parents",
        r"\bmy (?:\w+ )?(?:mum|mom|dad|mother(?! board)|father|parents)\b"
        r"|\b(?:mia madre|mio padre|mia mamma|mio papa|i miei genitori)\b",
    ),
    (
        "study",
        r"\b(?:doing|taking|finishing|started|starting|studying for|working on) (?:an? |my )?"
        r"(?:\w+ ){0,3}(?:degree|masters?|phd|bachelor s?)\b"
        r"|\bmy (?:\w+ ){0,2}(?:degree|thesis|dissertation)\b"
        r"|\b(?:laurea|tesi di laurea|magistrale|triennale|dottorato)\b",
    ),
)

#: slot → the words its statements are made of, searched for beside the question when it asks for
#: the slot (``memory.recall.asked.search_words``): "ha la patente?" shares no word with "non guido,
#: vado ovunque in bici", and e5 may rank that statement below a viewer's other dozens
WORDS: dict[str, str] = {
    "instrument": "play instrument piano guitar violin drums bass suono strumento pianoforte"
    " chitarra violino batteria",
    "sport": "sport training gym football tennis running swimming climbing calcio palestra corro"
    " nuoto pallavolo allenamento",
    "team": "team club support supporter fan football stadium match squadra tifo tifoso calcio"
    " stadio partita",
    "drive": "drive driving car licence guido macchina auto patente",
    "smoke": "smoke smoking cigarettes vape fumo sigarette fumare",
    "diet": "vegetarian vegan meat fish gluten vegetariana vegana carne pesce",
    "partner": "partner boyfriend girlfriend husband wife married engaged ragazzo ragazza marito"
    " moglie fidanzato fidanzata sposata",
    "children": "kids son daughter children figli figlio figlia bambini",
    "siblings": "brother sister siblings twin fratello sorella fratelli sorelle gemello",
    "parents": "mum mom dad mother father parents madre padre mamma papa genitori",
}
