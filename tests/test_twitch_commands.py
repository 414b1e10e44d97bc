"""Memory chat commands: parsing, the authorization matrix, cooldown, confirmation, public replies,
the ChatMessage → ChatEvent conversion, and that commands never reach the model."""

from __future__ import annotations

import dataclasses
import itertools
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest
import twitchio
from twitchio.models.eventsub_ import create_event_instance

from bot.twitch.components import chat
from config import settings as settings_module
from memory import models
from memory import runtime as services_module
from memory import session as session_module
from memory.ops import chat_operations as memory_commands
from memory.ops import commands
from tests.fakes import clock as fake_clock
from tests.fakes import commands as fake_commands
from tests.fakes import eventsub

if TYPE_CHECKING:
    from memory.adapters import postgres
    from tests.conftest import SettingsFactory
    from tests.fakes import ollama as fake_ollama_module

STREAM = "777"
_ids = itertools.count()
ALICE, BOB = ("3003", "alice"), ("3004", "bob")
MOD, OWNER = ("3005", "mod"), ("2002", "owner")
BADGES = {MOD: ("moderator",), OWNER: ("broadcaster",), ALICE: (), BOB: ()}


def event(
    who: tuple[str, str], text: str, badges: tuple[str, ...] | None = None
) -> models.ChatEvent:
    return models.ChatEvent(
        id=f"m{next(_ids)}",
        stream=STREAM,
        user_id=who[0],
        login=who[1],
        name=who[1].capitalize(),
        badges=BADGES[who] if badges is None else badges,
        text=text,
        ts=datetime.now(UTC),
        kind=models.EventKind.COMMAND if text.startswith("!") else models.EventKind.MESSAGE,
    )


def batch_of(*events: models.ChatEvent) -> models.Batch:
    return models.Batch(stream=STREAM, events=events)


@pytest.fixture
def memory() -> fake_commands.RecordingMemory:
    return fake_commands.RecordingMemory(
        viewers={"alice": ALICE[0], "bob": BOB[0]},
        summaries={ALICE[0]: "likes cats; lives in Turin", BOB[0]: "plays bass"},
        memories={"mem-a": ALICE[0], "mem-b": BOB[0]},
    )


@pytest.fixture
def clock() -> fake_clock.FakeClock:
    return fake_clock.FakeClock()


@pytest.fixture
def handler(
    memory: fake_commands.RecordingMemory, clock: fake_clock.FakeClock
) -> commands.CommandHandler:
    twitch = settings_module.TwitchSettings(command_cooldown_seconds=5.0)
    return commands.CommandHandler(memory, twitch, clock=clock)


async def run(handler: commands.CommandHandler, who: tuple[str, str], text: str) -> str | None:
    ev = event(who, text)
    return await handler.handle(ev, batch_of(ev))


# -- parsing -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("!forget last", commands.Command(action=commands.Action.FORGET_LAST)),
        (
            "!forget ab12-cd",
            commands.Command(action=commands.Action.FORGET_MEMORY, memory_id="ab12-cd"),
        ),
        ("!forget me", commands.Command(action=commands.Action.FORGET_VIEWER)),
        (
            "!Forget ME confirm",
            commands.Command(action=commands.Action.FORGET_VIEWER, confirm=True),
        ),
        (
            "!correct m1 I live in Turin now",
            commands.Command(
                action=commands.Action.CORRECT, memory_id="m1", text="I live in Turin now"
            ),
        ),
        ("!memory", commands.Command(action=commands.Action.SUMMARY)),
        ("!memory @Alice", commands.Command(action=commands.Action.SUMMARY, target="alice")),
        ("!forget @bob last", commands.Command(action=commands.Action.FORGET_LAST, target="bob")),
        (
            "!forget @bob all confirm",
            commands.Command(action=commands.Action.FORGET_VIEWER, target="bob", confirm=True),
        ),
        ("!lore reload", commands.Command(action=commands.Action.LORE_RELOAD)),
        ("!pause", commands.Command(action=commands.Action.PAUSE)),
        ("!resume", commands.Command(action=commands.Action.RESUME)),
        ("!forget", commands.Usage(text=commands.USAGE["forget"])),
        ("!forget @bob", commands.Usage(text=commands.USAGE["forget_mod"])),
        ("!forget last confirm", commands.Usage(text=commands.USAGE["forget"])),
        ("!correct m1", commands.Usage(text=commands.USAGE["correct"])),
        ("!lore", commands.Usage(text=commands.USAGE["lore"])),
        ("!hype", None),
        ("hello !forget last", None),
        ("!", None),
    ],
)
def test_parse(text: str, expected: commands.Command | commands.Usage | None) -> None:
    assert commands.parse(text) == expected


