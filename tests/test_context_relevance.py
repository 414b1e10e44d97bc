"""Relevance-ranked context: profile facts compete with search hits, the budget goes by score."""

from __future__ import annotations

from memory.recall import context
from tests.test_context import item, ok, src


def test_a_profile_fact_no_hit_repeats_comes_after_the_hits() -> None:
    outcomes = [
        ok(
            src("profile", "alice"),
            item("profile", "I work as a nurse", "alice", score=1.0),
            item("profile", "my cat is called Miso", "alice", score=0.99, memory_id="m-cat"),
        ),
        ok(
            src("recall", "alice"),
            item("recall", "we went camping in the Alps", "alice", score=0.4),
            item("recall", "my cat is called Miso!", "alice", score=0.3, memory_id="m-cat"),
        ),
    ]
    assembled = context.assemble(outcomes, [], token_budget=1000)
    assert [(i.source, i.text) for i in assembled.items] == [
        ("recall", "we went camping in the Alps"),
        ("profile", "my cat is called Miso"),  # the hit it repeats: its score, its place
        ("profile", "I work as a nurse"),  # answers nothing the search found: last
    ]


def test_a_viewer_who_asked_what_the_bot_knows_gets_the_profile_first() -> None:
    outcomes = [
        ok(src("profile", "alice", explicit=True), item("profile", "I work as a nurse", "alice")),
        ok(
            src("recall", "alice", explicit=True),
            item("recall", "we like ramen", "alice", score=0.9),
        ),
    ]
    assembled = context.assemble(outcomes, [], token_budget=1000)
    assert [i.source for i in assembled.items] == ["profile", "recall"]


def test_the_budget_goes_to_the_best_scores_across_sources() -> None:
    """A tight budget keeps the strong episodic hit and drops the weak profile and recall lines,
    whatever their source; channel state, canonical, is always served first."""
    outcomes = [
        ok(
            src("profile", "alice"),
            item("profile", "I collect vintage postcards from Spain", "alice"),
        ),
        ok(
            src("recall", "alice"),
            item("recall", "my brother lives in Lisbon these days", "alice", score=0.1),
        ),
        ok(src("episodic"), item("episodic", "alice and bob raced to the lava pit", score=0.9)),
        ok(src("state"), item("state", "bob is on team red", score=0.2)),
    ]
    full = context.assemble(outcomes, [], token_budget=1000)
    assert len(full.items) == 4
    tight = context.assemble(outcomes, [], token_budget=full.tokens_estimate - 20)
    assert {i.source for i in tight.items} == {"episodic", "state"}


def test_an_episode_a_viewers_memory_above_it_already_shows_is_dropped() -> None:
    outcomes = [
        ok(
            src("recall", "alice"),
            item("recall", "I moved from Sweden", "alice", origin=("m1",), score=0.9),
        ),
        ok(
            src("episodic"),
            item("episodic", "alice: I moved from Sweden", origin=("m1",), score=0.8),
            item(
                "episodic", "alice: I moved from Sweden\nbob: wow", origin=("m1", "m2"), score=0.7
            ),
            item("episodic", "bob: I love Sweden", origin=("m3",), score=0.95),
        ),
    ]
    assembled = context.assemble(outcomes, [], token_budget=1000)
    assert [i.text for i in assembled.items] == [
        "I moved from Sweden",
        "bob: I love Sweden",  # the episodic section after the viewers'
        "alice: I moved from Sweden\nbob: wow",  # a line more than the memory shows: kept
    ]
