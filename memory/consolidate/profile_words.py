"""The word lists behind the profile's job and study slots (English and Italian).

"I'm a …" / "sono un …" is far broader than a job: "I'm a bit tired", "I'm a huge fan of X",
"I'm a mess", "sono un po' stanco", "sono una frana". So those forms fill the job slot only when
the phrase ends (English) or starts (Italian) with an occupation from these curated lists, and no
evaluative word ("good", "terrible", "bravo", "pessimo") comes first: "I'm a terrible cook" is a
self-judgement, not a job. Explicit job phrasings ("I work as …", "started a job as …", "lavoro
come …") need no list.
"""

from __future__ import annotations

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
    giornalista grafico grafica idraulico impiegato impiegata infermiere infermiera ingegnere
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
