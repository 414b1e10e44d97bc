"""The retrieval planner: table-driven, English and Italian, pure and deterministic."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory import models
from memory.recall import directory, planner
from tests import conftest

T0 = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)
USER_IDS = {"alice": "1001", "bob": "1002", "carol": "1003", "dave": "1004", "erin": "1005"}
USER_IDS["livememory"] = "9000"


def bot_settings(**memory: Any) -> conftest.IsolatedSettings:
    """The persona ``livememory``, whose own account has the user id 9000."""
    return conftest.IsolatedSettings(
        bot_name="livememory", twitch={"bot_id": "9000"}, memory=memory
    )


def make_planner(**memory: Any) -> planner.Planner:
    settings = bot_settings(**memory)
    return planner.Planner(
        settings, lore_entities=["Captain Nebula", "Castello Nero", "Livememory"]
    )


_counter = iter(range(1, 1_000_000))


def msg(
    login: str,
    text: str,
    *,
    kind: models.EventKind = models.EventKind.MESSAGE,
    event: str | None = None,
) -> models.ChatEvent:
    n = next(_counter)
    return models.ChatEvent(
        id=f"m{n}",
        stream="s1",
        user_id=USER_IDS.get(login, f"9{len(login)}{login}"),
        login=login,
        text=text,
        ts=T0 + timedelta(seconds=n),
        kind=kind,
        event=event,
    )


def batch(*events: models.ChatEvent) -> models.Batch:
    return models.Batch(stream="s1", events=events)


def said(login: str, text: str) -> models.HistoryItem:
    return models.HistoryItem.from_event(msg(login, text), turn_id="t0")


def bot_said(text: str) -> models.HistoryItem:
    return models.HistoryItem(role=models.Role.ASSISTANT, text=text, ts=T0)


def kinds(plan: models.Plan) -> list[str]:
    return [source.key for source in plan.sources]


# (text, signals of the author strongest first, planned source keys, explicit)
SINGLE_MESSAGE_CASES = [
    # explicit recall requests about oneself
    (
        "do you remember what my job is?",
        ("explicit_recall", "question"),
        ["profile:alice", "recall:alice"],
        True,
    ),
    (
        "what do you know about me?",
        ("explicit_recall", "question"),
        ["profile:alice", "recall:alice"],
        True,
    ),
    ("ti ricordi di me?", ("explicit_recall", "question"), ["profile:alice", "recall:alice"], True),
    ("cosa sai di me", ("explicit_recall", "question"), ["profile:alice", "recall:alice"], True),
    (
        "ti ricordi come si chiama il mio gatto?",
        ("explicit_recall", "question", "active"),
        ["profile:alice", "recall:alice"],
        True,
    ),
    # Italian drops the pronoun: the first-person verb says who is asking
    (
        "@livememory ti ricordi cosa faccio di lavoro?",
        ("explicit_recall", "bot_mention", "question", "active"),
        ["profile:alice", "recall:alice"],
        True,
    ),
    (
        "ti ricordi chi sono?",
        ("explicit_recall", "question"),
        ["profile:alice", "recall:alice"],
        True,
    ),
    # mentions of the bot and questions
    ("hey @livememory how are you?", ("bot_mention", "question"), ["profile:alice"], False),
    ("livememory come stai?", ("bot_mention", "question"), ["profile:alice"], False),
    (
        "@livememory which pizza should I order tonight",
        ("bot_mention", "question", "active"),
        ["profile:alice", "recall:alice"],
        False,
    ),
    ("qual è il gioco migliore?", ("question", "active"), ["profile:alice", "recall:alice"], False),
    # media / links
    (
        "look at this https://clips.twitch.tv/AmazingPlay",
        ("media", "active"),
        ["profile:alice", "recall:alice"],
        False,
    ),
    (
        "guarda questa foto del mio cane",
        ("media", "active"),
        ["profile:alice", "recall:alice"],
        False,
    ),
    # plain statements: active participation only
    ("I just adopted a cat named Miso", ("active",), ["profile:alice", "recall:alice"], False),
    ("lavoro come grafica a Torino", ("active",), ["profile:alice", "recall:alice"], False),
    # noise: no viewer, no source
    ("lol", (), [], False),
    ("ciao a tutti", (), [], False),
    ("KEKW KEKW", (), [], False),
]


@pytest.mark.parametrize(("text", "signals", "keys", "explicit"), SINGLE_MESSAGE_CASES)
def test_single_message(
    text: str, signals: tuple[str, ...], keys: list[str], explicit: bool
) -> None:
    plan = make_planner().plan(batch(msg("alice", text)), [])
    assert [v.signals for v in plan.viewers] == ([signals] if signals else [])
    assert [s.key for s in plan.sources if s.viewer] == keys
    assert all(s.explicit is explicit for s in plan.sources if s.viewer)
    for source in plan.sources:
        if source.viewer:
            assert source.user_id == "1001"


@pytest.mark.parametrize(
    ("text", "history", "episodic"),
    [
        ("what happened before with that game?", [], True),
        ("what happened before with that game?", [said("bob", "this game is so hard")], False),
        ("what happened before with those games?", [said("bob", "this game is so hard")], False),
        ("remember what you said at the start?", [], True),
        ("remember what you said at the start?", [bot_said("welcome everyone")], True),
        (
            "do you remember the boss fight earlier?",
            [said("bob", "the boss fight was epic")],
            False,
        ),
        ("do you remember the boss fight earlier?", [said("bob", "nice weather")], True),
        ("ti ricordi cosa hai detto all'inizio?", [], True),
        ("cosa è successo prima con quel gioco?", [], True),
        (
            "cosa è successo prima con quel gioco?",
            [said("bob", "questo gioco è bellissimo")],
            False,
        ),
        ("di cosa abbiamo parlato poco fa?", [], True),
        ("ti ricordi cosa faccio di lavoro?", [], False),  # about the speaker (Italian, no pronoun)
        # no reference to earlier in the stream
        ("I was a nurse before", [], False),
        ("prima volta qui, ciao", [], False),
        ("do you remember my name?", [], False),  # about the speaker: personal recall, not episodic
        ("what game is this?", [], False),
    ],
)
def test_episodic_only_for_uncovered_references(
    text: str, history: list[models.HistoryItem], episodic: bool
) -> None:
    plan = make_planner().plan(batch(msg("alice", text)), history)
    assert ("episodic" in kinds(plan)) is episodic
    for source in plan.sources:
        if source.kind == "episodic":
            assert source.viewer is None
            assert source.user_id is None


def test_episodic_query_is_the_key_terms() -> None:
    plan = make_planner().plan(batch(msg("alice", "what happened before with that game?")), [])
    [episodic] = [s for s in plan.sources if s.kind == "episodic"]
    assert episodic.query == "game"


@pytest.mark.parametrize(
    ("text", "lore"),
    [
        ("who made you?", True),
        ("who created you livememory", True),
        ("what's your story?", True),
        ("tell me about yourself", True),
        ("chi ti ha creato?", True),
        ("raccontami la tua storia", True),
        ("da dove vieni?", True),
        ("is Captain Nebula coming back?", True),
        ("siamo tornati al castello nero!", True),
        ("who made this game?", False),
        ("hello livememory, nice stream", False),  # the bot's own name is a mention, not lore
        ("my captain at work is nice", False),
        ("what is your favourite pizza", False),
    ],
)
def test_lore_only_on_lore_references(text: str, lore: bool) -> None:
    plan = make_planner().plan(batch(msg("alice", text)), [])
    assert ("lore" in kinds(plan)) is lore


@pytest.mark.parametrize(
    ("text", "state"),
    [
        ("are alice and bob siblings?", True),
        ("is dave her brother", True),
        ("alice e bob sono fratelli?", True),
        ("what's in the queue?", True),
        ("did you add my song request", True),
        ("la mia richiesta è in coda?", True),
        ("add a note about the raffle", True),
        ("ricordati questa nota", True),
        ("tell the inside joke again", True),
        ("il nostro tormentone!", True),
        ("I love my new job", False),
        ("che bella giornata", False),
    ],
)
def test_state_only_on_its_domains(text: str, state: bool) -> None:
    plan = make_planner().plan(batch(msg("alice", text)), [])
    assert ("state" in kinds(plan)) is state


def test_state_domains() -> None:
    assert planner.state_domains("are they siblings? check the queue") == {
        "relationships",
        "requests",
    }
    assert planner.state_domains("una nota sul tormentone") == {"notes", "jokes"}
    assert planner.state_domains("nothing here") == set()


def test_no_source_for_noise_only_batch() -> None:
    plan = make_planner().plan(
        batch(msg("alice", "lol"), msg("bob", "KEKW"), msg("carol", "hi")), []
    )
    assert plan == models.Plan()


def test_platform_events() -> None:
    plan = make_planner().plan(
        batch(
            msg("alice", "", kind=models.EventKind.EVENT, event="sub"),
            msg("bob", "", kind=models.EventKind.EVENT, event="follow"),
            msg("carol", "raiding with forty friends", kind=models.EventKind.EVENT, event="raid"),
        ),
        [],
    )
    assert [(v.login, v.signals) for v in plan.viewers] == [
        ("carol", ("platform_event", "active")),
        ("alice", ("platform_event",)),
    ]
    assert kinds(plan) == ["profile:carol", "recall:carol", "profile:alice"]


def test_strongest_first_and_max_viewers() -> None:
    events = [
        msg("erin", "I love painting landscapes"),  # active
        msg("dave", "look https://example.com/pic.png"),  # media
        msg("carol", "what should I cook tonight?"),  # question
        msg("bob", "hey @livememory"),  # bot mention
        msg("alice", "do you remember my cat?"),  # explicit recall
    ]
    plan = make_planner().plan(batch(*events), [])
    assert [v.login for v in plan.viewers] == ["alice", "bob", "carol"]
    assert [v.signals[0] for v in plan.viewers] == ["explicit_recall", "bot_mention", "question"]
    scores = [v.score for v in plan.viewers]
    assert scores == sorted(scores, reverse=True)
    plan5 = make_planner(max_viewers=5).plan(batch(*events), [])
    assert [v.login for v in plan5.viewers] == ["alice", "bob", "carol", "dave", "erin"]


def test_a_stronger_signal_beats_any_sum_of_weaker_ones() -> None:
    weaker = sorted(planner.WEIGHTS.values())
    for index, weight in enumerate(weaker):
        assert weight > sum(weaker[:index])


def test_ties_break_by_message_count_then_order() -> None:
    plan = make_planner().plan(
        batch(
            msg("bob", "pizza is great"),
            msg("alice", "pasta is better"),
            msg("alice", "carbonara forever"),
        ),
        [],
    )
    assert [v.login for v in plan.viewers] == ["alice", "bob"]
    [alice_recall] = [s for s in plan.sources if s.key == "recall:alice"]
    assert alice_recall.query == "pasta is better carbonara forever"


def test_question_about_another_viewer_never_uses_the_askers_words_as_theirs() -> None:
    """Carol asks where Alice lives; Bob once claimed "Alice lives in Rome"."""
    history = [said("bob", "Alice lives in Rome"), said("alice", "I work as a graphic designer")]
    plan = make_planner().plan(batch(msg("carol", "where does Alice live?")), history)
    by_key = {s.key: s for s in plan.sources}
    # a question about Alice only: the asker's own memories would crowd Alice's out
    assert set(by_key) == {"profile:alice", "recall:alice"}
    # Alice's own space is searched (only her statements are there), not with her name as a claim
    assert by_key["recall:alice"].user_id == "1001"
    assert "alice" not in by_key["recall:alice"].query.split()
    assert not by_key["recall:alice"].explicit
    # Bob, whose claim is about Alice, is not planned at all
    assert all(s.viewer != "bob" for s in plan.sources)
    [carol, alice] = plan.viewers
    assert carol.signals == ("question", "active")
    assert alice.signals == ("mentioned_by_viewer",)


@pytest.mark.parametrize(
    ("text", "about_asker"),
    [
        ("che lavoro fa @alice?", False),  # "lavoro": the noun (their job), not "I work"
        ("@alice dove abita?", False),
        ("@alice sai dove lavoro io?", True),  # "io": the asker speaks of themself
        ("@alice do you remember my cat?", True),
    ],
)
def test_an_italian_question_about_another_viewer_is_not_about_the_asker(
    text: str, about_asker: bool
) -> None:
    history = [said("alice", "faccio l'infermiera"), said("carol", "sono una grafica")]
    plan = make_planner().plan(batch(msg("carol", text)), history)
    keys = {s.key for s in plan.sources}
    assert "recall:alice" in keys
    assert ("recall:carol" in keys) is about_asker


def test_recall_request_about_another_viewer_is_explicit_for_them_only() -> None:
    history = [said("alice", "I live in Turin")]
    plan = make_planner().plan(batch(msg("bob", "what do you remember about @alice?")), history)
    by_key = {s.key: s for s in plan.sources}
    assert by_key["profile:alice"].explicit and by_key["recall:alice"].explicit
    assert "profile:bob" not in by_key and "recall:bob" not in by_key
    assert "explicit_recall" not in plan.viewers[0].signals


def test_mentions_resolve_only_known_viewers() -> None:
    plan = make_planner().plan(batch(msg("alice", "@stranger say hi to @bob")), [said("bob", "yo")])
    assert {v.login for v in plan.viewers} == {"alice", "bob"}
    [bob] = [v for v in plan.viewers if v.login == "bob"]
    assert bob.user_id == "1002"


def test_bot_messages_and_commands_are_ignored() -> None:
    plan = make_planner().plan(
        batch(
            msg("livememory", "do you remember me? who made you?"),
            msg("alice", "!forget everything", kind=models.EventKind.COMMAND),
        ),
        [],
    )
    assert plan == models.Plan()


def test_plan_is_deterministic_and_pure() -> None:
    history = [said("bob", "the boss fight was epic")]
    events = batch(
        msg("alice", "do you remember my cat? who made you?"),
        msg("bob", "@carol are you and dave siblings?"),
        msg("carol", "what happened before with that game?"),
    )
    before = list(history)
    first = make_planner().plan(events, history)
    second = make_planner().plan(events, list(history))
    assert first == second
    assert first.to_json() == second.to_json()
    assert kinds(first)[-3:] == ["episodic", "lore", "state"]
    assert history == before


# -- viewers known to the channel (the directory) -----------------------------------------------


def make_directory(*viewers: tuple[str, str, str | None]) -> directory.ViewerDirectory:
    known = directory.ViewerDirectory()
    for user_id, login, name in viewers:
        known.register(user_id, login, name)
    return known


CHANNEL = make_directory(
    ("2001", "bob", "Bob"),
    ("2002", "caroline_k", "Caroline"),
    ("2003", "the", "The"),
    ("2004", "game", "Game"),
    ("2005", "al", "Al"),
    ("2006", "zoe", "Zoë"),
    ("2007", "livememory", "LiveMemory"),
)


def directory_planner(**memory: Any) -> planner.Planner:
    settings = bot_settings(**memory)
    return planner.Planner(settings, lore_entities=["Captain Nebula"], directory=CHANNEL)


# (message of alice, viewer of the directory planned for it or None)
NAMED_VIEWER_CASES = [
    ("@livememory where does @bob live?", "bob"),
    ("@livememory where does bob live?", "bob"),  # bare login, 3 letters
    ("where does BOB live", "bob"),  # case-insensitive
    ("@livememory what did Caroline research?", "caroline_k"),  # display name
    ("what did caroline research", "caroline_k"),
    ("what does @caroline_k do for work?", "caroline_k"),  # login
    ("is zoe coming tonight?", "zoe"),
    ("did Zoë finish the painting?", "zoe"),  # accents folded
    # common words that are logins: only as @login
    ("what is the best game ever?", None),
    ("@livememory what does @game play?", "game"),
    ("@the where are you from?", "the"),
    ("al lavoro oggi", None),  # bare names need 3 letters
    ("@al where do you live?", "al"),
    # the bot is no viewer to plan
    ("livememory what do you think?", None),
    ("bobby is here", None),  # word-bounded
]


@pytest.mark.parametrize(("text", "named"), NAMED_VIEWER_CASES)
def test_viewer_named_but_absent_is_planned_from_the_directory(
    text: str, named: str | None
) -> None:
    plan = directory_planner().plan(batch(msg("alice", text)), [])
    others = [v for v in plan.viewers if v.login != "alice"]
    assert [v.login for v in others] == ([named] if named else [])
    if named is None:
        return
    [viewer] = others
    assert viewer.user_id == CHANNEL.lookup(named)[1]  # type: ignore[index]
    assert viewer.signals == ("mentioned_by_viewer",)
    own = [s for s in plan.sources if s.viewer == named]
    assert [s.kind for s in own] == ["profile", "recall"] or [s.kind for s in own] == ["profile"]
    for source in own:  # their own space, searched with the question minus every name
        assert source.user_id == viewer.user_id
        assert not source.explicit
        words = source.query.split()
        assert named not in words and "caroline" not in words and "livememory" not in words


def test_the_askers_own_memories_stay_when_the_question_is_also_about_them() -> None:
    history = [said("alice", "I live in Turin"), said("bob", "I live in Milan")]
    plan = make_planner().plan(batch(msg("bob", "does @alice live near me?")), history)
    assert {"recall:alice", "recall:bob"} <= {s.key for s in plan.sources}
    plan = make_planner().plan(
        batch(msg("bob", "where does @alice live?"), msg("bob", "I moved to Milan")),
        history,
    )
    assert {"recall:alice", "recall:bob"} <= {s.key for s in plan.sources}


def test_a_question_to_the_bot_consults_the_stream_and_one_about_it_the_lore() -> None:
    plan = make_planner().plan(batch(msg("alice", "@livememory what did carol cook?")), [])
    [episodic] = [s for s in plan.sources if s.kind == "episodic"]
    assert episodic.query == "carol cook"
    plan = make_planner().plan(batch(msg("alice", "@livememory what do you run on?")), [])
    assert "lore" in kinds(plan)
    assert "episodic" in kinds(plan)
    plan = make_planner().plan(batch(msg("alice", "@livememory do you remember my cat?")), [])
    assert "lore" not in kinds(plan)  # about the asker: their own memories
    plan = make_planner().plan(batch(msg("alice", "what did carol cook?")), [])
    assert "episodic" not in kinds(plan)  # not put to the bot


def test_named_viewers_own_space_is_searched_with_the_question_not_as_their_statement() -> None:
    plan = directory_planner().plan(
        batch(msg("carol", "@livememory what did Caroline research last summer?")), []
    )
    by_key = {s.key: s for s in plan.sources}
    assert by_key["recall:caroline_k"].user_id == "2002"
    assert by_key["recall:caroline_k"].query == "what did research last summer"
    assert "recall:carol" not in by_key  # a question about Caroline, not about the asker


# (message of alice naming bob and Caroline, the viewers whose spaces are searched)
TWO_VIEWER_CASES = [
    ("@livememory what did bob say to Caroline about the party?", ["bob"]),
    ("what does bob think of Caroline's new job?", ["bob"]),
    ("what book did Caroline recommend to @bob?", ["caroline_k"]),
    ("cosa ha detto bob a Caroline della festa?", ["bob"]),
    ("cosa pensa Caroline del lavoro di bob?", ["caroline_k"]),
    ("what do bob and Caroline both like?", ["bob", "caroline_k"]),  # both the subject
    ("according to bob, what makes Caroline happy?", ["bob", "caroline_k"]),
    ("what do you know about bob and Caroline?", ["bob", "caroline_k"]),  # no subject: both
    ("what does bob's sister think of Caroline's cat?", ["bob", "caroline_k"]),
    ("where do bob and Caroline live", ["bob", "caroline_k"]),
]


@pytest.mark.parametrize(("text", "searched"), TWO_VIEWER_CASES)
def test_of_two_named_viewers_the_object_of_the_question_is_not_searched(
    text: str, searched: list[str]
) -> None:
    """What bob said to Caroline is in bob's space: Caroline's holds what she said (LoCoMo,
    docs/evaluation.md, "Where its recall is lost")."""
    plan = directory_planner().plan(batch(msg("alice", text)), [])
    assert sorted(s.viewer or "" for s in plan.sources if s.kind == "recall") == searched
    assert all(v in {"alice", *searched} for v in (p.login for p in plan.viewers))


def test_a_statement_keeps_the_viewer_it_names_as_an_object() -> None:
    """Alice's space may hold the puppy the statement is about; prefetch opens every named space."""
    plans = directory_planner()
    statement = msg("carol", "I told bob about Caroline's new puppy")
    plan = plans.plan(batch(statement), [])
    assert {"bob", "caroline_k"} <= {v.login for v in plan.viewers}
    question = msg("carol", "what did bob say to Caroline about the puppy?")
    assert plans.viewers_of(question) == ["1003", "2001", "2002"]


