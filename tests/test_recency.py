"""Recency in ranking (``spaces.recency``): comparable answers of a viewer newest first,
by the same query terms or by the same subject of the query; the order kept in the scores."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory.adapters import qdrant_bm25
from memory.spaces import lexical, recency, records
from tests.test_spaces import ALICE, T0, record

QUESTION = "How long have I been using my Fitbit Charge 3?"
#: long statements (LongMemEval's knowledge-update shape): the older matches the question better
OLD = (
    "Cool, thanks for the suggestions! By the way, I've been using my Fitbit Charge 3 for 6 months "
    "now, and it's been helping me stay on track with my daily steps, do you have tips for lazy "
    "Sundays?"
)
NEW = (
    "I've been working on a consistent bedtime routine and I think screens before bed affect my "
    "sleep. By the way, my Fitbit Charge 3 shows I sleep badly, I've had it for 9 months."
)


def hit(text: str, score: float, days: int, user: str = "1001") -> records.MemoryHit:
    said = T0 + timedelta(days=days)
    memory = record(ALICE, text, user_id=user, login="alice", first_ts=said, last_ts=said)
    return records.MemoryHit(record=memory, score=score)


def texts(hits: list[records.MemoryHit]) -> list[str]:
    return [h.record.text for h in hits]


def test_long_statements_about_the_same_subject_newest_first() -> None:
    hits = [
        hit(OLD, 1.5, 0),
        hit("my cousin lent me a charger for my phone", 0.9, 60),
        hit("I walked 12,000 steps on Sunday", 0.6, 70),
        hit(NEW, 0.45, 90),
    ]
    ranked = recency.recent_first(QUESTION, hits)
    assert texts(ranked)[:2] == [NEW, OLD]
    # the scores keep that order: context assembly sorts by score
    assert [h.score for h in ranked] == sorted((h.score for h in ranked), reverse=True)
    # without the same-subject rule the older long statement stays first
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(recency, "SUBJECT_BAND", 2.0)
        assert texts(recency.recent_first(QUESTION, hits))[0] == OLD


def test_an_old_only_answer_is_not_buried_by_a_newer_line_sharing_one_word() -> None:
    only = hit("my Fitbit Charge 3 is from last Christmas, I've used it for 6 months", 1.5, 0)
    newer = hit("I charge my phone every night", 0.9, 30)
    ranked = recency.recent_first(QUESTION, [only, newer])
    assert texts(ranked) == [only.record.text, newer.record.text]


def test_another_viewers_statement_never_joins_the_group() -> None:
    mine, theirs = hit(OLD, 1.5, 0), hit(NEW, 0.9, 90, user="1002")
    assert texts(recency.recent_first(QUESTION, [mine, theirs])) == [OLD, NEW]


def test_a_weak_match_far_below_stays_below() -> None:
    weak = hit(NEW, 0.3, 90)  # under SUBJECT_BAND of the best
    assert texts(recency.recent_first(QUESTION, [hit(OLD, 1.5, 0), weak]))[0] == OLD


def test_a_question_about_when_keeps_the_statement_made_at_the_time_first() -> None:
    hits = [hit(OLD, 1.5, 0), hit(NEW, 0.9, 90)]
    assert texts(recency.recent_first(QUESTION, hits))[0] == NEW
    when = "When did I start using my Fitbit Charge 3?"
    assert texts(recency.recent_first(when, hits))[0] == OLD
    assert texts(recency.recent_first("quando ho preso il Fitbit Charge 3?", hits))[0] == OLD


@pytest.mark.parametrize(
    ("question", "when"),
    [
        ("How many days passed between my visit to MoMA and the exhibit at the Met?", True),
        ("How many days before my best friend's party did I order her gift?", True),
        ("How many months have passed since the charity run?", True),
        ("How many weeks ago did I start the Fitbit Charge 3?", True),
        ("quanti giorni sono passati tra la mostra e il concerto?", True),
        ("quanti mesi fa ho cambiato lavoro?", True),
        ("quanti giorni a settimana vado in palestra?", False),
        # a count, a duration or a frequency of now: a state, newest first
        ("How many days a week do I go to the gym?", False),
        ("How many days did I spend in Hawaii in total?", False),
        ("How long have I been using my Fitbit Charge 3?", False),
    ],
)
def test_the_time_between_two_events_is_a_question_about_when(question: str, when: bool) -> None:
    """Days between two visits are read from the statements made at the time: recency leaves
    such a question alone, as it does "when …?" (the newest retelling of a visit is no answer)."""
    assert recency.asks_when(question) is when


def test_days_between_two_events_keep_the_statements_in_their_rank_order() -> None:
    hits = [hit(OLD, 1.5, 0), hit(NEW, 0.9, 90)]
    since = "How many days passed between my Fitbit Charge 3 and my new sleep routine?"
    assert texts(recency.recent_first(since, hits))[0] == OLD
    assert (
        texts(recency.recent_first("How many days have I had my Fitbit Charge 3?", hits))[0] == NEW
    )


def test_a_newer_statement_matching_part_of_what_the_older_matches_is_the_same_subject() -> None:
    question = "How many different species of birds have I seen in my local park?"
    old = hit(
        "That's really helpful, thanks! By the way, speaking of bird identification, I've been "
        "keeping track of the species I've seen in my local park, and I've managed to spot 27 "
        "different species so far.",
        1.5,
        0,
    )
    new = hit(
        "I'll bring sunflower seeds and suet to attract the woodpeckers. By the way, I just saw a "
        "Northern Flicker in my local park last weekend, which brings my total species count to 32.",
        0.5,
        5,
    )
    assert texts(recency.recent_first(question, [old, new])) == [new.record.text, old.record.text]


def test_a_question_about_an_event_keeps_its_telling_first() -> None:
    # "what did I …?" asks about an event: a later mention of its subject is a retelling
    told = hit(OLD, 1.5, 0)
    retold = hit(NEW, 0.9, 90)
    question = "What did I say about my Fitbit Charge 3 and my daily steps?"
    assert texts(recency.recent_first(question, [told, retold])) == [OLD, NEW]
    assert recency.asks_state("How many pages have I read so far?")
    assert recency.asks_state("dove tengo attualmente le scarpe?")
    assert not recency.asks_state(question)


def test_a_past_tense_question_about_an_event_leaves_recency_off() -> None:
    rome, turin = hit("I live in Rome", 1.5, 0), hit("I live in Turin these days", 1.0, 7)
    assert texts(recency.recent_first("where do I live?", [rome, turin]))[0] == turin.record.text
    before = recency.recent_first("where did I live before?", [rome, turin])
    assert texts(before)[0] == rome.record.text
    assert recency.asks_event("What did Caroline research?")
    assert not recency.asks_event("How many pages did I read so far?")


@pytest.mark.parametrize(
    ("question", "event"),
    [
        ("cosa ho comprato la settimana scorsa?", True),
        ("dove sei andata ieri?", True),
        ("che film abbiamo visto?", True),
        ("dove abito adesso?", False),
        ("quanti libri ho letto finora?", False),
        ("qual è il mio lavoro?", False),
        ("sono stanco, che faccio?", False),
        ("pizza e patate fritte, ti piacciono?", False),  # "e" is "and", not "è"
    ],
)
def test_an_italian_past_tense_question_is_about_an_event(question: str, event: bool) -> None:
    assert recency.asks_event(question) is event
    rome, turin = hit("ho comprato una bici", 1.5, 0), hit("ho comprato una bici nuova", 1.0, 7)
    first = texts(recency.recent_first(question, [rome, turin]))[0]
    if event:  # an event's own telling keeps its place
        assert first == rome.record.text


def test_stored_terms_are_the_indexed_terms_and_are_read_only_in_their_own_scheme() -> None:
    """A point keeps its ``indexed_terms`` (``recency.stored_terms``) with the scheme they are ids
    of; a search in another scheme (a collection re-embedded, a copy) tokenizes again."""
    memory = record(
        ALICE, "ho adottato un gatto, I love him", login="alice_b", context_terms=(7, 9)
    )
    bm25 = qdrant_bm25.encoder(qdrant_bm25.BM25)
    for scheme in (lexical.ENCODER, bm25):
        kept = recency.stored_terms(memory, scheme)
        assert recency.read_terms(kept, scheme) == recency.indexed_terms(memory, scheme)
    assert recency.read_terms(recency.stored_terms(memory, lexical.ENCODER), bm25) is None
    assert recency.read_terms(None, bm25) is None


def test_known_terms_rank_as_the_tokenized_ones_and_are_what_ranking_reads() -> None:
    hits = [hit(OLD, 1.5, 0), hit("I walked 12,000 steps on Sunday", 0.6, 70), hit(NEW, 0.45, 90)]
    tokenized = recency.recent_first(QUESTION, hits)
    indexed = {h.record.id: recency.indexed_terms(h.record) for h in hits}
    assert recency.recent_first(QUESTION, hits, indexed=indexed) == tokenized
    assert texts(tokenized)[0] == NEW
    # read instead of tokenizing: terms that match nothing group nothing, so the old stays first
    nothing = {h.record.id: frozenset[int]() for h in hits}
    assert texts(recency.recent_first(QUESTION, hits, indexed=nothing))[0] == OLD
