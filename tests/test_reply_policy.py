"""When the bot speaks: addressed | ambient, per-viewer cooldown, the quiet switch, and
silent turns that are journaled and consolidated but never planned, recalled or sent to the model.

The replays run the real pipeline (real Postgres, embedded Qdrant, the fake Ollama through the real
``ollama`` client)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from config import settings as settings_module
from memory import migrate, models, reply, session
from memory import runtime as services_module
from tests import chatlines

if TYPE_CHECKING:
    from tests.conftest import SettingsFactory
    from tests.fakes import ollama as fake_ollama_module

chat = chatlines.chat
BOT_LOGIN = "mnemo_bot"


async def replay(
    make_settings: SettingsFactory,
    ollama: fake_ollama_module.FakeOllama,
    events: list[models.ChatEvent],
    **reply_settings: Any,
) -> tuple[list[models.TurnReport], services_module.Services]:
    settings = make_settings(
        ollama_host=ollama.url, bot_login=BOT_LOGIN, reply={"policy": "addressed", **reply_settings}
    )
    reports: list[models.TurnReport] = []

    async def deliver(report: models.TurnReport) -> None:
        reports.append(report)

    async with services_module.lifespan(settings) as services:
        runner = session.Replay(services, deliver, commands=services.commands)
        for event in events:
            await runner.feed(event)
        await runner.finish()
    return reports, services


def chat_turns(reports: list[models.TurnReport]) -> list[models.TurnReport]:
    return [r for r in reports if r.command is None]


async def test_only_addressed_batches_get_a_reply(
    make_settings: SettingsFactory, fake_ollama: fake_ollama_module.FakeOllama
) -> None:
    """50 unaddressed and 10 addressed messages: exactly the 10 addressed ones get a reply; the 50
    are silent turns, journaled with their reason and consolidated, with no model call."""
    addressing = [
        "@mnemo_bot what game is this?",
        "Mnemo do you remember my cat?",
        "hey mnemo, good morning",
        "thanks @Mnemo_Bot",
        "MNEMO!! hi",
    ]
    events: list[models.ChatEvent] = []
    for n in range(60):
        if n % 6 == 5:
            events.append(chat(n, f"fan{n // 6}", addressing[(n // 6) % len(addressing)]))
        else:
            events.append(chat(n, f"viewer{n % 7}", f"lol that jump was wild {n}"))
    reports, services = await replay(make_settings, fake_ollama, events)

    turns = chat_turns(reports)
    assert len(turns) == 60
    spoke = [r for r in turns if r.reply]
    assert len(spoke) == 10 and all(r.reason == reply.ADDRESSED for r in spoke)
    assert {r.message_ids[0] for r in spoke} == {e.id for e in events if e.login.startswith("fan")}
    silent = [r for r in turns if r.status is models.TurnStatus.SILENT]
    assert len(silent) == 50 and {r.reason for r in silent} == {reply.NOT_ADDRESSED}
    assert all(not r.plan.sources and not r.recall and not r.prompt.preview for r in silent)
    assert fake_ollama.chat_calls() == 10
    # journaled with the reason, and consolidated like any other turn
    async with services_module.lifespan(make_settings()) as fresh:
        row = await fresh.transcript.turn(silent[0].turn_id)
        assert row is not None and row.status is models.TurnStatus.SILENT
        assert row.report is not None and row.report["reason"] == "not_addressed"
        jobs = await fresh.db.pool.fetchval(
            "SELECT count(*) FROM jobs WHERE kind = 'consolidate_turn'"
        )
        assert jobs == 60
    metric = services.metrics.registry.get_sample_value
    assert metric("livememory_silent_turns_total", {"reason": "not_addressed"}) == 50
    assert metric("livememory_turns_total", {"status": "completed"}) == 10


async def test_a_viewer_just_answered_waits_for_the_cooldown(
    make_settings: SettingsFactory, fake_ollama: fake_ollama_module.FakeOllama
) -> None:
    events = [
        chat(0, "alice", "Mnemo hi"),
        chat(2, "alice", "Mnemo are you there?"),  # 6 s later: cooling down
        chat(3, "bob", "Mnemo hello"),  # another viewer: answered
        chat(8, "alice", "Mnemo again"),  # 24 s after her first: answered
    ]
    reports, _ = await replay(make_settings, fake_ollama, events, viewer_cooldown_seconds=15)
    assert [(r.status.value, r.reason) for r in chat_turns(reports)] == [
        ("completed", "addressed"),
        ("silent", "viewer_cooldown"),
        ("completed", "addressed"),
        ("completed", "addressed"),
    ]


async def test_platform_events_and_replies_to_the_bot_address_it(
    make_settings: SettingsFactory, fake_ollama: fake_ollama_module.FakeOllama
) -> None:
    events = [
        chat(0, "alice", "", kind=models.EventKind.EVENT, event="sub"),
        chat(1, "bob", "", kind=models.EventKind.EVENT, event="follow"),
        chat(2, "carla", "haha true", reply_to="twitch-msg-of-the-bot"),
        chat(3, "dan", "haha true", reply_to="m1"),  # a reply to a viewer
    ]
    settings = make_settings(bot_login=BOT_LOGIN, reply={"policy": "addressed"})
    async with services_module.lifespan(settings) as services:
        await services.db.pool.execute(
            "INSERT INTO turn_deliveries (turn_id, part, channel, twitch_message_id, status)"
            " VALUES ('t0', 0, 'c1', 'twitch-msg-of-the-bot', 'sent')"
        )
        policy = services.reply
        assert policy is not None
        assert [await policy.addresses(e) for e in events] == [True, False, True, False]


async def test_quiet_silences_replies_until_unquiet_and_only_moderators_flip_it(
    make_settings: SettingsFactory, fake_ollama: fake_ollama_module.FakeOllama
) -> None:
    events = [
        chat(0, "alice", "!quiet"),  # a viewer: refused
        chat(1, "alice", "Mnemo hi"),
        chat(2, "mod", "!quiet", badges=("moderator",)),
        chat(3, "bob", "Mnemo hello?"),
        chat(4, "carla", "@mnemo_bot hey"),
        chat(5, "owner", "!unquiet", badges=("broadcaster",)),
        chat(12, "bob", "Mnemo hello again"),
    ]
    reports, _ = await replay(make_settings, fake_ollama, events)
    commands = [r.reply for r in reports if r.command]
    assert commands[0] == "@alice only moderators can do that."
    assert commands[1] is not None and "quiet now" in commands[1]
    assert commands[2] is not None and "back" in commands[2]
    assert [(r.status.value, r.reason) for r in chat_turns(reports)] == [
        ("completed", "addressed"),
        ("silent", "quiet"),
        ("silent", "quiet"),
        ("completed", "addressed"),
    ]


async def test_the_quiet_switch_is_shared_between_processes(
    make_settings: SettingsFactory,
) -> None:
    """A second process (another bot, the dashboard) sees the switch: it lives in Postgres."""
    settings = make_settings()
    async with migrate.open_database(settings) as one, migrate.open_database(settings) as two:
        first, second = reply.ReplyState(one), reply.ReplyState(two)
        assert await first.set_quiet("s1", True, actor="twitch:mod") is True
        assert await second.is_quiet("s1") is True
        assert await second.set_quiet("s1", True, actor="dashboard") is False
        assert await second.set_quiet("s1", False, actor="dashboard") is True
        assert await first.is_quiet("s1") is False


async def test_ambient_speaks_unprompted_at_most_once_per_interval() -> None:
    policy = reply.ReplyPolicy(
        settings_module.ReplySettings(policy="ambient", ambient_interval_seconds=60),
        bot_name="Mnemo",
    )
    decisions = []
    for n in range(100):  # a question for the room every 3 s for 5 minutes
        event = chat(n, f"v{n % 9}", "anyone know the next boss?")
        decisions.append(await policy.decide(models.Batch(stream="s1", events=(event,))))
    spoke = [n for n, d in enumerate(decisions) if d.speak]
    assert len(spoke) == 5 and spoke == [0, 20, 40, 60, 80]
    assert {d.reason for d in decisions if not d.speak} == {reply.AMBIENT_INTERVAL}
    statement = chat(200, "v1", "that boss was hard")
    question_to_someone = chat(201, "v1", "@v2 did you beat it?")
    for event in (statement, question_to_someone):
        decision = await policy.decide(models.Batch(stream="s1", events=(event,)))
        assert decision == reply.Decision(False, reply.NOT_ADDRESSED)


async def test_names_are_words_not_parts_of_words() -> None:
    policy = reply.ReplyPolicy(settings_module.ReplySettings(), bot_name="Mnemo")
    policy.set_bot_login("Mnemo_Bot")
    said = {
        "mnemonic devices are cool": False,
        "email me at mnemo_bot@example.com": False,
        "@mnemo_bot hi": True,
        "mnemo_bot: hi": True,
        "hi Mnemo.": True,
        "@someone_mnemo hi": False,
    }
    for text, expected in said.items():
        assert await policy.addresses(chat(0, "v", text)) is expected, text
