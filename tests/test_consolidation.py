from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from memory import errors, identity, models, sql
from memory.adapters import ollama as ollama_adapter
from memory.consolidate import barrier, consolidation, documents, jobs
from memory.consolidate import profile as profile_module
from memory.history import transcript
from memory.ops import erasure, operations
from memory.spaces import records
from tests.fakes import spaces as fake_spaces

if TYPE_CHECKING:
    from collections.abc import Sequence

    from memory.adapters import postgres
    from tests.conftest import SettingsFactory
    from tests.fakes.ollama import FakeOllama

T0 = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)
VIEWERS = {"alice": "1001", "bob": "1002", "carla": "1003", "nightbot": "9001", "mnemo": "9000"}


def msg(
    mid: str,
    login: str,
    text: str,
    *,
    second: int = 0,
    stream: str = "s1",
    kind: models.EventKind = models.EventKind.MESSAGE,
    event: str | None = None,
    reply_to: str | None = None,
    at: datetime | None = None,
) -> models.ChatEvent:
    """A chat message at ``second`` after ``T0``, or at the time ``at``."""
    return models.ChatEvent(
        id=mid,
        stream=stream,
        user_id=VIEWERS[login],
        login=login,
        text=text,
        ts=at or T0 + timedelta(seconds=second),
        kind=kind,
        event=event,
        reply_to=reply_to,
    )


async def journal_turn(
    db: postgres.Database,
    events: Sequence[models.ChatEvent],
    *,
    reply: str | None = "ok!",
) -> str:
    """Store the events and a finished turn answering them; returns the turn id."""
    store = transcript.Transcript(db)
    await store.append_events(events)
    stream = events[0].stream
    turn_id = await store.start_turn(stream, [e.id for e in events])
    await store.finish_turn(
        turn_id,
        stream=stream,
        status=models.TurnStatus.COMPLETED,
        reply=reply,
        error=None,
        ts=events[-1].ts + timedelta(seconds=1),
        report={},
        consolidate=True,
    )
    return turn_id


def job_for(turn_id: str, payload: Any = None) -> jobs.Job:
    now = datetime.now(UTC)
    return jobs.Job(
        id=1,
        queue="consolidation",
        kind=consolidation.JOB_KIND,
        dedupe_key=turn_id,
        payload={"turn_id": turn_id, "stream": "s1"} if payload is None else payload,
        status=jobs.JobStatus.DOING,
        attempts=1,
        max_attempts=5,
        scheduled_at=now,
        worker_id=None,
        started_at=now,
        finished_at=None,
        last_error=None,
        created_at=now,
    )


@pytest.fixture
def settings(make_settings: SettingsFactory) -> Any:
    return make_settings(bot_name="mnemo", twitch={"bot_id": VIEWERS["mnemo"]})


@pytest.fixture
def spaces() -> fake_spaces.InMemorySpaces:
    return fake_spaces.InMemorySpaces()


@pytest.fixture
def consolidator(
    db: postgres.Database, spaces: fake_spaces.InMemorySpaces, settings: Any
) -> consolidation.Consolidator:
    return consolidation.Consolidator(db, spaces, settings)


async def test_each_viewer_space_holds_only_that_viewers_own_statement(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    consolidator: consolidation.Consolidator,
) -> None:
    turn_id = await journal_turn(
        db,
        [
            msg("m1", "bob", "Alice lives in Rome"),
            msg("m2", "alice", "I work as a graphic designer", second=1),
        ],
        reply="@alice graphic design, nice!",
    )
    result = await consolidator.consolidate(turn_id)

    alice = await spaces.list(identity.personal_key("1001"))
    assert [(r.text, r.origin_message_ids, r.user_id) for r in alice] == [
        ("I work as a graphic designer", ("m2",), "1001")
    ]
    assert alice[0].turn_id == turn_id and alice[0].stream == "s1"
    assert alice[0].first_ts == T0 + timedelta(seconds=1)
    assert await spaces.count(identity.personal_key("1002")) == 0
    assert result.personal == 1 and result.episodic == 1
    assert result.dropped == {"m1": "not_self_statement"}
    assert result.viewers == ("1001",)