def test_recall_request_about_a_directory_viewer_is_explicit_for_them() -> None:
    plan = directory_planner().plan(batch(msg("alice", "what do you remember about @bob?")), [])
    by_key = {s.key: s for s in plan.sources}
    assert by_key["profile:bob"].explicit and by_key["recall:bob"].explicit
    assert "profile:alice" not in by_key


def test_batch_and_history_win_over_the_directory() -> None:
    """A name the stream knows resolves to that viewer, not to an older namesake of the channel."""
    history = [said("bob", "I live in Turin")]  # bob 1002 here, 2001 in the directory
    plan = directory_planner().plan(batch(msg("alice", "where does bob live?")), history)
    assert {v.login: v.user_id for v in plan.viewers}["bob"] == "1002"


def test_without_a_directory_only_the_stream_knows_names() -> None:
    plan = make_planner().plan(batch(msg("alice", "@livememory where does @bob live?")), [])
    assert [v.login for v in plan.viewers] == ["alice"]


def test_directory_lookup_login_display_name_and_renames() -> None:
    known = make_directory(("1", "old_login", "Ann"), ("2", "bob", None))
    assert known.lookup("@OLD_LOGIN") == ("old_login", "1")
    assert known.lookup("ann") == ("old_login", "1")
    known.register("1", "new_login")  # rename: the display name is kept, the old login is gone
    assert known.lookup("old_login") is None
    assert known.lookup("Ann") == ("new_login", "1")
    known.register("3", "ann", "Annie")  # a login beats a display name
    assert known.lookup("ann") == ("ann", "3")
    assert known.lookup("nobody") is None
    assert len(known) == 3