# -- the authorization matrix --------------------------------------------------------------------
SELF_COMMANDS = [
    ("!forget last", ("forget_last", "twitch:{login}", "{uid}", STREAM)),
    ("!forget mem-{login0}", ("forget_memory", "twitch:{login}", "{uid}", "mem-{login0}")),
    (
        "!correct mem-{login0} new text",
        ("correct", "twitch:{login}", "{uid}", "mem-{login0}", "new text"),
    ),
    ("!memory", ("summary", "{uid}")),
]


def fill(call: tuple[str, ...], who: tuple[str, str]) -> tuple[str, ...]:
    return tuple(p.format(login=who[1], uid=who[0], login0=who[1][0]) for p in call)


@pytest.mark.parametrize(("text", "call"), SELF_COMMANDS)
async def test_viewer_on_self_is_allowed(
    handler: commands.CommandHandler,
    memory: fake_commands.RecordingMemory,
    text: str,
    call: tuple[str, ...],
) -> None:
    reply = await run(handler, ALICE, fill((text,), ALICE)[0])
    assert memory.calls == [fill(call, ALICE)]
    assert reply is not None and reply.startswith("@alice ")


@pytest.mark.parametrize(
    "text", ["!memory @bob", "!forget @bob last", "!forget @bob mem-b", "!correct @bob mem-b x"]
)
async def test_viewer_on_another_viewer_is_refused(
    handler: commands.CommandHandler, memory: fake_commands.RecordingMemory, text: str
) -> None:
    reply = await run(handler, ALICE, text)
    assert reply == "@alice you can only manage your own memory."
    assert memory.calls == []


@pytest.mark.parametrize("who", [MOD, OWNER])
@pytest.mark.parametrize(
    ("text", "call"),
    [
        ("!memory @bob", ("summary", BOB[0])),
        ("!forget @bob last", ("forget_last", "twitch:{login}", BOB[0], STREAM)),
        ("!forget @bob mem-b", ("forget_memory", "twitch:{login}", BOB[0], "mem-b")),
        ("!correct @bob mem-b better", ("correct", "twitch:{login}", BOB[0], "mem-b", "better")),
    ],
)
async def test_moderator_and_broadcaster_act_on_anyone(
    handler: commands.CommandHandler,
    memory: fake_commands.RecordingMemory,
    who: tuple[str, str],
    text: str,
    call: tuple[str, ...],
) -> None:
    reply = await run(handler, who, text)
    assert memory.calls == [fill(call, who)]
    assert reply is not None and "refuse" not in reply and "only" not in reply


@pytest.mark.parametrize("text", ["!lore reload", "!pause", "!resume"])
@pytest.mark.parametrize("who", [ALICE, MOD])
async def test_broadcaster_only_commands_are_refused_to_others(
    handler: commands.CommandHandler,
    memory: fake_commands.RecordingMemory,
    who: tuple[str, str],
    text: str,
) -> None:
    assert await run(handler, who, text) == f"@{who[1]} only the broadcaster can do that."
    assert memory.calls == []


@pytest.mark.parametrize(
    ("text", "call"),
    [
        ("!lore reload", ("reload_lore", "twitch:owner")),
        ("!pause", ("pause", "twitch:owner", STREAM)),
        ("!resume", ("resume", "twitch:owner", STREAM)),
    ],
)
async def test_broadcaster_runs_broadcaster_commands(
    handler: commands.CommandHandler,
    memory: fake_commands.RecordingMemory,
    text: str,
    call: tuple[str, ...],
) -> None:
    assert await run(handler, OWNER, text)
    assert memory.calls == [call]


async def test_viewer_on_self_needs_to_be_in_the_current_batch(
    handler: commands.CommandHandler, memory: fake_commands.RecordingMemory
) -> None:
    command = event(ALICE, "!forget last")
    reply = await handler.handle(command, batch_of(event(BOB, "hi")))
    assert reply == "@alice you can manage your memory only while you are chatting."
    assert memory.calls == []


async def test_viewer_naming_themselves_acts_on_self(
    handler: commands.CommandHandler, memory: fake_commands.RecordingMemory
) -> None:
    await run(handler, ALICE, "!memory @Alice")
    assert memory.calls == [("summary", ALICE[0])]