async def test_an_answer_is_indexed_and_embedded_with_the_question_it_answers(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    consolidator: consolidation.Consolidator,
) -> None:
    question = "@alice where did you move from?"
    asked = await journal_turn(db, [msg("m1", "bob", question)])
    answered = await journal_turn(db, [msg("m2", "alice", "Sweden, four years ago!", second=5)])
    chatter = await journal_turn(
        db,
        [
            msg("m3", "bob", "this boss is hard", second=9),
            msg("m4", "alice", "I love pizza", second=10),
        ],
    )
    for turn_id in (asked, answered, chatter):
        await consolidator.consolidate(turn_id)

    memories = {r.text: r for r in await spaces.list(identity.personal_key("1001"))}
    sweden, pizza = memories["Sweden, four years ago!"], memories["I love pizza"]
    assert sweden.context_message_id == "m1"
    assert sweden.context_terms == spaces.sparse.context_terms(question) != ()
    assert sweden.context_question == "where did you move from?"  # its vector is made with it
    assert pizza.context_terms == () and pizza.context_message_id is None  # not a question
    assert pizza.context_question is None
    hits = await spaces.search(identity.personal_key("1001"), "where did alice move from")
    assert hits[0].record.id == sweden.id

    # forgetting the one who asked takes their terms out of alice's memory too
    erased = await erasure.Eraser(db, spaces).erase_viewer("1002", actor="test")
    assert erased.contexts_dropped == 1
    [after] = await spaces.get(identity.personal_key("1001"), [sweden.id])
    assert after.text == sweden.text
    assert after.context_terms == () and after.context_message_id is None
    assert after.context_question is None


PICNIC = "last weekend I had a picnic with some friends from church"


def picnic_thread() -> list[models.ChatEvent]:
    """Alice's picnic, bob's question about it, alice's reply (the thread it continues)."""
    return [
        msg("m1", "alice", PICNIC),
        msg("m2", "bob", "nice! what games did you all play?", second=3),
        msg("m3", "alice", "charades and a scavenger hunt", second=6),
    ]


@pytest.mark.parametrize("one_turn", [False, True], ids=["turn by turn", "one turn"])
async def test_a_reply_is_embedded_with_its_author_s_message_before_the_question(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    consolidator: consolidation.Consolidator,
    one_turn: bool,
) -> None:
    chat = [
        *picnic_thread(),
        msg("m4", "carla", "what a stream", second=8),
        msg("m5", "bob", "carla, do you like charades?", second=9),
        msg("m6", "alice", "I always lose at charades", second=11),  # carla's words before
    ]
    turns = [await journal_turn(db, chat)] if one_turn else [
        await journal_turn(db, [event]) for event in chat
    ]  # fmt: skip
    for turn_id in turns:
        await consolidator.consolidate(turn_id)

    space = identity.personal_key("1001")
    memories = {r.text: r for r in await spaces.list(space)}
    games, picnic = memories["charades and a scavenger hunt"], memories[PICNIC]
    assert (games.context_thread, games.context_thread_id) == (PICNIC, "m1")
    assert games.dense_text == f"what games did you all play? {games.text} {PICNIC}"
    assert picnic.context_thread is None  # answers nobody
    lose = memories["I always lose at charades"]  # the message before the question is carla's
    assert lose.context_question == "carla, do you like charades?"
    assert lose.context_thread is None

    # forgetting the picnic takes its words out of the reply's vector too
    await operations.Operations(db, spaces).forget_memory(picnic.id, actor="test")
    [after] = await spaces.get(space, [games.id])
    assert (after.context_thread, after.context_thread_id) == (None, None)
    assert after.dense_text == f"what games did you all play? {games.text}"


async def test_forgetting_a_turn_takes_its_messages_out_of_the_replies_that_continue_them(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    consolidator: consolidation.Consolidator,
) -> None:
    said = await journal_turn(db, [msg("m1", "alice", PICNIC)])
    rest = await journal_turn(
        db,
        [
            msg("m2", "bob", "what games did you all play?", second=3),
            msg("m3", "alice", "charades and a scavenger hunt", second=6),
        ],
    )
    for turn_id in (said, rest):
        await consolidator.consolidate(turn_id)
    await operations.Operations(db, spaces).forget_turn(said, actor="test")

    [games] = await spaces.list(identity.personal_key("1001"))
    assert games.text == "charades and a scavenger hunt"
    assert games.context_question == "what games did you all play?"
    assert (games.context_thread, games.context_thread_id) == (None, None)


async def forget_the_picnic(ops: operations.Operations, how: str, said: str, space: str) -> None:
    """Forget, or correct, the memory of ``PICNIC`` (said in turn ``said``) the way ``how`` names."""
    [picnic] = [r for r in await ops.spaces.list(space) if r.text == PICNIC]
    if how == "memory":
        await ops.forget_memory(picnic.id, actor="test")
    elif how == "turn":
        await ops.forget_turn(said, actor="test")
    else:
        await ops.correct(picnic.id, "last weekend I stayed home", actor="test")


@pytest.mark.parametrize("how", ["memory", "turn", "correct"])
async def test_a_reply_consolidated_after_a_forget_is_not_embedded_with_the_forgotten_words(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    consolidator: consolidation.Consolidator,
    how: str,
) -> None:
    """The transcript keeps a forgotten memory's message; a reply consolidated later (a job that
    waited in the queue, a replay) reads it there as the thread it continues, and must not."""
    picnic, *rest_of_it = picnic_thread()
    said = await journal_turn(db, [picnic])
    await consolidator.consolidate(said)
    ops = operations.Operations(db, spaces)
    space = identity.personal_key("1001")
    await forget_the_picnic(ops, how, said, space)

    rest = await journal_turn(db, rest_of_it)
    await consolidator.consolidate(rest)
    [games] = [r for r in await spaces.list(space) if r.text == "charades and a scavenger hunt"]
    assert games.context_question == "what games did you all play?"
    assert (games.context_thread, games.context_thread_id) == (None, None)
    assert PICNIC not in games.dense_text


