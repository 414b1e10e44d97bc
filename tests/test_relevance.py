"""The relevance floor of context assembly (``memory.recall.relevance``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from memory import models
from memory.recall import asked, context, relevance

FLOOR = relevance.Floor(absolute=0.70, gap=0.02, stream_wide=1)


def item(source: str, text: str, similarity: float | None, **more: Any) -> models.RecallItem:
    viewer = more.pop("viewer", "alice" if source in ("profile", "recall") else None)
    return models.RecallItem(
        source=source,
        space=f"viewer:{viewer}" if viewer else source,
        viewer=viewer,
        memory_id=text,
        text=text,
        origin_message_ids=(text,),
        score=similarity or 0.0,
        similarity=similarity,
        **more,
    )


def test_items_far_from_the_best_of_their_viewer_are_left_out() -> None:
    items = [
        item("recall", "my dog Biscuit chews my slippers", 0.86),
        item("recall", "my biggest pet peeve is loud chewing", 0.85),
        item("recall", "I'm a nurse", 0.79),
        item("recall", "bob's cat", 0.78, viewer="bob"),  # bob's own best: kept
    ]
    kept, dropped = relevance.keep(items, FLOOR)
    assert [i.text for i in kept] == [items[0].text, items[1].text, "bob's cat"]
    assert dropped == {"recall:alice": 1}


def test_nothing_under_the_absolute_floor_even_as_the_best() -> None:
    kept, dropped = relevance.keep([item("recall", "lol", 0.65)], FLOOR)
    assert kept == [] and dropped == {"recall:alice": 1}


def test_a_stream_wide_source_shows_its_best_item_only() -> None:
    episodes = [item("episodic", "bob: new job!", 0.88), item("episodic", "judy: a job", 0.875)]
    kept, dropped = relevance.keep(episodes, FLOOR)
    assert [i.text for i in kept] == ["bob: new job!"] and dropped == {"episodic": 1}
    kept, _ = relevance.keep(episodes, FLOOR, uncapped={"episodic"})
    assert len(kept) == 2  # asked what the bot said: its replies are the answer


def test_state_open_questions_and_unsearched_items() -> None:
    items = [
        item("state", "alice and bob are a duo", None),
        item("profile", "I live in Rome", None),  # no hit repeats it: answers nothing asked
        item("recall", "I'm a nurse", 0.80),
        item("profile", "I play bass", None, viewer="carol"),
        item("lore", "Mnemo fears magnets", None),  # a search that read no vectors
    ]
    kept, dropped = relevance.keep(items, FLOOR, open_viewers={"carol"})
    assert [i.text for i in kept] == [items[0].text, items[2].text, items[3].text, items[4].text]
    assert dropped == {"profile:alice": 1}


def test_a_viewer_who_asked_for_one_thing_gets_at_most_the_cap() -> None:
    capped = relevance.Floor(absolute=0.70, gap=1.0, stream_wide=1, per_viewer=2)
    items = [item("recall", f"fact {n}", 0.80 - n / 100) for n in range(4)]
    items.append(item("recall", "bob's cat", 0.79, viewer="bob"))
    items.append(item("state", "alice and bob are a duo", None))
    kept, dropped = relevance.keep(items, capped)
    assert [i.text for i in kept] == ["fact 0", "fact 1", "bob's cat", "alice and bob are a duo"]
    assert dropped == {"recall:alice": 2}
    # an open question about themself ("what do you remember about me?"): no cap
    kept, dropped = relevance.keep(items, capped, open_viewers={"alice"})
    assert len(kept) == len(items) and dropped == {}


def test_order_by_similarity_reorders_each_viewer_in_the_places_of_their_items() -> None:
    ordered = relevance.Floor(absolute=0.70, gap=1.0, stream_wide=1, order="similarity")
    items = [
        item("recall", "my biggest pet peeve is loud chewing", 0.78),  # the words matched
        item("episodic", "bob: my cat is asleep", 0.90),
        item("recall", "my dog Biscuit chews my slippers", 0.82),  # the meaning did
        item("profile", "I'm a nurse", 0.80),
        item("recall", "bob's cat", 0.75, viewer="bob"),
        item("state", "alice and bob are a duo", None),
    ]
    kept, _ = relevance.keep(items, ordered)
    assert [i.text for i in kept] == [
        "my dog Biscuit chews my slippers",
        "bob: my cat is asleep",
        "I'm a nurse",
        "my biggest pet peeve is loud chewing",
        "bob's cat",
        "alice and bob are a duo",
    ]
    # off: the search's fused order stands
    kept, _ = relevance.keep(items, relevance.Floor(absolute=0.70, gap=1.0, stream_wide=1))
    assert [i.text for i in kept] == [i.text for i in items]


def test_order_blend_fuses_the_search_order_and_the_similarity_order() -> None:
    items = [  # the search's order: a, b, c; by similarity: c, b, a
        item("recall", "a", 0.80),
        item("recall", "b", 0.81),
        item("recall", "c", 0.82),
    ]

    def blended(weight: float) -> list[str]:
        floor = relevance.Floor(
            absolute=0.70, gap=1.0, stream_wide=1, order="blend", dense_weight=weight
        )
        return [i.text for i in relevance.keep(items, floor)[0]]

    # equal weights: a and c tie at 1/2 + 1/4, the search's order breaks the tie
    assert blended(1.0) == ["a", "c", "b"]
    assert blended(3.0) == ["c", "b", "a"]  # the similarity dominates
    assert blended(0.0) == ["a", "b", "c"]


def test_no_floor_keeps_everything() -> None:
    items = [item("recall", "a", 0.1), item("profile", "b", None)]
    assert relevance.keep(items, None) == (items, {})
    assert relevance.floor_for("offline-hash-v1:384") is None
    assert relevance.floor_for("e5-small-q4-v1:384") == relevance.FLOORS["e5-small-q4-v1"]


def source(kind: str, **more: Any) -> models.PlannedSource:
    return models.PlannedSource(kind=kind, **{"viewer": "alice", "user_id": "1001", **more})


def test_assembly_gives_a_profile_fact_the_similarity_of_the_hit_it_repeats() -> None:
    outcomes = [
        context.SourceOutcome(
            source=source("profile", query="does she have any animals"),
            items=(
                item("profile", "my dog Biscuit chews my slippers", None),
                item("profile", "I work nights at the hospital", None),
            ),
        ),
        context.SourceOutcome(
            source=source("recall", query="does she have any animals"),
            items=(item("recall", "my dog Biscuit chews my slippers", 0.86),),
        ),
    ]
    assembled = context.assemble(outcomes, [], token_budget=800, floor=FLOOR)
    assert [(i.source, i.text, i.similarity) for i in assembled.items] == [
        ("profile", "my dog Biscuit chews my slippers", 0.86)
    ]
    assert assembled.dropped == {"profile:alice": 1}
    assert "I work nights" not in assembled.block


def test_an_open_question_keeps_the_whole_profile() -> None:
    facts = (item("profile", "I live in Rome", None), item("profile", "I play bass", None))
    outcomes = [
        context.SourceOutcome(
            source=source("profile", query="what do you remember about me", explicit=True,
                          broad=True),
            items=facts,
        )
    ]  # fmt: skip
    assembled = context.assemble(outcomes, [], token_budget=800, floor=FLOOR)
    assert [i.text for i in assembled.items] == ["I live in Rome", "I play bass"]
    assert assembled.dropped == {}


def test_a_profile_that_answers_the_asked_slot_is_all_of_that_viewer() -> None:
    items = [
        item("recall", "greetings from Toronto, where I live", 0.78),
        item("profile", "I'm a chef by day, gamer by night", 0.80),
        item("profile", "my hamster Pepper sleeps on my lap", 0.79),
        item("state", "lena and bob are a duo", None, viewer="lena"),
        item("recall", "bob: I live in Rome", 0.80, viewer="bob"),  # another viewer: untouched
        item("episodic", "bob1: how long has he been live?", 0.89),
        item("lore", "Mnemo lives in an archive", 0.84),
    ]
    asks = {"viewer:alice": frozenset({"location"}), "source:episodic": frozenset({"location"})}
    kept, dropped = relevance.keep(items, None, asks=asks)
    assert [i.text for i in kept] == [
        "lena and bob are a duo",  # channel state, then the answer
        "greetings from Toronto, where I live",
        "bob: I live in Rome",
        "Mnemo lives in an archive",  # its question asked for something else too
    ]
    assert dropped == {"profile:alice": 2, "episodic": 1}
    # with the floor, the answer is not also held to the gap to the viewer's best, nor dropped
    # for having no similarity (a profile fact that no search hit repeated)
    unmatched = [item("profile", "I live in Lyon", None), *items[1:]]
    kept, _ = relevance.keep(unmatched, FLOOR, asks=asks)
    assert [i.text for i in kept][:2] == ["lena and bob are a duo", "I live in Lyon"]
    assert "I'm a chef by day, gamer by night" not in [i.text for i in kept]


def test_an_everyday_slot_is_answered_by_the_statement_of_it() -> None:
    # e5 rates the statement sharing the question's word nearer than the answer: "does she
    # still smoke?"; the slot answer leads, the viewer's other items go
    items = [
        item("recall", "the kitchen filled with smoke when I tried your recipe", 0.84),
        item("recall", "I brew my own beer", 0.83),
        item("recall", "I quit cigarettes in March, 8 months clean", 0.82),
    ]
    asks = {"viewer:alice": asked.slots(context.normalize("@Mnemo does @alice still smoke?"))}
    kept, dropped = relevance.keep(items, FLOOR, asks=asks)
    assert [i.text for i in kept] == ["I quit cigarettes in March, 8 months clean"]
    assert dropped == {"recall:alice": 2}


def test_an_asked_slot_the_profile_does_not_hold_changes_nothing() -> None:
    items = [
        item("recall", "my dog Biscuit chews my slippers", 0.81),
        item("recall", "my biggest pet peeve is loud chewing", 0.80),
    ]
    asks = {"viewer:alice": frozenset({"job"})}
    assert relevance.keep(items, None, asks=asks) == (items, {})


def test_a_question_about_the_past_is_answered_by_the_superseded_statement_too() -> None:
    items = [
        item("recall", "I moved to Turin", 0.81),
        item("recall", "I'm a nurse", 0.80),
        item("recall", "I live in Rome", 0.79, superseded=True),  # recalled: asked about the past
    ]
    kept, dropped = relevance.keep(items, None, asks={"viewer:alice": frozenset({"location"})})
    assert [i.text for i in kept] == ["I moved to Turin", "I live in Rome"]
    assert dropped == {"recall:alice": 1}
    sources = [
        models.PlannedSource(kind="recall", viewer="alice", asks=frozenset({"location"})),
        models.PlannedSource(kind="recall", viewer="bob", asks=frozenset({"job"}), broad=True),
        models.PlannedSource(kind="lore", asks=frozenset({"job"})),
    ]
    assert relevance.asks_of(sources) == {
        "viewer:alice": frozenset({"location"}),
        "source:lore": frozenset({"job"}),
    }


def test_a_question_the_latest_statement_answers_gets_the_kept_statements_newest_first() -> None:
    said = {
        "I keep my sneakers under the bed": datetime(2023, 5, 25, tzinfo=UTC),
        "I clean sneakers with a soft brush": datetime(2023, 5, 20, tzinfo=UTC),
        "sneakers now go on the shoe rack in my closet": datetime(2023, 5, 29, tzinfo=UTC),
    }
    items = [
        item("recall", text, 0.86 - n / 100, said_at=when)
        for n, (text, when) in enumerate(said.items())
    ]
    items.insert(1, item("episodic", "bob: sneakers?", 0.88))
    # newer, but no telling of what was asked (it shares no word with the question): stays put
    items.insert(3, item("recall", "I brew my own beer", 0.855,
                         said_at=datetime(2023, 6, 1, tzinfo=UTC)))  # fmt: skip
    items.append(item("recall", "my sneakers are white", 0.85, viewer="bob",
                      said_at=datetime(2023, 1, 1, tzinfo=UTC)))  # fmt: skip
    items.append(item("recall", "new sneakers!", 0.84, viewer="bob",
                      said_at=datetime(2024, 1, 1, tzinfo=UTC)))  # fmt: skip
    latest = relevance.Floor(absolute=0.70, gap=1.0, stream_wide=1, latest_first=True)
    question = {"viewer:alice": "where do I currently keep my old sneakers?"}
    kept, dropped = relevance.keep(items, latest, latest=question)
    assert [i.text for i in kept] == [
        "sneakers now go on the shoe rack in my closet",  # alice's, newest first, in her places
        "bob: sneakers?",
        "I keep my sneakers under the bed",
        "I brew my own beer",
        "I clean sneakers with a soft brush",
        "my sneakers are white",  # bob was not asked about the present: his order stands
        "new sneakers!",
    ]
    assert dropped == {}
    # what is kept does not change, only its order; off (or no such question): the floor's order
    assert relevance.keep(items, latest)[0] == items
    off = relevance.Floor(absolute=0.70, gap=1.0, stream_wide=1)
    assert relevance.keep(items, off, latest=question)[0] == items


@pytest.mark.parametrize(
    ("question", "more", "latest"),
    [
        ("where do I currently keep my old sneakers?", {}, True),
        ("how many times have I met up with Alex?", {}, True),
        ("quante volte ho visto Alex finora?", {}, True),
        ("when did I move to Turin?", {}, False),  # answered by the telling at the time
        ("what did I buy last week?", {}, False),  # an event
        ("what do I like?", {}, False),  # no state
        ("how many cats do I have now?", {"past": True}, False),
        ("how many cats do I have now?", {"broad": True}, False),
    ],
)
def test_which_questions_the_latest_statement_answers(
    question: str, more: dict[str, Any], latest: bool
) -> None:
    sources = [source("recall", query=question, **more), source("state", query=question)]
    assert relevance.latest_of(sources) == ({"viewer:alice": question} if latest else {})


def test_assembly_puts_the_latest_statement_first_for_a_question_about_now() -> None:
    older = item("recall", "I keep my sneakers under the bed", 0.86,
                 said_at=datetime(2023, 5, 25, tzinfo=UTC))  # fmt: skip
    newer = item("recall", "sneakers now go on the shoe rack in my closet", 0.85,
                 said_at=datetime(2023, 5, 29, tzinfo=UTC))  # fmt: skip
    floor = relevance.FLOORS["e5-small-q4-v1"]

    def shown(question: str) -> list[str]:
        outcomes = [
            context.SourceOutcome(source=source("recall", query=question), items=(older, newer))
        ]
        assembled = context.assemble(outcomes, [], token_budget=800, floor=floor)
        return [i.text for i in assembled.items]

    assert shown("where do I currently keep my old sneakers?") == [newer.text, older.text]
    assert shown("where did I keep my old sneakers?") == [older.text, newer.text]


def test_a_question_the_latest_statement_answers_has_a_wider_gap() -> None:
    items = [
        item("recall", "I keep my sneakers under the bed", 0.86,
             said_at=datetime(2023, 5, 25, tzinfo=UTC)),
        item("recall", "compare these sandals? btw my sneakers go on the rack now", 0.80,
             said_at=datetime(2023, 5, 29, tzinfo=UTC)),
        item("recall", "my cat likes the rack", 0.77, said_at=datetime(2023, 5, 30, tzinfo=UTC)),
    ]  # fmt: skip
    floor = relevance.Floor(
        absolute=0.70, gap=0.04, stream_wide=1, latest_first=True, latest_gap=0.08
    )
    kept, dropped = relevance.keep(items, floor, latest={"viewer:alice": "sneakers now?"})
    assert [i.text for i in kept] == [items[1].text, items[0].text]  # newest first
    assert dropped == {"recall:alice": 1}  # 0.09 under the best: out even so
    kept, dropped = relevance.keep(items, floor)  # another question: the gap of 0.04
    assert [i.text for i in kept] == [items[0].text] and dropped == {"recall:alice": 2}


def test_a_question_about_another_viewer_keeps_only_moments_nearer_than_their_best() -> None:
    items = [
        item("recall", "I'm a nurse, night shifts mostly", 0.84, viewer="bob"),
        item("episodic", "bob: night shift again KEKW", 0.83),  # under bob's best: out
        item("episodic", "bob: I told carol I work at the hospital", 0.85),  # nearer: kept
        item("earlier", "carol: what does bob do?", 0.80),
    ]
    floor = relevance.Floor(absolute=0.70, gap=1.0, stream_wide=1, moment_margin=0.0)
    kept, dropped = relevance.keep(items, floor, about={"bob"})
    assert [i.text for i in kept] == [items[0].text, items[2].text]
    assert dropped == {"episodic": 1, "earlier": 1}
    # the viewer asked about themself (no one else is asked about): the cap alone, as before
    kept, _ = relevance.keep(items, floor)
    assert [i.text for i in kept] == [items[0].text, items[1].text, items[3].text]
    # asked what the bot said: its replies are the answer, whatever the viewer said
    kept, _ = relevance.keep(items, floor, about={"bob"}, uncapped={"episodic"})
    assert [i.text for i in kept] == [items[0].text, items[1].text, items[2].text, items[3].text]
    # nothing of the viewer asked about was found: no rule
    kept, _ = relevance.keep(items[1:], floor, about={"bob"})
    assert [i.text for i in kept] == [items[1].text, items[3].text]


def test_the_viewers_asked_about_are_those_who_did_not_write_the_batch() -> None:
    sources = [
        source("recall", viewer="alice", user_id="1", query="what does bob do"),
        source("profile", viewer="bob", user_id="2", query="what does do"),
        source("recall", viewer="bob", user_id="2", query="what does do"),
        source("episodic", viewer=None, user_id=None, query="what does bob do"),
    ]
    assert relevance.about_of(sources, {"1"}) == {"bob"}
    assert relevance.about_of(sources, {"1", "2"}) == set()


def test_assembly_leaves_out_a_moment_of_the_stream_no_nearer_than_the_viewer_asked_about() -> None:
    said = item("recall", "I'm a nurse", 0.86, viewer="bob")
    moment = item("episodic", "bob: hospital food again", 0.84)
    outcomes = [
        context.SourceOutcome(source=source("recall", viewer="bob", user_id="2"), items=(said,)),
        context.SourceOutcome(
            source=source("episodic", viewer=None, user_id=None), items=(moment,)
        ),
    ]
    floor = relevance.FLOORS["e5-small-q4-v1"]
    asked = context.assemble(outcomes, [], token_budget=800, floor=floor, authors={"1"})
    assert [i.text for i in asked.items] == [said.text]
    assert asked.dropped == {"episodic": 1}
    own = context.assemble(outcomes, [], token_budget=800, floor=floor, authors={"2"})
    assert [i.text for i in own.items] == [said.text, moment.text]