async def test_unknown_target_and_foreign_memory_get_short_answers(
    handler: commands.CommandHandler,
    memory: fake_commands.RecordingMemory,
    clock: fake_clock.FakeClock,
) -> None:
    assert await run(handler, MOD, "!memory @nobody") == "@mod I don't know @nobody."
    clock.advance(10)
    # a viewer cannot reach someone else's memory by its id
    assert await run(handler, ALICE, "!forget mem-b") == "@alice I can't find that memory."
    assert memory.calls == []


# -- cooldown, confirmation, privacy -----------------------------------------------------------
async def test_per_viewer_cooldown(
    handler: commands.CommandHandler,
    memory: fake_commands.RecordingMemory,
    clock: fake_clock.FakeClock,
) -> None:
    assert await run(handler, ALICE, "!memory")
    assert await run(handler, ALICE, "!memory") is None  # silent: no chat spam
    assert await run(handler, BOB, "!memory")  # another viewer is not cooling down
    clock.advance(5.0)
    assert await run(handler, ALICE, "!memory")
    assert memory.calls == [("summary", ALICE[0]), ("summary", BOB[0]), ("summary", ALICE[0])]


async def test_forget_me_needs_a_confirmation(
    handler: commands.CommandHandler,
    memory: fake_commands.RecordingMemory,
    clock: fake_clock.FakeClock,
) -> None:
    assert (await run(handler, ALICE, "!forget me confirm") or "").startswith(
        "@alice nothing to confirm"
    )
    clock.advance(10)
    ask = await run(handler, ALICE, "!forget me")
    assert ask is not None and "!forget me confirm" in ask
    assert memory.calls == []
    # the confirmation right after the request is not on cooldown
    assert (
        await run(handler, ALICE, "!forget me confirm")
        == "@alice done, I forgot everything about you."
    )
    assert memory.calls == [("forget_viewer", "twitch:alice", ALICE[0])]


async def test_a_late_confirmation_does_nothing(
    handler: commands.CommandHandler,
    memory: fake_commands.RecordingMemory,
    clock: fake_clock.FakeClock,
) -> None:
    await run(handler, MOD, "!forget @bob all")
    clock.advance(121)
    reply = await run(handler, MOD, "!forget @bob all confirm")
    assert reply is not None and reply.startswith("@mod nothing to confirm")
    assert memory.calls == []


async def test_replies_never_repeat_a_correction_or_a_forgotten_text(
    handler: commands.CommandHandler, memory: fake_commands.RecordingMemory
) -> None:
    reply = await run(handler, ALICE, "!correct mem-a my address is 12 Secret Street")
    assert reply == "@alice done, that memory is corrected."
    assert memory.calls[0][-1] == "my address is 12 Secret Street"


async def test_summary_fits_one_chat_message(
    handler: commands.CommandHandler, memory: fake_commands.RecordingMemory
) -> None:
    memory.summaries[ALICE[0]] = "likes cats " * 100
    reply = await run(handler, ALICE, "!memory")
    assert reply is not None and len(reply) <= 500 and reply.endswith("…")


# -- ChatMessage → ChatEvent -------------------------------------------------------------------
def notification(event_data: dict[str, object]) -> twitchio.ChatMessage:
    note = {
        "metadata": {
            "message_id": "n1",
            "message_type": "notification",
            "message_timestamp": "2026-11-29T20:00:01.5Z",
            "subscription_type": "channel.chat.message",
            "subscription_version": "1",
        },
        "payload": {"subscription": {}, "event": event_data},
    }
    message = create_event_instance("channel.chat.message", note, http=None)
    assert isinstance(message, twitchio.ChatMessage)
    return message


def test_chat_message_becomes_a_chat_event() -> None:
    raw = eventsub.chat_event(
        user_id="3003", login="alice", text="hi there", badges=("moderator", "founder", "premium")
    )
    ev = chat.to_event(notification(raw), stream=STREAM, prefix="!")
    assert (ev.id, ev.stream, ev.user_id, ev.login, ev.name) == (
        raw["message_id"],
        STREAM,
        "3003",
        "alice",
        "Alice",
    )
    assert ev.badges == ("moderator", "subscriber")
    assert ev.kind is models.EventKind.MESSAGE
    assert ev.ts == datetime(2026, 11, 29, 20, 0, 1, 500000, tzinfo=UTC)


def test_prefix_makes_a_command_and_a_cheer_makes_an_event() -> None:
    command = eventsub.chat_event(user_id="3003", login="alice", text="!forget last")
    assert (
        chat.to_event(notification(command), stream=STREAM, prefix="!").kind
        is models.EventKind.COMMAND
    )
    cheer = eventsub.chat_event(user_id="3003", login="alice", text="Cheer100 go", cheer_bits=100)
    ev = chat.to_event(notification(cheer), stream=STREAM, prefix="!")
    assert (ev.kind, ev.event) == (models.EventKind.EVENT, "cheer")