def test_plan_with_a_directory_is_deterministic() -> None:
    events = batch(msg("alice", "@livememory where do Bob and Caroline live? are you scared?"))
    first = directory_planner().plan(events, [])
    assert first == directory_planner().plan(events, [])
    assert [v.login for v in first.viewers] == ["alice", "bob", "caroline_k"]


# -- lore for the bot's feelings and tastes -------------------------------------------------------


@pytest.mark.parametrize(
    ("events", "lore"),
    [
        (["@livememory are you scared of anything?"], True),
        (["livememory do you like pineapple pizza?"], True),
        (["@livememory what's your favourite game?"], True),
        (["@livememory what is your fav song"], True),
        (["livememory hai paura del buio?"], True),
        (["@livememory ti piace la pizza?"], True),
        (["@livememory qual è il tuo gioco preferito?"], True),
        (["@livememory come ti senti oggi?"], True),
        # the batch mentions the bot; the question is a separate message
        (["hey @livememory", "are you scared of spiders?"], True),
        # not addressed to the bot: maybe to the streamer or another viewer
        (["are you scared of anything?"], False),
        (["do you like this song?"], False),
        (["what is your favourite pizza"], False),
        # explicit recall stays recall
        (["@livememory what do you remember about me?"], False),
        (["@livememory do you remember my favourite game?"], False),
    ],
)
def test_lore_for_questions_about_the_bots_feelings_and_tastes(
    events: list[str], lore: bool
) -> None:
    logins = ["alice", "bob", "carol"]
    plan = make_planner().plan(batch(*(msg(logins[i], t) for i, t in enumerate(events))), [])
    assert ("lore" in kinds(plan)) is lore


