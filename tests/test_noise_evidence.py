"""The noise filter keeps evidence a viewer gives without "I"/"my" (answers, descriptions of their
life) and still drops chat noise, talk about the stream, and what someone says about someone else."""

from __future__ import annotations

import pytest

from memory.consolidate import noise

KEPT = [
    ("They're tough kids, both of them, and they love the beach.", None, noise.DESCRIPTIVE),
    ("Been busy volunteering at the homeless shelter", None, noise.KEEP),
    ("been working as a nurse for six years now", None, noise.KEEP),
    ("greetings from Dublin, where I live", None, noise.KEEP),
    ("We went camping with the kids last weekend", None, noise.KEEP),
    ("Last weekend I joined a mentorship program for LGBTQ youth", None, noise.KEEP),
    ("Pepperoni of course!", "What's your favourite pizza?", noise.ANSWER),
    ("Pizza margherita, sempre", "qual è la tua pizza preferita?", noise.ANSWER),
]

DROPPED = [
    ("alice said: I live in Rome", None, noise.REPORTED),
    ("marco abita a Bologna, me l'ha detto su discord", None, noise.NOT_SELF),
    ("bob is a photographer irl", None, noise.REPORTED),
    ("btw @nina lives in Berlin", None, noise.NOT_SELF),
    ("chat is wild today", None, noise.NOT_SELF),
    ("the streamer should go left to get the key", None, noise.NOT_SELF),
    ("You'd be a great counselor, truly amazing work", None, noise.NOT_SELF),
    ("I won", None, noise.EPHEMERAL),
    ("no way", "do you have a dog?", noise.NOT_SELF),
    ("nice shot", "what game is this?", noise.NOT_SELF),  # the question was not put to them
    ("the music is fire", "@Mnemo what do you remember about me?", noise.NOT_SELF),  # nor this
    ("that jump was clean", None, noise.NOT_SELF),
    # a clause that only calls the streamer: the praise is theirs, wherever the call stands
    ("good job on that clutch, streamer", None, noise.NOT_SELF),
]


@pytest.mark.parametrize(("text", "previous", "reason"), KEPT)
def test_evidence_without_a_first_person_clause_is_kept(
    text: str, previous: str | None, reason: str
) -> None:
    assert noise.classify(text, previous=previous) == noise.Verdict(keep=True, reason=reason)


@pytest.mark.parametrize(("text", "previous", "reason"), DROPPED)
def test_noise_and_other_peoples_facts_are_dropped(
    text: str, previous: str | None, reason: str
) -> None:
    assert noise.classify(text, previous=previous) == noise.Verdict(keep=False, reason=reason)
