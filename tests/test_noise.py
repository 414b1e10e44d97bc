from __future__ import annotations

import pytest

from memory.consolidate import noise

KEPT = [
    "I work as a graphic designer",
    "I moved to Turin",
    "I live in Rome",
    "my cat is called Miso",
    "I'm 25",
    "I'm a nurse and I love hiking",
    "I have two dogs",
    "My name is Marco",
    "I've been a teacher for ten years",
    "hi chat, I work as a graphic designer",
    "hey everyone! I moved to Turin last month",
    "I moved to Turin, have you ever been there?",
    "remember that I'm vegan",
    "@mnemo I study physics in Bologna",
    "lol my cat is called Miso",
    "I'm from Milan",
    "I play the guitar in a band",
    "sono di Milano",
    "vivo a Roma",
    "lavoro come grafico",
    "ho 25 anni",
    "il mio gatto si chiama Miso",
    "mi chiamo Giulia",
    "mi sono trasferita a Torino",
    "abito a Napoli da tre anni",
    "ciao a tutti, sono di Milano",
    "studio ingegneria al Politecnico",
    "ho un cane che si chiama Rex",
    "tifo Juventus da sempre",
    "ricordati che sono vegetariano",
    "turned 25 yesterday",
    "just turned 30!",
    "gioco a calcetto il martedì con i colleghi",
    "vado al lavoro in bici",
]

DROPPED = [
    ("", noise.EMPTY),
    ("   ", noise.EMPTY),
    ("@alice", noise.EMPTY),
    ("!forget I live in Rome", noise.COMMAND),
    ("!pause", noise.COMMAND),
    ("https://clips.twitch.tv/SomeClip", noise.LINK),
    ("www.example.com", noise.LINK),
    ("check this https://youtu.be/xyz", noise.NOT_SELF),
    ("I'm a billionaire /s", noise.SARCASM),
    ("I live on the moon Kappa", noise.SARCASM),
    ("I'm the king of Italy jk", noise.SARCASM),
    ("sono il papa, scherzo", noise.SARCASM),
    ("*hugs mnemo*", noise.ROLEPLAY),
    ("*draws sword* I am the knight of the realm", noise.ROLEPLAY),
    ("/me dances", noise.ROLEPLAY),
    ("KEKW KEKW KEKW", noise.EMOTE_SPAM),
    ("PogChamp", noise.EMOTE_SPAM),
    ("catJAM catJAM", noise.EMOTE_SPAM),
    ("😂😂😂", noise.EMOTE_SPAM),
    ("LUL LUL LUL OMEGALUL", noise.EMOTE_SPAM),
    ("go go go go", noise.EMOTE_SPAM),
    ("lol", noise.SHORT_REACTION),
    ("LOOOOL", noise.SHORT_REACTION),
    ("pog", noise.SHORT_REACTION),
    ("xD", noise.EMOTE_SPAM),
    ("xDDDD", noise.SHORT_REACTION),
    ("ahahahahah", noise.SHORT_REACTION),
    ("hahaha", noise.SHORT_REACTION),
    ("gg wp", noise.SHORT_REACTION),
    ("me too", noise.SHORT_REACTION),
    ("my bad", noise.SHORT_REACTION),
    ("oh my god", noise.SHORT_REACTION),
    ("mamma mia", noise.SHORT_REACTION),
    ("daje", noise.SHORT_REACTION),
    ("ho ho ho", noise.SHORT_REACTION),
    ("hi", noise.GREETING),
    ("hello everyone", noise.GREETING),
    ("good morning chat!", noise.GREETING),
    ("ciao a tutti", noise.GREETING),
    ("buonasera ragazzi", noise.GREETING),
    ("gn chat", noise.GREETING),
    ("what game is this?", noise.QUESTION),
    ("do you remember where I live?", noise.QUESTION),
    ("am I the best viewer", noise.QUESTION),
    ("how are you", noise.QUESTION),
    ("di dove sei?", noise.QUESTION),
    ("come ti chiami", noise.QUESTION),
    ("ti ricordi che lavoro faccio", noise.QUESTION),
    ("if I were rich I would buy a castle", noise.HYPOTHETICAL),
    ("I wish I lived in Japan", noise.HYPOTHETICAL),
    ("vorrei vivere a Tokyo", noise.HYPOTHETICAL),
    ("se fossi ricco comprerei un castello", noise.HYPOTHETICAL),
    ("I'm so hungry", noise.EPHEMERAL),
    ("I'm back", noise.EPHEMERAL),
    ("I have to go, bye", noise.EPHEMERAL),
    ("I love this song", noise.EPHEMERAL),
    ("I hate this boss", noise.EPHEMERAL),
    ("brb I need to eat", noise.EPHEMERAL),
    ("ho fame", noise.EPHEMERAL),
    ("sono stanco", noise.EPHEMERAL),
    ("devo andare a dormire", noise.EPHEMERAL),
    ("mi piace questa canzone", noise.EPHEMERAL),
    ("Alice lives in Rome", noise.NOT_SELF),
    ("the boss fight was crazy", noise.NOT_SELF),
    ("tell me a joke", noise.NOT_SELF),
    ("Marco lavora a Milano", noise.NOT_SELF),
    ("che bello questo stream", noise.QUESTION),
    # "gioco"/"lavoro" after an article or a preposition are nouns, not "I play"/"I work"
    ("in quel gioco sei solo carne da cannone", noise.NOT_SELF),
    ("bel lavoro, chat", noise.NOT_SELF),
]


