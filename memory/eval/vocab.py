"""Words and sentence templates of the synthetic stream (English and Italian)."""

from __future__ import annotations

ATTRIBUTES = ("job", "city", "pet", "hobby")

NAMES = (
    "alice", "bob", "carol", "dave", "erin", "frank", "giulia", "marco", "sofia", "luca",
    "chiara", "matteo", "grace", "heidi", "ivan", "judy", "karl", "lena", "mallory", "nina",
    "oscar", "peggy", "quentin", "rupert", "sybil", "trent", "ursula", "victor", "wendy", "xena",
)  # fmt: skip

JOBS = (
    "graphic designer", "nurse", "teacher", "software developer", "chef", "electrician",
    "accountant", "photographer", "mechanic", "pharmacist", "architect", "firefighter",
)  # fmt: skip
CITIES = (
    "Rome", "Milan", "Turin", "Naples", "Bologna", "Florence", "Berlin", "Lyon", "Madrid",
    "Austin", "Toronto", "Oslo", "Dublin", "Lisbon", "Vienna",
)  # fmt: skip
PETS = ("cat", "dog", "parrot", "rabbit", "hamster", "ferret")
PET_NAMES = ("Biscotto", "Luna", "Pixel", "Mochi", "Briciola", "Rex", "Nacho", "Pepper", "Olive")
HOBBIES = (
    "rock climbing", "baking bread", "playing chess", "gardening", "playing bass",
    "running marathons", "painting miniatures", "fishing",
)  # fmt: skip

ITALIAN = {
    "graphic designer": "grafico", "nurse": "infermiere", "teacher": "insegnante",
    "software developer": "sviluppatore software", "chef": "cuoco", "electrician": "elettricista",
    "accountant": "commercialista", "photographer": "fotografo", "mechanic": "meccanico",
    "pharmacist": "farmacista", "architect": "architetto", "firefighter": "vigile del fuoco",
    "Rome": "Roma", "Milan": "Milano", "Turin": "Torino", "Naples": "Napoli", "Florence": "Firenze",
    "Berlin": "Berlino", "Lyon": "Lione", "Dublin": "Dublino", "Lisbon": "Lisbona",
    "cat": "gatto", "dog": "cane", "parrot": "pappagallo", "rabbit": "coniglio",
    "hamster": "criceto", "ferret": "furetto",
    "rock climbing": "arrampicare", "baking bread": "fare il pane", "playing chess": "giocare a scacchi",
    "gardening": "fare giardinaggio", "playing bass": "suonare il basso",
    "running marathons": "correre maratone", "painting miniatures": "dipingere miniature",
    "fishing": "pescare",
}  # fmt: skip


def localize(value: str, lang: str) -> str:
    return ITALIAN.get(value, value) if lang == "it" else value


def article(value: str) -> str:
    return "an" if value[:1].lower() in "aeiou" else "a"


STATEMENTS: dict[str, dict[str, tuple[str, ...]]] = {
    "en": {
        "city": ("I live in {value}", "greetings from {value}, where I live",
                 "my place is in {value}, been living here for years"),
        "job": ("I work as {article} {value}", "I'm {article} {value} by day, gamer by night",
                "been working as {article} {value} for six years now"),
        "pet": ("I have {article} {value} called {pet_name}",
                "my {value} {pet_name} is sleeping on my lap right now"),
        "hobby": ("my hobby is {value}", "I spend my weekends {value}", "I'm really into {value}"),
    },
    "it": {
        "city": ("abito a {value}", "vivo a {value} da anni"),
        "job": ("lavoro come {value}", "sono {value} di professione"),
        "pet": ("ho un {value} che si chiama {pet_name}", "il mio {value} {pet_name} dorme sul divano"),
        "hobby": ("il mio hobby è {value}", "nel tempo libero mi piace {value}"),
    },
}  # fmt: skip

CORRECTIONS: dict[str, dict[str, tuple[str, ...]]] = {
    "en": {
        "city": ("I moved to {value} last month", "update: I live in {value} now"),
        "job": ("I quit my old job, now I work as {article} {value}", "new job! I'm {article} {value} now"),
    },
    "it": {
        "city": ("mi sono trasferito a {value}", "ora abito a {value}"),
        "job": ("ho cambiato lavoro, ora lavoro come {value}",),
    },
}  # fmt: skip

CLAIMS: dict[str, dict[str, tuple[str, ...]]] = {
    "en": {
        "city": ("{who} lives in {value}, they told me on discord", "btw @{who} lives in {value}"),
        "job": ("{who} is {article} {value} irl", "fun fact: @{who} works as {article} {value}"),
    },
    "it": {
        "city": ("{who} abita a {value}, me l'ha detto su discord",),
        "job": ("@{who} lavora come {value}",),
    },
}  # fmt: skip

