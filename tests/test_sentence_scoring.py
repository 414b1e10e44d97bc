"""``scripts/sentence_scoring.py``: its pools' BM25 indexes a turn as the store does;
``scripts/query_wording.py``: its planner's wording is the planner's; ``scripts/reply_vectors.py``:
its shipped variant is what the store embeds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memory import models
from memory.consolidate import documents
from memory.eval import harness
from scripts import query_wording, reply_vectors, sentence_scoring
from tests import test_planner

START = datetime(2026, 1, 1, tzinfo=UTC)


def said(n: int, login: str, text: str, stream: str = "s1") -> models.ChatEvent:
    return models.ChatEvent(
        id=f"m{n}", stream=stream, user_id=f"u-{login}", login=login, text=text,
        ts=START + timedelta(seconds=n),
    )  # fmt: skip


def test_a_turn_answers_the_message_before_it_by_another_viewer_in_its_stream() -> None:
    stream = [
        said(1, "joanna", "How long have you had your turtles?"),
        said(2, "nate", "I've had them for 3 years now"),
        said(3, "nate", "they love the sun"),  # after their own line: answers nothing
        said(4, "joanna", "what a week", stream="s2"),
        said(5, "nate", "same here"),  # its stream's message before is m3, Nate's own
    ]
    assert sentence_scoring.answering(stream) == {"m2": stream[0].text}


def test_the_question_a_turn_answers_finds_it_as_in_the_store() -> None:
    def scores(before: str) -> list[float]:
        stream = [said(1, "joanna", before), said(2, "nate", "I've had them for 3 years now")]
        probe = harness.Probe(
            message_id="q", asker_id="u-tim", target_id="u-nate", evidence_ids=("m2",), kind="4"
        )
        question = sentence_scoring.Question(
            probe, "how long has Nate had turtles", stream[1:], stream
        )
        return list(sentence_scoring.bm25_scores(question))

    # the turn shares only its speaker's name with the question; the question it answers, its
    # subject ("long", "turtles"); a statement before it is no question (``context_terms``)
    assert scores("How long have you had your turtles?")[0] > scores("Turtles live long.")[0] > 0


@pytest.mark.parametrize(
    "question", ["What did Bob research?", "What is Bob's job?", "When did bob move, and why?"]
)
def test_query_wordings_planner_is_the_planners_search_of_a_named_viewer(question: str) -> None:
    """``scripts/query_wording.py`` compares other wordings with the planner's: that one must be
    what the planner searches the named viewer's space with."""
    plans = test_planner.directory_planner()
    plan = plans.plan(test_planner.batch(test_planner.msg("alice", f"@livememory {question}")), [])
    (searched,) = [s.query for s in plan.sources if s.kind == "recall" and s.viewer == "bob"]
    assert query_wording.wordings(question, "bob")["planner"] == searched


@pytest.mark.parametrize(
    "before",
    [
        "That's great! How long have you had your turtles?",
        "@nate how long have you had them? they look happy. and their names?",
        "Turtles live long.",  # no question: the turn alone
        None,
    ],
)
def test_reply_vectors_last_question_variant_is_what_the_store_embeds(before: str | None) -> None:
    turn = said(2, "nate", "I've had them for 3 years now")
    record = documents.personal_record("t1", turn, ("m1", before) if before else None)
    made = reply_vectors.made_of(turn.text, before)
    assert made["last question, turn"] == record.dense_text
    assert made["turn"] == turn.text


def test_reply_vectors_thread_adds_the_authors_turn_before_the_question() -> None:
    stream = [
        said(1, "maria", "last weekend I had a picnic with friends from church"),
        said(2, "john", "What games did you all play?"),
        said(3, "maria", "charades and a scavenger hunt"),
        said(4, "john", "what a week", stream="s2"),
        said(5, "maria", "same here"),  # its stream's messages before: none of hers
        said(6, "maria", "and yours?"),  # after her own line: follows nobody's
    ]
    own = reply_vectors.own_before(stream)
    assert own == {"m3": stream[0].text}
    made = reply_vectors.made_of(stream[2].text, stream[1].text, own["m3"])
    assert made[reply_vectors.THREAD] == (
        "What games did you all play? charades and a scavenger hunt "
        "last weekend I had a picnic with friends from church"
    )
    record = documents.personal_record(
        "t1", stream[2], ("m2", stream[1].text), thread=("m1", own["m3"])
    )
    assert made[reply_vectors.THREAD] == record.dense_text  # what the store embeds
    # no question before it: the turn alone, with or without a turn of its own before
    assert reply_vectors.made_of("ok", "nice.", own["m3"])[reply_vectors.THREAD] == "ok"


def test_reply_vectors_floor_order_reorders_only_the_search_s_ten() -> None:
    pool = [said(n, "nate", f"line {n}") for n in range(12)]
    probe = harness.Probe(
        message_id="q", asker_id="u-tim", target_id="u-nate", evidence_ids=("m9",), kind="4"
    )
    question = sentence_scoring.Question(probe, "what did nate say", pool, pool)
    sparse = np.array([12.0 - n if n < 9 else 0.0 for n in range(12)])  # m9 shares no word
    dense = np.array([0.80] * 12)
    dense[9] = 0.90  # the nearest: the blend lifts it into the first five
    assert list(np.argsort(-sentence_scoring.fused(dense, sparse))).index(9) >= 5
    assert reply_vectors.floor_recall(question, dense, sparse) == 1.0
    assert reply_vectors.floor_recall(question, dense, sparse, limit=2) == 0.0  # not found