def test_explicit_recall_about_me_is_not_lore() -> None:
    plan = make_planner().plan(
        batch(msg("alice", "@livememory what do you remember about me?")), []
    )
    assert kinds(plan) == ["profile:alice", "recall:alice"]
    assert all(s.explicit for s in plan.sources)


# -- ablation switches ----------------------------------------------------------------------------

ABLATION_BATCH = (
    ("erin", "lol"),
    ("alice", "do you remember my cat? what happened before with that game?"),
    ("dave", "I love painting landscapes"),
    ("bob", "hey @livememory"),
    ("carol", "what should I cook tonight?"),
)


def ablation_plan(**memory: Any) -> models.Plan:
    return make_planner(**memory).plan(batch(*(msg(u, t) for u, t in ABLATION_BATCH)), [])


@pytest.mark.parametrize(
    ("memory", "keys"),
    [
        (
            {},
            [
                *("profile:alice", "recall:alice", "profile:bob", "profile:carol", "recall:carol"),
                "episodic",
            ],
        ),
        ({"use_profile": False}, ["recall:alice", "recall:carol", "episodic"]),
        (
            {"use_episodic": False},
            ["profile:alice", "recall:alice", "profile:bob", "profile:carol", "recall:carol"],
        ),
        (
            {"rank_viewers": False},
            [f"{kind}:{login}" for login, _ in ABLATION_BATCH for kind in ("profile", "recall")]
            + ["episodic"],
        ),
        (
            {"rank_viewers": False, "use_profile": False, "use_episodic": False},
            [f"recall:{login}" for login, _ in ABLATION_BATCH],
        ),
    ],
)
def test_ablation_switches(memory: dict[str, Any], keys: list[str]) -> None:
    plan = ablation_plan(**memory)
    assert kinds(plan) == keys
    if memory.get("rank_viewers") is False:  # every viewer, batch order, no cap
        assert [v.login for v in plan.viewers] == [login for login, _ in ABLATION_BATCH]
    else:
        assert [v.login for v in plan.viewers] == ["alice", "bob", "carol"]