@pytest.mark.parametrize("how", ["memory", "correct"])
async def test_a_turn_consolidated_again_does_not_bring_a_forgotten_thread_back(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    consolidator: consolidation.Consolidator,
    how: str,
) -> None:
    """One turn holds the message and the reply: a retried job reads both again."""
    turn_id = await journal_turn(db, picnic_thread())
    await consolidator.consolidate(turn_id)
    space = identity.personal_key("1001")
    ops = operations.Operations(db, spaces)
    await forget_the_picnic(ops, how, turn_id, space)
    [games] = [r for r in await spaces.list(space) if r.text == "charades and a scavenger hunt"]
    assert games.context_thread is None  # the forget or the correction re-embedded it

    await consolidator.consolidate(turn_id)
    texts = {r.text: r for r in await spaces.list(space)}
    assert PICNIC not in texts
    assert texts["charades and a scavenger hunt"].context_thread is None


async def test_a_forgotten_viewer_s_question_indexes_no_later_reply(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    consolidator: consolidation.Consolidator,
) -> None:
    """Bob, who asked, is forgotten before alice's reply is consolidated: his question is not
    the reply's context; what he asks after the forget is."""
    asked = await journal_turn(db, [msg("m1", "bob", "where do you live, alice?")])
    await consolidator.consolidate(asked)
    await operations.Operations(db, spaces).forget_viewer("1002", actor="test")
    answer = await journal_turn(db, [msg("m2", "alice", "I live in Lyon", second=3)])
    await consolidator.consolidate(answer)
    [lyon] = await spaces.list(identity.personal_key("1001"))
    assert lyon.context_question is None

    later = datetime.now(UTC) + timedelta(minutes=1)
    again = await journal_turn(
        db,
        [
            msg("m3", "bob", "and what do you do, alice?", at=later),
            msg("m4", "alice", "I'm a nurse", at=later + timedelta(seconds=2)),
        ],
    )
    await consolidator.consolidate(again)
    nurse = {r.text: r for r in await spaces.list(identity.personal_key("1001"))}["I'm a nurse"]
    assert nurse.context_question == "and what do you do, alice?"


async def delivered(db: postgres.Database, turn_id: str, twitch_message_id: str) -> None:
    """Record the turn's reply as sent to chat, now (Postgres' clock)."""
    await db.pool.execute(
        sql.queries["twitch_delivery_record"], turn_id, 0, "s1", twitch_message_id, "sent", 1, None
    )


def after(seconds: int) -> datetime:
    """A chat time ``seconds`` from now: a message received after what was delivered before."""
    return datetime.now(UTC) + timedelta(seconds=seconds)


#: the bot's question to alice, delivered as tw-1 (``bot_asked_alice_and_bob``)
WELCOME = "@alice welcome! what do you do for work?"


def assert_answers_welcome(
    memory: records.MemoryRecord, spaces: fake_spaces.InMemorySpaces
) -> None:
    """``memory`` is read as the answer to the bot's ``WELCOME`` question (message tw-1)."""
    assert memory.context_question == "what do you do for work?"
    assert memory.context_message_id == "tw-1"
    assert memory.context_terms == spaces.sparse.context_terms(WELCOME) != ()


async def bot_asked_alice_and_bob(db: postgres.Database) -> str:
    """Alice and bob said hi; the bot asked alice what she does (``WELCOME``, delivered as tw-1),
    then bob where he is from (tw-2). Returns the turn it asked alice in."""
    asked = await journal_turn(
        db, [msg("m1", "alice", "@mnemo hi, first time here")], reply=WELCOME
    )
    to_bob = await journal_turn(
        db, [msg("m2", "bob", "@mnemo same")], reply="@bob welcome too! where are you from?"
    )
    await delivered(db, asked, "tw-1")
    await delivered(db, to_bob, "tw-2")
    return asked