GREETINGS: dict[str, tuple[str, ...]] = {
    "en": ("hi chat!", "hello everyone", "hey @{bot}", "evening all"),
    "it": ("ciao chat!", "buonasera a tutti", "ciao @{bot}"),
}

NOISE_EN = (
    "KEKW KEKW KEKW", "PogChamp", "LUL LUL LUL", "monkaS", "Kappa", "OMEGALUL", "GG", "nice shot",
    "that jump was clean", "what game is this?", "is this a new map?", "how long has he been live?",
    "lol", "hype hype hype", "!uptime", "!lurk", "brb food", "what's the song?", "the music is fire",
    "F", "clip it!", "chat is wild today", "anyone else lagging?", "hi @{bot}", "wow", "no way",
    "catJAM catJAM catJAM", "@{bot} you are my favourite bot", "that was close",
)  # fmt: skip
NOISE_IT = (
    "ahah", "che gioco è?", "ciao a tutti", "bella giocata", "mamma mia", "grande!",
    "quanto manca alla fine?", "che musica è?", "ma dai", "KEKW", "forza!", "buonasera chat",
)  # fmt: skip

#: (topic, message) — notable moments early in the stream
MOMENTS = (
    ("boss fight", "that boss fight with the ice dragon took seven tries, I counted"),
    ("lava pit", "LOL the streamer just fell into the lava pit on the first level"),
    ("waterfall skip", "that waterfall skip was insane, never seen it done live"),
    ("castle route", "chat poll picked the haunted castle route, rip"),
    ("golden chicken", "wait did he just find the golden chicken behind the bakery?"),
    ("bridge jump", "his controller disconnected right in the middle of the bridge jump"),
)

RECALL_ME: dict[str, tuple[str, ...]] = {
    "en": ("@{bot} what do you remember about me?", "{bot} what do you know about me?",
           "@{bot} do you remember me? what do you know?"),
    "it": ("@{bot} cosa ricordi di me?", "{bot} cosa sai di me?"),
}  # fmt: skip

ASK_SELF: dict[str, dict[str, tuple[str, ...]]] = {
    "en": {
        "city": ("@{bot} do you remember where I live?",),
        "job": ("@{bot} do you remember what I do for work?",),
        "pet": ("{bot} do you remember my pet's name?",),
        "hobby": ("@{bot} do you remember my hobby?",),
    },
    "it": {
        "city": ("@{bot} ti ricordi dove abito?",),
        "job": ("@{bot} ti ricordi che lavoro faccio?",),
        "pet": ("{bot} ti ricordi come si chiama il mio animale?",),
        "hobby": ("@{bot} ti ricordi il mio hobby?",),
    },
}

ASK_OTHER: dict[str, dict[str, tuple[str, ...]]] = {
    "en": {
        "city": ("@{bot} where does @{who} live?", "{bot} do you know where {who} lives?"),
        "job": ("@{bot} what does @{who} do for a living?", "{bot} what is {who}'s job?"),
        "pet": ("@{bot} does @{who} have a pet?",),
        "hobby": ("{bot} what is @{who}'s hobby?",),
    },
    "it": {
        "city": ("@{bot} dove abita @{who}?",),
        "job": ("@{bot} che lavoro fa @{who}?",),
        "pet": ("@{bot} @{who} ha un animale?",),
        "hobby": ("@{bot} qual è l'hobby di @{who}?",),
    },
}

ASK_MOMENT: dict[str, tuple[str, ...]] = {
    "en": ("@{bot} what did chat say at the start about the {topic}?",
           "{bot} remember the {topic} earlier in the stream? what happened?"),
    "it": ("@{bot} ti ricordi cosa è successo all'inizio con il {topic}?",),
}  # fmt: skip

#: (id, text, key phrase) — the bot's canon
LORE = (
    ("lore-origin", "Mnemo is a small robot librarian who escaped from a flooded archive in Venice.",
     "flooded archive"),
    ("lore-fear", "Mnemo is afraid of magnets, because magnets erase memories.", "magnets"),
    ("lore-friend", "Mnemo's best friend is a pigeon named Archivio.", "pigeon"),
    ("lore-fuel", "Mnemo says it runs on espresso and old newspapers.", "espresso"),
    ("lore-rival", "Mnemo's rival is Oblivio, a vacuum cleaner that forgets everything.", "oblivio"),
)  # fmt: skip

#: (lore id, question)
LORE_QUESTIONS = (
    ("lore-origin", "@{bot} where do you come from? what's your story?"),
    ("lore-fear", "{bot} are you scared of anything?"),
    ("lore-friend", "@{bot} who is your best friend?"),
    ("lore-fuel", "{bot} what do you run on? coffee?"),
    ("lore-rival", "@{bot} do you have a rival?"),
    ("lore-origin", "@{bot} da dove vieni?"),
)