# -- commands never reach the model ------------------------------------------------------------
async def test_commands_are_answered_apart_and_never_reach_the_model(
    make_settings: SettingsFactory,
    fake_ollama: fake_ollama_module.FakeOllama,
    memory: fake_commands.RecordingMemory,
    clock: fake_clock.FakeClock,
) -> None:
    settings = make_settings(ollama_host=fake_ollama.url, batch={"max_messages": 10})
    handler = commands.CommandHandler(memory, settings.twitch, clock=clock)
    reports: list[models.TurnReport] = []

    async def deliver(report: models.TurnReport) -> None:
        reports.append(report)

    fake_ollama.reply("hi @bob!")
    async with services_module.lifespan(settings) as services:
        services = dataclasses.replace(services, commands=handler)
        replay = session_module.Replay(services, deliver, commands=handler)
        for ev in (
            event(ALICE, "!forget last"),
            event(BOB, "hello everyone"),
            event(ALICE, "!memory"),
        ):
            await replay.feed(ev)
        await replay.finish()
        messages = await services.transcript.messages([r.message_ids[0] for r in reports])

    sent_to_model = " ".join(
        m["content"] for request in fake_ollama.chat_requests for m in request["messages"]
    )
    assert "hello everyone" in sent_to_model
    assert "!forget" not in sent_to_model and "!memory" not in sent_to_model
    assert memory.calls == [("forget_last", "twitch:alice", ALICE[0], STREAM)]  # !memory: cooldown
    commands_reported = [r.command for r in reports if r.command]
    assert commands_reported == ["!forget last", "!memory"]
    assert [r.reply for r in reports if r.command == "!forget last"] == [
        "@alice done, I forgot 2 recent memories."
    ]
    # the commands are in the transcript, as commands
    kinds = {m.text: m.kind for m in messages}
    assert kinds["!forget last"] is models.EventKind.COMMAND


# -- over the real memory operations ---------------------------------------------------------
async def test_commands_over_the_memory_operations(
    db: postgres.Database, make_settings: SettingsFactory
) -> None:
    from tests import test_consolidation as helpers
    from tests import test_operations

    mem = test_operations.Memory(db, make_settings(bot_name="mnemo"))
    await mem.turn(helpers.msg("m1", "alice", "I work as a graphic designer"))
    await mem.turn(helpers.msg("m2", "alice", "my cat is called Miso", second=10))
    await mem.turn(helpers.msg("m3", "bob", "I play the guitar", second=20))
    alice, bob = helpers.VIEWERS["alice"], helpers.VIEWERS["bob"]
    handler = memory_commands.build(make_settings(twitch={"command_cooldown_seconds": 0}), mem.ops)

    async def say(login: str, text: str, badges: tuple[str, ...] = ()) -> str | None:
        ev = helpers.msg(f"c{next(_ids)}", login, text, second=30)
        ev = dataclasses.replace(ev, kind=models.EventKind.COMMAND, badges=badges)
        return await handler.handle(ev, batch_of(ev))

    summary = await say("alice", "!memory")
    assert summary is not None and "Miso" in summary and "graphic designer" in summary
    [miso] = [r for r in await mem.personal(alice) if "Miso" in r.text]
    assert f"[{miso.id[:6]}]" in summary
    # bob cannot forget alice's memory, even by its id
    assert await say("bob", f"!forget {miso.id}") == "@bob I can't find that memory."
    # alice corrects it by its short id; the reply does not repeat the new text
    reply = await say("alice", f"!correct {miso.id[:6]} my cat is called Pepe")
    assert reply == "@alice done, that memory is corrected."
    texts = [r.text for r in await mem.personal(alice)]
    assert "my cat is called Pepe" in texts and "my cat is called Miso" not in texts
    # !forget last: her latest memory goes, the older one stays
    assert await say("alice", "!forget last") == "@alice done, I forgot 1 recent memory."
    assert [r.text for r in await mem.personal(alice)] == ["I work as a graphic designer"]
    # carla, a moderator, forgets all of bob, after confirming
    assert "confirm" in (await say("carla", "!forget @bob all", ("moderator",)) or "")
    await say("carla", "!forget @bob all confirm", ("moderator",))
    assert await mem.personal(bob) == []
    actors = {(row["actor"], row["action"]) for row in await mem.audit()}
    assert {("twitch:alice", "correct"), ("twitch:alice", "forget_memory")} <= actors
    assert ("twitch:carla", "forget_viewer") in actors