async def test_a_reply_in_the_thread_of_the_bot_s_question_answers_it(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    consolidator: consolidation.Consolidator,
) -> None:
    """The bot asked alice something; her answer in the reply thread under the bot's message
    ("@mnemo a nurse, six years now") says nothing first-person, yet it is her answer: kept, and
    indexed and embedded with the bot's question."""
    await bot_asked_alice_and_bob(db)
    answer = "@mnemo a nurse, six years now"
    turns = [
        await journal_turn(db, [msg("m3", "alice", answer, at=after(5), reply_to="tw-1")]),
        # the same words again outside the thread: not her first message since the question
        await journal_turn(db, [msg("m4", "alice", answer, at=after(9))]),
        # in the thread of the bot's question to bob: not put to her
        await journal_turn(
            db, [msg("m5", "alice", "@mnemo Lyon, since May", at=after(12), reply_to="tw-2")]
        ),
    ]
    results = [await consolidator.consolidate(turn_id) for turn_id in turns]

    [memory] = await spaces.list(identity.personal_key("1001"))
    assert memory.text == answer and memory.origin_message_ids == ("m3",)
    assert_answers_welcome(memory, spaces)
    assert results[1].dropped == {"m4": "not_self_statement"}
    assert results[2].dropped == {"m5": "not_self_statement"}
    assert memory.dense_text == f"what do you do for work? {answer}"  # what its vector is of


async def test_a_viewer_s_first_message_after_the_bot_s_question_to_them_answers_it(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    consolidator: consolidation.Consolidator,
) -> None:
    """Most answers are not in a reply thread: alice's first message after the bot asked her,
    with bob's chat between, answers the bot; a second message of hers does not, nor does a
    message of carla's after the bot's question to bob, nor alice's words in a reply to bob."""
    await bot_asked_alice_and_bob(db)
    answer = "@Mnemo a nurse, six years now"
    first = await journal_turn(
        db, [msg("m3", "bob", "lol nice", at=after(1)), msg("m4", "alice", answer, at=after(2))]
    )
    later = await journal_turn(
        db,
        [
            msg("m5", "alice", "@mnemo Lyon, since May", at=after(3)),
            msg("m6", "carla", "@mnemo Lyon, since May", at=after(4)),
        ],
    )
    results = [await consolidator.consolidate(turn_id) for turn_id in (first, later)]

    [memory] = await spaces.list(identity.personal_key("1001"))
    assert memory.text == answer and memory.origin_message_ids == ("m4",)
    assert_answers_welcome(memory, spaces)
    assert results[0].dropped == {"m3": "short_reaction"}
    assert results[1].dropped == {"m5": "not_self_statement", "m6": "not_self_statement"}
    assert await spaces.list(identity.personal_key("1003")) == []


async def test_the_bot_s_question_in_a_forgotten_turn_is_no_context(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    consolidator: consolidation.Consolidator,
) -> None:
    """Alice forgot the turn the bot asked her in (its reply may repeat what she said): her
    answer after it, in its thread or not, is read as if the bot had asked nothing."""
    asked = await bot_asked_alice_and_bob(db)
    await operations.Operations(db, spaces).forget_turn(asked, actor="test")
    answer = "@mnemo a nurse, six years now"
    turns = [
        await journal_turn(db, [msg("m3", "alice", answer, at=after(1))]),
        await journal_turn(db, [msg("m4", "alice", answer, at=after(2), reply_to="tw-1")]),
    ]
    results = [await consolidator.consolidate(turn_id) for turn_id in turns]

    assert [r.dropped for r in results] == [
        {"m3": "not_self_statement"},
        {"m4": "not_self_statement"},
    ]


async def test_a_question_of_the_bot_to_nobody_is_answered_by_the_next_message_only(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    consolidator: consolidation.Consolidator,
) -> None:
    """The bot asks the chat ("what's everyone's favourite pizza?"): the next message answers it,
    as a viewer's answer to another viewer's question does; the one after it does not."""
    asked = await journal_turn(
        db, [msg("m1", "alice", "@mnemo hi")], reply="what's your favourite pizza, chat?"
    )
    await delivered(db, asked, "tw-1")
    turn_id = await journal_turn(
        db,
        [
            msg("m2", "bob", "margherita, always", at=after(1)),
            msg("m3", "carla", "margherita, always", at=after(2)),
        ],
    )
    result = await consolidator.consolidate(turn_id)

    [memory] = await spaces.list(identity.personal_key("1002"))
    assert memory.context_question == "what's your favourite pizza, chat?"
    assert memory.context_message_id == "tw-1"
    assert result.dropped == {"m3": "not_self_statement"}


async def test_a_reply_not_delivered_to_chat_is_no_question_a_message_answers(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    consolidator: consolidation.Consolidator,
) -> None:
    """A replay delivers nothing to chat: the bot's reply there is no context, so a replayed
    channel (the evaluation's) consolidates as before."""
    await journal_turn(
        db, [msg("m1", "alice", "@mnemo hi")], reply="@alice what do you do for work?"
    )
    turn_id = await journal_turn(
        db, [msg("m2", "alice", "@mnemo a nurse, six years now", at=after(1))]
    )
    result = await consolidator.consolidate(turn_id)

    assert result.dropped == {"m2": "not_self_statement"}
    assert await spaces.list(identity.personal_key("1001")) == []


