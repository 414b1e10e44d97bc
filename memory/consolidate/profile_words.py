"""The word lists behind the profile slots (English and Italian), and the readers that cut a
slot's value out of the words after its pattern ("Turin", "software tester", "law").

"I'm a …" / "sono un …" is far broader than a job: "I'm a bit tired", "I'm a huge fan of X",
"I'm a mess", "sono un po' stanco", "sono una frana". So those forms fill the job slot only when
the phrase ends (English) or starts (Italian) with an occupation from these curated lists, and no
evaluative word ("good", "terrible", "bravo", "pessimo") comes first: "I'm a terrible cook" is a
self-judgement, not a job. Explicit job phrasings ("I work as …", "started a job as …", "lavoro
come …") need no list.
"""

from __future__ import annotations

import re

#: English occupation nouns (the last word of "I'm a software tester", "I'm a nurse")
_OCCUPATIONS_EN = """
    accountant actor actress administrator analyst animator architect artist assistant
    attorney auditor baker barber barista bartender beautician bookkeeper bricklayer builder
    butcher carpenter caregiver cashier chef chemist cleaner clerk coach consultant cook
    copywriter counselor counsellor courier dentist designer detective developer dietitian
    doctor driver economist editor educator electrician engineer farmer firefighter fisherman
    florist hairdresser hygienist illustrator instructor interpreter janitor journalist judge
    lawyer lecturer librarian lifeguard locksmith machinist manager marketer mechanic midwife
    miner musician nanny nurse optician paralegal paramedic pharmacist photographer
    physician physicist physiotherapist pilot plumber policeman policewoman postman practitioner
    producer professor programmer psychologist psychiatrist receptionist recruiter researcher
    sailor salesman saleswoman scientist secretary soldier statistician steward stewardess
    surgeon surveyor tailor teacher technician therapist tester translator tutor veterinarian
    vet waiter waitress welder writer
    """
OCCUPATIONS_EN = frozenset(_OCCUPATIONS_EN.split())

#: Italian occupation nouns, every gender form (after "sono un/una/uno/un'", "faccio il/la/lo/l'")
_OCCUPATIONS_IT = """
    agricoltore agricoltrice analista architetto architetta attore attrice autista avvocato
    avvocata avvocatessa badante barbiere barista cameriere cameriera camionista cantante
    carabiniere chef chirurgo chirurga commercialista commesso commessa consulente contabile
    cuoco cuoca dentista designer dottore dottoressa educatore educatrice elettricista estetista
    falegname farmacista fioraio fioraia fisioterapista fornaio fornaia fotografo fotografa
    giornalista grafico grafica idraulico illustratore illustratrice impiegato impiegata
    infermiere infermiera ingegnere
    insegnante magazziniere maestro maestra meccanico medico muratore musicista operaio operaia
    ostetrica panettiere panettiera parrucchiere parrucchiera pasticcere pasticciere pasticcera
    pasticciera pilota pizzaiolo pizzaiola poliziotto poliziotta pompiere postino postina
    professore professoressa programmatore programmatrice psicologo psicologa ragioniere
    ragioniera receptionist ricercatore ricercatrice rider segretario segretaria sistemista
    sviluppatore sviluppatrice tecnico tecnica tester traduttore traduttrice veterinario
    veterinaria
    """
OCCUPATIONS_IT = frozenset(_OCCUPATIONS_IT.split())

#: words that make "I'm a … <occupation>" a judgement or not current ("a terrible cook", "an ex
#: nurse", "un bravo cuoco"): the phrase is then no job
_EVALUATIVE = """
    good bad great terrible awful horrible decent amazing awesome excellent better worse best worst
    fine poor lousy crap crappy shit shitty real total proper wannabe aspiring failed former ex
    future retired huge big little tiny true natural born self-proclaimed wanna-be
    bravo brava bravissimo bravissima pessimo pessima ottimo ottima grande piccolo piccola vero
    vera ex futuro futura mancato mancata aspirante aspiranti
    """
EVALUATIVE = frozenset(_EVALUATIVE.split())

#: "I'm a … student" words that say where, not what ("a PhD student", "a college student")
_STUDY_LEVELS = """
    phd grad graduate postgraduate undergraduate undergrad uni university college school high
    exchange erasmus international master masters master's bachelor bachelor's doctoral
    first second third final year full-time part-time mature
    """
STUDY_LEVELS = frozenset(_STUDY_LEVELS.split())

#: what follows "I live in" / "sono di" / "vivo in" without being a place ("I live in the moment",
#: "sono di turno", "sono di fretta", "vivo in pace")
_NOT_PLACES = """
    a an moment past present future fear denial hope peace sin shame fantasy my your his her
    their our turno fretta corsa buon buona cattivo cattiva ritorno passaggio moda parte strada
    sicuro solito compagnia guardia pace funzione attesa quel quella questo questa
    """
NOT_PLACES = frozenset(_NOT_PLACES.split())