def test_viewers_of_a_message_are_its_author_and_the_viewers_it_names() -> None:
    """What the bot opens while the batch is open (``memory.recall.prefetch``)."""
    plans = directory_planner()
    event = msg("alice", "@livememory does @bob know Caroline? ask @nobody")
    assert plans.viewers_of(event) == ["1001", "2001", "2002"]  # the bot itself is no viewer
    assert plans.viewers_of(msg("livememory", "hi @bob")) == []  # the bot's own line
    assert plans.viewers_of(msg("alice", "!forget last", kind=models.EventKind.COMMAND)) == []


def test_of_namesakes_only_the_one_who_chatted_in_this_stream_is_taken() -> None:
    known = make_directory(("3001", "john_a", "John"), ("3002", "john_b", "John"))
    plans = planner.Planner(bot_settings(), directory=known)
    question = batch(msg("alice", "@livememory what does John do for work?"))
    assert "3001" not in {v.user_id for v in plans.plan(question, []).viewers}  # no guess
    known.register("3002", "john_b", "John", stream="s0")  # chatted in another stream
    assert {"3001", "3002"}.isdisjoint(v.user_id for v in plans.plan(question, []).viewers)
    known.register("3001", "john_a", "John", stream="s1")  # chatted in this one (batch stream s1)
    assert "3001" in {v.user_id for v in plans.plan(question, []).viewers}
    known.register("3002", "john_b", "John", stream="s1")  # now both did: no guess again
    assert {"3001", "3002"}.isdisjoint(v.user_id for v in plans.plan(question, []).viewers)