def test_a_question_put_to_somebody_else_is_not_what_the_next_message_answers() -> None:
    nurse = msg("m2", "alice", "I'm a nurse")
    for question in ("@Mnemo who made you?", "@bob where are you from?"):
        record = documents.personal_record("t1", nurse, ("m1", question))
        assert (record.context_terms, record.context_question, record.context_message_id) == (
            (),
            None,
            None,
        )
    record = documents.personal_record("t1", nurse, ("m1", "@Alice @bob what do you do?"))
    assert record.context_question == "what do you do?" and record.context_message_id == "m1"


@pytest.mark.parametrize(
    ("message", "question"),
    [
        ("@alice where did you move from?", "where did you move from?"),
        ("nice pics! where did you take them? so jealous", "where did you take them? so jealous"),
        ("How are you? What did you do today?", "How are you? What did you do today?"),
        ("Wow. @luca e tu che lavoro fai?", "e tu che lavoro fai?"),
        ("great stream tonight!", None),
    ],
)
def test_the_question_a_reply_answers_is_the_message_s_last_question(
    message: str, question: str | None
) -> None:
    assert documents.asked_question(message) == question


async def test_the_episode_holds_the_public_turn_and_the_reply(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    consolidator: consolidation.Consolidator,
) -> None:
    turn_id = await journal_turn(
        db,
        [
            msg("m1", "bob", "Alice lives in Rome"),
            msg("m2", "alice", "I work as a graphic designer", second=1),
            msg("m3", "nightbot", "Follow the socials!", second=2),
            msg("m4", "carla", "!remember me", second=3, kind=models.EventKind.COMMAND),
            msg("m5", "carla", "", second=4, kind=models.EventKind.EVENT, event="sub"),
        ],
        reply="@alice nice!",
    )
    await consolidator.consolidate(turn_id)

    [episode] = await spaces.list(identity.episodic_key("s1"))
    assert episode.kind is records.MemoryKind.EPISODIC
    assert episode.text == (
        "bob: Alice lives in Rome\nalice: I work as a graphic designer\ncarla [sub]:"
    )
    assert episode.participants == ("1002", "1001", "1003")
    assert episode.origin_message_ids == ("m1", "m2", "m5")
    assert episode.extra["reply"] == "@alice nice!"
    assert episode.first_ts == T0 and episode.last_ts == T0 + timedelta(seconds=4)
    assert identity.LORE_KEY not in await spaces.spaces()


async def test_a_turn_of_reactions_alone_is_no_episode_unless_the_bot_answered_it(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    consolidator: consolidation.Consolidator,
) -> None:
    reactions = [msg("m1", "bob", "KEKW"), msg("m2", "alice", "ahahah", second=1)]
    unanswered = await journal_turn(db, reactions, reply=None)
    answered = await journal_turn(db, [msg("m3", "bob", "LUL", second=2)], reply="@bob lol")
    with_a_line = await journal_turn(
        db,
        [msg("m4", "bob", "gg", second=3), msg("m5", "carla", "that boss took ages", second=4)],
        reply=None,
    )
    sub = msg("m6", "carla", "", second=5, kind=models.EventKind.EVENT, event="sub")
    subscribed = await journal_turn(db, [sub], reply=None)
    results = [
        await consolidator.consolidate(turn)
        for turn in (unanswered, answered, with_a_line, subscribed)
    ]

    assert [r.episodic for r in results] == [0, 1, 1, 1]
    episodes = {e.text for e in await spaces.list(identity.episodic_key("s1"))}
    assert episodes == {"bob: LUL", "bob: gg\ncarla: that boss took ages", "carla [sub]:"}


async def test_bots_commands_events_and_the_bot_itself_never_reach_personal_memory(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    consolidator: consolidation.Consolidator,
) -> None:
    turn_id = await journal_turn(
        db,
        [
            msg("m1", "nightbot", "I am a bot and I live in the cloud"),
            msg("m2", "mnemo", "I live in the Archive", second=1),
            msg("m3", "carla", "!forget I live in Rome", second=2, kind=models.EventKind.COMMAND),
            msg("m4", "carla", "!note I moved to Paris", second=3),
            msg(
                "m5",
                "carla",
                "I moved to Turin",
                second=4,
                kind=models.EventKind.EVENT,
                event="sub",
            ),
        ],
    )
    result = await consolidator.consolidate(turn_id)

    assert result.personal == 0
    assert result.dropped == {
        "m1": "bot",
        "m2": "bot",
        "m3": "command",
        "m4": "command",
        "m5": "platform_event",
    }
    assert [s for s in await spaces.spaces() if s.startswith("viewer:")] == []