@pytest.mark.parametrize("text", KEPT)
def test_durable_self_statements_are_kept(text: str) -> None:
    verdict = noise.classify(text)
    assert verdict == noise.Verdict(keep=True, reason=noise.KEEP), text


@pytest.mark.parametrize(("text", "reason"), DROPPED)
def test_noise_is_dropped_with_its_reason(text: str, reason: str) -> None:
    verdict = noise.classify(text)
    assert not verdict.keep, text
    assert verdict.reason == reason, text


def test_classify_is_deterministic() -> None:
    texts = [t for t in KEPT] + [t for t, _ in DROPPED]
    assert [noise.classify(t) for t in texts] == [noise.classify(t) for t in texts]


# (message, verdict with the bot's names given, verdict without them)
ADDRESSED = [
    ("@Mnemo you are my favourite bot", noise.ABOUT_BOT, noise.ABOUT_ADDRESSEE),
    ("Mnemo sei il migliore", noise.ABOUT_BOT, noise.NOT_SELF),
    ("mnemo ti voglio bene", noise.ABOUT_BOT, noise.NOT_SELF),
    ("hey Mnemo you're my hero", noise.ABOUT_BOT, noise.KEEP),
    ("hey Mnemo, you're my hero", noise.GREETING, noise.KEEP),  # the first clause's reason
    ("Mnemo your voice is my favourite", noise.ABOUT_BOT, noise.KEEP),
    ("@mnemo il tuo carattere è il mio preferito", noise.ABOUT_BOT, noise.ABOUT_ADDRESSEE),
    ("you are my favourite bot @Mnemo", noise.ABOUT_BOT, noise.KEEP),
    ("@bob you are my best friend", noise.ABOUT_ADDRESSEE, noise.ABOUT_ADDRESSEE),
    # a self-statement in another clause is still kept
    ("@Mnemo I live in Rome, you are great", noise.KEEP, noise.KEEP),
    ("@Mnemo you are great, I live in Rome", noise.KEEP, noise.KEEP),
    ("Mnemo hai ragione, io vivo a Roma", noise.KEEP, noise.KEEP),
    ("@mnemo I study physics in Bologna", noise.KEEP, noise.KEEP),
    ("I love my job mnemo", noise.KEEP, noise.KEEP),
    # a viewer whose name merely contains the bot's is no mention of it
    ("mnemofan you are my favourite", noise.KEEP, noise.KEEP),
]


@pytest.mark.parametrize(("text", "with_names", "without"), ADDRESSED)
def test_a_message_to_the_bot_about_the_bot_is_no_self_statement(
    text: str, with_names: str, without: str
) -> None:
    verdict = noise.classify(text, bot_names=("Mnemo", "@mnemo"))
    assert verdict == noise.Verdict(keep=with_names == noise.KEEP, reason=with_names), text
    assert noise.classify(text).reason == without, text


@pytest.mark.parametrize(
    ("text", "reaction"),
    [
        ("KEKW", True),
        ("ahahahah", True),
        ("@bob lol", True),
        ("LUL LUL LUL", True),
        ("", True),
        ("gg chat", False),
        ("that boss took ages", False),
        ("I live in Rome", False),
    ],
)
def test_a_reaction_is_a_line_that_says_nothing_but_laughter_emotes_or_gg(
    text: str, reaction: bool
) -> None:
    assert noise.is_reaction(text) is reaction


def test_the_kept_reasons_are_those_of_kept_verdicts() -> None:
    kept = {noise.classify(text).reason for text in KEPT} | {
        noise.classify("Pepperoni of course!", previous="What's your favourite pizza?").reason,
        noise.classify("They're tough kids, both of them, and they love the beach.").reason,
    }
    assert kept == noise.KEPT_REASONS
    assert not {noise.classify(text).reason for text, _ in DROPPED} & noise.KEPT_REASONS