#: where a value stops: punctuation, a conjunction, or a time phrase
_STOP = re.compile(
    r"[.,;!?()]|\s(?:and|but|since|for|now|ago|last|this|recently|because|too|also|anymore|lol"
    r"|btw|yesterday|today|e|ma|da|dal|dalla|dallo|ormai|adesso|ora|perch[eé]|quest[oa]|l'anno"
    r"|il mese|lo scorso|la scorsa|pochi|ieri|oggi)\s",
    re.I,
)
#: words that end a job phrase ("a nurse at the hospital", "infermiera a Milano")
_JOB_STOP_WORDS = (
    "at in for of with from and but now too also since by on who that which so because lol lmao"
    " haha btw irl here there myself anyway anymore currently though tho today yesterday like"
    " a ad per presso da dal dalla e ed ma ora adesso che con ormai anche qui nel nella alla al"
    " allo ai agli alle da ieri oggi last next ago while whilst when one two three four five six"
    " seven eight nine ten few several many"
)
_JOB_STOPS = frozenset(_JOB_STOP_WORDS.split())
_WORD = re.compile(r"[\w'-]+")


def plain_value(rest: str) -> str:
    """The value at the start of ``rest``: up to four words, cut at punctuation or a stop word."""
    value = _STOP.split(" " + rest.strip() + " ", maxsplit=1)[0].strip()
    return " ".join(value.split()[:4]).strip(" '\"")


def _phrase(rest: str, limit: int = 4) -> list[str]:
    """The words at the start of ``rest`` before punctuation or a job stop word."""
    head = re.split(r"[.,;:!?()\"]", rest, maxsplit=1)[0]
    words: list[str] = []
    for word in _WORD.findall(head):
        if word.casefold() in _JOB_STOPS or word[0].isdigit() or len(words) == limit:
            break
        words.append(word)
    return words


def place(rest: str) -> str | None:
    """A place ("Turin", "New York City", "the Netherlands"): not "the moment", "turno", "pace"."""
    value = plain_value(rest)
    head = value.casefold().removeprefix("the ").split(" ", 1)[0]
    return None if not value or head in NOT_PLACES else value


def job_value(rest: str) -> str | None:
    """An explicitly stated job ("I work as a …"): the phrase as written."""
    return " ".join(_phrase(rest)) or None


def occupation_en(rest: str) -> str | None:
    """After "I'm a": the phrase when it ends with an occupation and judges nothing."""
    words = _phrase(rest)
    folded = [w.casefold() for w in words]
    if not folded or folded[-1] not in OCCUPATIONS_EN:
        return None
    if any(w in EVALUATIVE for w in folded):
        return None
    return " ".join(words)


def occupation_it(rest: str) -> str | None:
    """After "sono un/una/uno/un'" or "faccio il/la/lo/l'": an occupation, with up to two words
    that qualify it ("ingegnere informatico", "insegnante di matematica")."""
    words = _WORD.findall(re.split(r"[.,;:!?()\"]", rest, maxsplit=1)[0])
    if not words or words[0].casefold() not in OCCUPATIONS_IT:
        return None
    kept = [words[0]]
    for word in words[1:3]:
        if word.casefold() in _JOB_STOPS and word.casefold() not in {"di", "del", "della"}:
            break
        kept.append(word)
    if kept[-1].casefold() in {"di", "del", "della"}:
        kept.pop()
    return " ".join(kept)


#: what follows "I study" / "studio" without being what a viewer studies ("I study in the library",
#: "studio per l'esame di domani", "studio sodo")
_NOT_FIELDS = """
    in at on with for to from every all hard late together alone tonight today tomorrow a an the
    lot much more less my your his her their our some
    per a al alla allo ai alle con da di tutto tutta tutti sempre molto poco tanto troppo stasera
    oggi domani ancora qui insieme e ma il lo la le i gli un una uno l che come quando mentre ogni
    fino sodo
    """
NOT_FIELDS = frozenset(_NOT_FIELDS.split())
#: words of an English sentence after a capitalized "Studio": "Studio Ghibli films are the best"
#: names a studio, it says nothing of what the speaker studies
_ENGLISH_WORDS = "the is are was were has have had my and film films movie movies"
_ENGLISH = frozenset(_ENGLISH_WORDS.split())


def field(rest: str) -> str | None:
    """After "I study" / "studio": what a viewer studies ("physics", "ingegneria"), not where, how
    or for what ("in the library", "per l'esame"), nor a capitalized name in an English sentence
    ("Studio Ghibli films are the best")."""
    found = _WORD.findall(rest)
    if not found or found[0].casefold().split("'")[0] in NOT_FIELDS:
        return None
    if found[0][0].isupper() and any(w.casefold() in _ENGLISH for w in found[1:]):
        return None
    return plain_value(rest) or None


def student_en(rest: str) -> str | None:
    """After "I'm a": the field of "a law student", "a PhD student in physics" (None for "a
    student", "a college student")."""
    words = _WORD.findall(re.split(r"[.,;:!?()\"]", rest, maxsplit=1)[0])
    folded = [w.casefold() for w in words]
    if "student" not in folded[:5]:
        return None
    at = folded.index("student")
    if folded[at + 1 : at + 2] in (["in"], ["of"]):
        return plain_value(" ".join(words[at + 2 :])) or None
    field = [w for w in words[:at] if w.casefold() not in STUDY_LEVELS]
    if any(w.casefold() in EVALUATIVE for w in field):
        return None
    return " ".join(field) or None