async def test_every_memory_in_every_viewer_space_comes_from_that_viewers_messages(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    consolidator: consolidation.Consolidator,
) -> None:
    turns = [
        [
            msg("a1", "alice", "hi chat, I work as a graphic designer"),
            msg("b1", "bob", "Alice lives in Rome, I'm from Milan", second=1),
            msg("c1", "carla", "my cat is called Miso", second=2),
        ],
        [
            msg("b2", "bob", "@alice I moved to Turin last year", second=10),
            msg("a2", "alice", "bob is a nurse and I am 31", second=11),
            msg("c2", "carla", "carla's brother? I have a dog named Rex", second=12),
        ],
        [
            msg("a3", "alice", "sono di Milano", second=20),
            msg("n3", "nightbot", "my name is Nightbot", second=21),
            msg("c3", "carla", "lol", second=22),
        ],
    ]
    for events in turns:
        await consolidator.consolidate(await journal_turn(db, events))

    authors = {e.id: e.user_id for events in turns for e in events}
    viewer_spaces = [s for s in await spaces.spaces() if s.startswith("viewer:")]
    assert sorted(viewer_spaces) == ["viewer:1001", "viewer:1002", "viewer:1003"]
    for space in viewer_spaces:
        owner = space.removeprefix("viewer:")
        for record in await spaces.list(space):
            assert record.user_id == owner
            assert record.origin_message_ids
            assert {authors[m] for m in record.origin_message_ids} == {owner}
    texts = {r.text for r in await spaces.list("viewer:1001")}
    assert texts == {
        "hi chat, I work as a graphic designer",
        "bob is a nurse and I am 31",
        "sono di Milano",
    }


async def test_a_retried_job_creates_no_duplicates(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    consolidator: consolidation.Consolidator,
) -> None:
    turn_id = await journal_turn(
        db,
        [
            msg("m1", "alice", "I moved to Turin"),
            msg("m2", "bob", "my dog is called Rex", second=1),
        ],
    )
    handler = consolidation.make_handler(consolidator)
    await handler(job_for(turn_id))
    first = {s: sorted(r.id for r in await spaces.list(s)) for s in await spaces.spaces()}
    await handler(job_for(turn_id))
    second = {s: sorted(r.id for r in await spaces.list(s)) for s in await spaces.spaces()}

    assert first == second
    assert {s: len(ids) for s, ids in second.items()} == {
        "viewer:1001": 1,
        "viewer:1002": 1,
        "stream:s1": 1,
    }
    profile = await profile_module.ProfileStore(db).get("1001")
    assert profile is not None and [f.line for f in profile.facts] == ["location: Turin"]


@pytest.mark.parametrize(
    "payload", [{}, {"turn_id": 5}, {"turn_id": ""}, "not a dict", {"turn_id": "no-such-turn"}]
)
async def test_bad_payloads_and_unknown_turns_are_validation_errors(
    consolidator: consolidation.Consolidator, payload: Any
) -> None:
    handler = consolidation.make_handler(consolidator)
    with pytest.raises(errors.JobValidationError):
        await handler(job_for("x", payload))


async def test_a_paused_stream_writes_nothing(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    consolidator: consolidation.Consolidator,
) -> None:
    await db.pool.execute(
        "INSERT INTO memory_paused_streams (stream, paused_by) VALUES ('s1', 'test')"
    )
    turn_id = await journal_turn(db, [msg("m1", "alice", "I moved to Turin")])
    result = await consolidator.consolidate(turn_id)

    assert result.skipped == "paused"
    assert await spaces.spaces() == []
    assert await profile_module.ProfileStore(db).get("1001") is None


async def test_the_barrier_keeps_involved_viewers_out_of_personal_memory(
    db: postgres.Database, spaces: fake_spaces.InMemorySpaces, settings: Any
) -> None:
    turn_id = await journal_turn(
        db,
        [
            msg("m1", "alice", "I'm dating Bob now, I live in Rome"),
            msg("m2", "carla", "I work as a baker", second=1),
        ],
    )
    await barrier.record(
        db,
        turn_id,
        barrier.decide(["relationships"], ["1001", "1002"], ["1001", "1003"], "viewers"),
    )
    result = await consolidation.Consolidator(
        db, spaces, settings, barrier_source=consolidation.StateBarrier(db)
    ).consolidate(turn_id)

    assert result.dropped == {"m1": "barrier"}
    assert await spaces.count("viewer:1001") == 0
    assert await spaces.count("viewer:1003") == 1
    assert await profile_module.ProfileStore(db).get("1001") is None
    assert await spaces.count("stream:s1") == 1


async def test_newer_statements_win_the_profile_slot_whatever_the_consolidation_order(
    db: postgres.Database, consolidator: consolidation.Consolidator
) -> None:
    old = await journal_turn(db, [msg("m1", "alice", "I live in Rome")])
    new = await journal_turn(db, [msg("m2", "alice", "I moved to Turin", second=60)])
    await consolidator.consolidate(new)
    await consolidator.consolidate(old)

    profile = await profile_module.ProfileStore(db).get("1001")
    assert profile is not None
    location = profile.get("location")
    assert location is not None
    assert (location.value, location.text, location.origin_message_ids) == (
        "Turin",
        "I moved to Turin",
        ("m2",),
    )