@pytest.mark.parametrize(
    ("text", "broad"),
    [
        ("@Livememory what do you remember about me?", True),
        ("Livememory cosa sai di me?", True),
        ("@Livememory do you remember my hobby?", False),
        ("ti ricordi dove abito?", False),
        ("I have a cat", False),  # not a recall request at all
    ],
)
def test_an_open_question_about_oneself_is_broad(text: str, broad: bool) -> None:
    plan = make_planner().plan(batch(msg("alice", text)), [])
    assert [s.broad for s in plan.sources if s.viewer == "alice"] == (
        [broad] * len([s for s in plan.sources if s.viewer == "alice"])
    )


# -- the asker's own memories, and the slots a question asks for ----------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "@livememory what did chat say at the start about the lava pit?",
        "@livememory remember the boss fight earlier in the stream? what happened?",
        "@livememory ti ricordi cosa è successo all'inizio con il boss?",
        "@livememory where do you come from? what's your story?",
        "@livememory da dove vieni?",
    ],
)
def test_a_question_to_the_bot_about_the_stream_or_itself_leaves_the_askers_memories(
    text: str,
) -> None:
    plan = make_planner().plan(batch(msg("alice", text)), [])
    assert not [s for s in plan.sources if s.viewer == "alice"]
    assert {"episodic", "lore"} & set(kinds(plan))


def test_a_question_to_the_bot_about_the_askers_own_past_keeps_them() -> None:
    plan = make_planner().plan(
        batch(msg("alice", "@livememory do you remember what I said earlier about my cat?")), []
    )
    assert "recall:alice" in kinds(plan)


def test_the_slots_a_question_asks_for_go_with_its_sources() -> None:
    history = [said("alice", "hi all")]
    plan = make_planner().plan(batch(msg("carol", "@livememory where does @alice live?")), history)
    by_key = {s.key: s for s in plan.sources}
    assert by_key["recall:alice"].asks == by_key["profile:alice"].asks == {"location"}
    assert all(s.asks == {"location"} for s in plan.sources if s.viewer is None)
    # a batch that also talks of something else: the stream-wide search asks for more than it
    plan = make_planner().plan(
        batch(
            msg("carol", "@livememory where does @alice live?"),
            msg("bob", "@livememory what happened earlier with the boss fight?"),
        ),
        history,
    )
    assert [s.asks for s in plan.sources if s.kind == "episodic"] == [frozenset()]
    # a statement asks for nothing
    plan = make_planner().plan(batch(msg("alice", "greetings from Dublin, where I live")), [])
    assert plan.sources and all(not s.asks for s in plan.sources)