async def test_the_model_condenses_facts_and_keeps_provenance(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    make_settings: SettingsFactory,
    fake_ollama: FakeOllama,
) -> None:
    settings = make_settings(ollama_host=fake_ollama.url, ollama={"extract_facts": True})
    model = ollama_adapter.OllamaChat(fake_ollama.url, settings.ollama.chat_model)
    consolidator = consolidation.Consolidator(db, spaces, settings, model=model)
    turn_id = await journal_turn(
        db,
        [
            msg("m1", "alice", "I work as a graphic designer"),
            msg("m2", "bob", "Alice lives in Rome", second=1),
            msg("m3", "alice", "and my cat is called Miso", second=2),
        ],
    )
    fake_ollama.reply(
        "```json\n"
        + json.dumps(
            {
                "facts": [
                    {"text": "Alice is a graphic designer", "message_ids": ["m1", "m2"]},
                    {"text": "Alice has a cat named Miso", "message_ids": []},
                ]
            }
        )
        + "\n```"
    )
    result = await consolidator.consolidate(turn_id)

    assert result.facts == 2
    facts = {
        r.text: r.origin_message_ids
        for r in await spaces.list("viewer:1001")
        if r.kind is records.MemoryKind.FACT
    }
    assert facts == {
        "Alice is a graphic designer": ("m1",),
        "Alice has a cat named Miso": ("m1", "m3"),
    }
    assert fake_ollama.chat_calls() == 1
    assert "Alice lives in Rome" not in json.dumps(fake_ollama.chat_requests[0])


async def test_a_bad_model_answer_keeps_the_raw_memories(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    make_settings: SettingsFactory,
    fake_ollama: FakeOllama,
) -> None:
    settings = make_settings(ollama_host=fake_ollama.url, ollama={"extract_facts": True})
    model = ollama_adapter.OllamaChat(fake_ollama.url, settings.ollama.chat_model)
    turn_id = await journal_turn(db, [msg("m1", "alice", "I work as a graphic designer")])
    fake_ollama.reply('{"facts": [{"text": 42}]}')
    result = await consolidation.Consolidator(db, spaces, settings, model=model).consolidate(
        turn_id
    )

    assert (result.personal, result.facts) == (1, 0)
    assert [r.kind for r in await spaces.list("viewer:1001")] == [records.MemoryKind.PERSONAL]


# -- condensed facts on a retried job (review finding 11) ----------------------------------------
def facts_answer(*facts: tuple[str, list[str]]) -> str:
    return json.dumps({"facts": [{"text": text, "message_ids": ids} for text, ids in facts]})


async def fact_texts(spaces: fake_spaces.InMemorySpaces, user_id: str = "1001") -> dict[str, str]:
    return {
        r.text: r.id
        for r in await spaces.list(identity.personal_key(user_id))
        if r.kind is records.MemoryKind.FACT
    }


async def test_a_retry_keeps_only_the_facts_of_its_own_answer(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    make_settings: SettingsFactory,
    fake_ollama: FakeOllama,
) -> None:
    settings = make_settings(ollama_host=fake_ollama.url, ollama={"extract_facts": True})
    model = ollama_adapter.OllamaChat(fake_ollama.url, settings.ollama.chat_model)
    consolidator = consolidation.Consolidator(db, spaces, settings, model=model)
    turn_id = await journal_turn(
        db,
        [
            msg("m1", "alice", "I work as a graphic designer"),
            msg("m3", "alice", "and my cat is called Miso", second=2),
        ],
    )
    fake_ollama.reply(
        facts_answer(
            ("Alice is a graphic designer", ["m1"]), ("Alice has a cat named Miso", ["m3"])
        )
    )
    await consolidator.consolidate(turn_id)
    first = await fact_texts(spaces)
    fake_ollama.reply(facts_answer(("Alice has a cat named Miso.", ["m3"])))
    await consolidator.consolidate(turn_id)

    # the same fact (normalized text) keeps its id; a fact the retry no longer states is gone
    assert await fact_texts(spaces) == {
        "Alice has a cat named Miso.": first["Alice has a cat named Miso"]
    }


async def test_a_retry_does_not_bring_back_forgotten_facts_or_episodes(
    db: postgres.Database,
    spaces: fake_spaces.InMemorySpaces,
    make_settings: SettingsFactory,
    fake_ollama: FakeOllama,
) -> None:
    settings = make_settings(ollama_host=fake_ollama.url, ollama={"extract_facts": True})
    model = ollama_adapter.OllamaChat(fake_ollama.url, settings.ollama.chat_model)
    consolidator = consolidation.Consolidator(db, spaces, settings, model=model)
    ops = operations.Operations(db, spaces)
    turn_id = await journal_turn(
        db,
        [
            msg("m1", "alice", "I work as a graphic designer"),
            msg("m3", "alice", "and my cat is called Miso", second=2),
        ],
    )
    answer = facts_answer(
        ("Alice is a graphic designer", ["m1"]), ("Alice has a cat named Miso", ["m3"])
    )
    fake_ollama.reply(answer)
    await consolidator.consolidate(turn_id)
    job_fact = (await fact_texts(spaces))["Alice is a graphic designer"]
    [cat] = [r for r in await spaces.list("viewer:1001") if r.text == "and my cat is called Miso"]
    [episode] = await spaces.list("stream:s1")
    await ops.forget_memory(job_fact, actor="admin:test")
    await ops.forget_memory(cat.id, actor="admin:test")  # its fact goes with it
    await ops.forget_memory(episode.id, actor="admin:test")

    fake_ollama.reply(answer)
    result = await consolidator.consolidate(turn_id)

    assert (result.personal, result.facts, result.episodic) == (1, 0, 0)
    assert [r.text for r in await spaces.list("viewer:1001")] == ["I work as a graphic designer"]
    assert await spaces.list("stream:s1") == []


# --- ablation switches (settings.memory; evaluation only) ---------------------------------------


async def test_without_attribution_split_every_viewer_shares_one_space_with_authors_kept(
    db: postgres.Database, spaces: fake_spaces.InMemorySpaces, make_settings: SettingsFactory
) -> None:
    naive = make_settings(bot_name="mnemo", memory={"attribution_split": False})
    turn_id = await journal_turn(
        db,
        [
            msg("m1", "alice", "I work as a graphic designer"),
            msg("m2", "bob", "I live in Rome", second=1),
            msg("m3", "nightbot", "I am a bot and I live in the cloud", second=2),
        ],
    )
    result = await consolidation.Consolidator(db, spaces, naive).consolidate(turn_id)

    shared = await spaces.list(identity.SHARED_PERSONAL_KEY)
    assert sorted((r.text, r.user_id, r.origin_message_ids) for r in shared) == [
        ("I live in Rome", "1002", ("m2",)),
        ("I work as a graphic designer", "1001", ("m1",)),
    ]
    assert await spaces.count(identity.personal_key("1001")) == 0
    assert await spaces.count(identity.personal_key("1002")) == 0
    assert result.personal == 2 and result.viewers == ("1001", "1002")
    assert await profile_module.ProfileStore(db).get("1002") is not None  # profiles stay per viewer


async def test_without_episodic_no_episode_is_written(
    db: postgres.Database, spaces: fake_spaces.InMemorySpaces, make_settings: SettingsFactory
) -> None:
    settings = make_settings(bot_name="mnemo", memory={"use_episodic": False})
    turn_id = await journal_turn(db, [msg("m1", "alice", "I live in Rome")])
    result = await consolidation.Consolidator(db, spaces, settings).consolidate(turn_id)

    assert result.episodic == 0 and result.personal == 1
    assert await spaces.count(identity.episodic_key("s1")) == 0
    assert await spaces.count(identity.personal_key("1001")) == 1


async def test_without_profiles_no_profile_is_updated(
    db: postgres.Database, spaces: fake_spaces.InMemorySpaces, make_settings: SettingsFactory
) -> None:
    settings = make_settings(bot_name="mnemo", memory={"use_profile": False})
    turn_id = await journal_turn(db, [msg("m1", "alice", "I live in Rome")])
    result = await consolidation.Consolidator(db, spaces, settings).consolidate(turn_id)

    assert result.personal == 1 and result.episodic == 1
    assert await profile_module.ProfileStore(db).get("1001") is None


async def test_everyday_phrasings_reach_the_profile_and_the_newest_job_wins(
    db: postgres.Database, consolidator: consolidation.Consolidator
) -> None:
    weeks = 21 * 24 * 3600
    first = await journal_turn(
        db,
        [
            msg("m1", "alice", "I work as a barista in a small café"),
            msg("m2", "bob", "I'm a nurse, night shifts are rough", second=1),
        ],
    )
    later = await journal_turn(
        db,
        [
            msg("m3", "alice", "I'm a software tester now", second=weeks, stream="s2"),
            msg("m4", "bob", "turned 25 yesterday", second=weeks + 1, stream="s2"),
            msg(
                "m5",
                "carla",
                "I just started a job as a data analyst",
                second=weeks + 2,
                stream="s2",
            ),
        ],
    )
    await consolidator.consolidate(later)
    await consolidator.consolidate(first)  # the older turn last: it changes nothing it lost

    store = profile_module.ProfileStore(db)
    lines = {login: await store.get(VIEWERS[login]) for login in ("alice", "bob", "carla")}
    assert {login: p.lines() if p else [] for login, p in lines.items()} == {
        "alice": ["job: software tester"],
        "bob": ["age: 25", "job: nurse"],
        "carla": ["job: data analyst"],
    }
