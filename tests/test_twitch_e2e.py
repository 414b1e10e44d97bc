"""End to end: the REAL TwitchIO bot against the fake Twitch (Helix + OAuth + EventSub WebSocket on
127.0.0.1, base URLs from settings) and the fake Ollama, through the live session and pipeline.

Several viewers chat over the WebSocket; the bot answers through ``POST /helix/chat/messages``; a
429 is waited out, a reply over 500 characters is split, a dropped message is recorded, neither a
``session_reconnect`` nor a dropped socket loses a message, a command is answered apart from the model, and the
transcript holds the messages and the replies. Tokens go to Postgres, never to a file.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import TYPE_CHECKING

import pytest
import twitchio
import twitchio.eventsub.websockets as tio_websockets

from bot.twitch import client, credentials, deliveries, run, tokens
from memory import identity, models
from memory import runtime as services_module
from memory.ops import commands
from tests.fakes import commands as fake_commands
from tests.fakes import eventsub
from tests.fakes import twitch as fake_twitch

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from config.settings import Settings
    from tests.conftest import SettingsFactory
    from tests.fakes import ollama as fake_ollama_module

LONG_REPLY = " ".join(f"word{i}" for i in range(200))  # 1389 characters → 3 parts


@pytest.fixture
async def twitch_fake(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> AsyncIterator[fake_twitch.FakeTwitch]:
    # TwitchIO's base URLs are process globals: restore them after the test
    monkeypatch.setattr(twitchio.Route, "BASE", twitchio.Route.BASE)
    monkeypatch.setattr(twitchio.Route, "ID_BASE", twitchio.Route.ID_BASE)
    monkeypatch.setattr(tio_websockets, "WSS", tio_websockets.WSS)
    # TwitchIO writes its token file in the working directory: run in an empty one
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    fake = fake_twitch.FakeTwitch()
    await fake.start()
    yield fake
    await fake.stop()


def twitch_settings(
    make_settings: SettingsFactory, fake: fake_twitch.FakeTwitch, **extra: object
) -> Settings:
    return make_settings(
        twitch={
            "client_id": fake_twitch.CLIENT_ID,
            "client_secret": fake_twitch.CLIENT_SECRET,
            "bot_id": fake_twitch.BOT_ID,
            "owner_id": fake_twitch.OWNER_ID,
            "channels": [fake_twitch.OWNER_LOGIN],
            "user_token": "oauth:" + fake_twitch.USER_TOKEN,
            "refresh_token": fake_twitch.REFRESH_TOKEN,
            "api_base": fake.api_base,
            "id_base": fake.id_base,
            "eventsub_ws": fake.eventsub_ws,
            "command_cooldown_seconds": 0,
        },
        **extra,
    )


def say_event(text: str) -> models.ChatEvent:
    return models.ChatEvent(
        id="x", stream="777", user_id="1", login="v", text=text, ts=models.utcnow()
    )


def say(login: str, user_id: str, text: str, **kwargs: object) -> dict[str, object]:
    return eventsub.chat_event(user_id=user_id, login=login, text=text, **kwargs)  # type: ignore[arg-type]


async def test_live_chat_end_to_end(
    make_settings: SettingsFactory,
    twitch_fake: fake_twitch.FakeTwitch,
    fake_ollama: fake_ollama_module.FakeOllama,
    tmp_path: Path,
) -> None:
    fake = twitch_fake
    fake.live[fake_twitch.OWNER_ID] = "777"
    # one message a batch, so every viewer message is one turn and one reply (deterministic counts)
    settings = twitch_settings(
        make_settings, fake, ollama_host=fake_ollama.url, batch={"max_messages": 1}
    )
    memory = fake_commands.RecordingMemory(summaries={"3005": "plays bass"})
    fake_ollama.reply(LONG_REPLY)  # alice's turn
    fake_ollama.reply("@bob welcome!")  # bob's turn: dropped by Twitch
    stop = asyncio.Event()
    seen: dict[str, object] = {}

    async def scenario(bot: client.LiveMemoryBot) -> None:
        try:
            await drive(bot, fake, seen)
        finally:
            stop.set()

    async with services_module.lifespan(settings) as services:
        handler = commands.CommandHandler(memory, settings.twitch)
        services = dataclasses.replace(services, commands=handler)
        code = await asyncio.wait_for(
            run.run_bot(settings, services, stop=stop, ready=scenario), 45
        )
        turns = await services.transcript.turns("777")
        messages = await services.transcript.messages([m for t in turns for m in t.message_ids])
        log = deliveries.DeliveryLog(services.db)
        alice_turn = next(t for t in turns if t.reply == LONG_REPLY)
        alice_deliveries = await log.of_turn(alice_turn.id)
        bob_turn = next(t for t in turns if t.reply == "@bob welcome!")
        bob_deliveries = await log.of_turn(bob_turn.id)
        stored = await tokens.TokenStore(services.db).load()
        # the bot's real login, read from its token at start-up, addresses it
        assert services.reply is not None
        assert await services.reply.addresses(say_event(f"@{fake_twitch.BOT_LOGIN} hi"))
        assert services.planner is not None
        assert fake_twitch.BOT_LOGIN in services.planner.bot_words

    bot = seen["bot"]
    assert isinstance(bot, client.LiveMemoryBot)
    assert code == 0
    assert bot.listener_errors == []

    # every viewer message reached the transcript (the bot's own did not), in stream 777
    texts = {m.text for m in messages}
    assert texts == {
        "hi bot, I'm Alice",
        "hello from bob",
        "!memory",
        "dave: said during the reconnect",
        "erin: said after the reconnect",
        "frank: back after the drop",
    }
    assert {m.stream for m in messages} == {"777"}

    # the long reply went out in three parts of at most 500 characters, words intact
    sent_texts = [body["message"] for body in fake.sent]
    long_parts = [t for t in sent_texts if t.startswith("word") or " word" in t]
    assert len(long_parts) == 3 and all(len(p) <= 500 for p in long_parts)
    assert " ".join(long_parts) == LONG_REPLY
    assert all(
        body["broadcaster_id"] == "2002" and body["sender_id"] == "1001" for body in fake.sent
    )

    # the 429 on its first part was waited out and retried; deliveries recorded per part
    assert [(d["part"], d["status"], d["attempts"]) for d in alice_deliveries] == [
        (0, "sent", 2),
        (1, "sent", 1),
        (2, "sent", 1),
    ]
    assert [(d["status"], d["error"], d["attempts"]) for d in bob_deliveries] == [
        ("dropped", "msg_duplicate", 1)
    ]
    # the reply Twitch dropped is still in the transcript
    assert bob_turn.reply == "@bob welcome!"

    # the command was answered apart, and never sent to the model
    assert "@carol what I remember about you: plays bass" in sent_texts
    assert memory.calls == [("summary", "3005")]
    prompts = " ".join(m["content"] for r in fake_ollama.chat_requests for m in r["messages"])
    assert "!memory" not in prompts and "hello from bob" in prompts

    # session_reconnect then a dropped socket: a new session id each time, every message answered
    assert seen["sessions"] == 3
    assert any("said during the reconnect" in t for t in sent_texts)
    assert any("said after the reconnect" in t for t in sent_texts)
    assert any("back after the drop" in t for t in sent_texts)

    # tokens: in Postgres, never in a file in the working directory
    assert [t.user_id for t in stored] == ["1001"]
    assert stored[0].token.get_secret_value() == fake_twitch.USER_TOKEN
    assert list((tmp_path / "cwd").iterdir()) == []


async def drive(
    bot: client.LiveMemoryBot, fake: fake_twitch.FakeTwitch, seen: dict[str, object]
) -> None:
    seen["bot"] = bot
    await fake.wait_subscriptions(1)
    [sub] = fake.subscriptions
    assert sub["condition"] == {"broadcaster_user_id": "2002", "user_id": "1001"}
    assert bot.channels["2002"].stream == "777"

    # alice: a 429 then a long reply split in three
    fake.rate_limit_next(reset_epoch=time.time())
    await fake.push_chat(say("alice", "3003", "hi bot, I'm Alice"))
    await fake.wait_sent(3)
    # the bot's own message: ignored as chat, its moderator badge raises the rate limit
    await fake.push_chat(say("memorybot", "1001", "a message of mine", badges=("moderator",)))
    # bob's reply is dropped by Twitch (duplicate)
    fake.drop_next("msg_duplicate")
    await fake.push_chat(say("bob", "3004", "hello from bob", badges=("subscriber",)))
    # carol's command is answered by the command handler
    await fake.push_chat(say("carol", "3005", "!memory"))
    await fake.wait_sent(4)
    assert bot.is_privileged("2002")

    # session_reconnect: dave speaks on the old socket before the new one is welcomed
    old = await fake.reconnect()
    await fake.push_chat(say("dave", "3006", "dave: said during the reconnect"), connection=old)
    await fake.wait_connections(2)
    await fake.push_chat(say("erin", "3007", "erin: said after the reconnect"))
    await fake.wait_sent(6)

    # a dropped socket: TwitchIO connects again and subscribes on the new session
    await fake.drop_socket()
    await fake.wait_connections(3)
    await fake.wait_subscriptions(2)
    await fake.push_chat(say("frank", "3008", "frank: back after the drop"))
    await fake.wait_sent(7)
    seen["sessions"] = len({c.session_id for c in fake.connections})


@pytest.mark.parametrize("in_thread", [True, False], ids=["in its reply thread", "in chat"])
async def test_an_answer_to_the_bot_s_question_is_remembered_with_it(
    make_settings: SettingsFactory,
    twitch_fake: fake_twitch.FakeTwitch,
    fake_ollama: fake_ollama_module.FakeOllama,
    in_thread: bool,
) -> None:
    """The bot asks alice what she does, bob says hi, and alice answers ("@memorybot a nurse, six
    years now"): in the reply thread under the bot's message, as Twitch's clients send it, or as
    her next message in chat. Consolidated, her answer is her memory, with the bot's question it
    answers. Bob's turn is answered after alice's reply was delivered and recorded (one turn after
    another), so her answer arrives after both, as in chat."""
    fake = twitch_fake
    fake.live[fake_twitch.OWNER_ID] = "777"
    settings = twitch_settings(
        make_settings, fake, ollama_host=fake_ollama.url, batch={"max_messages": 1}
    )
    question = "@alice welcome! what do you do for work?"
    for reply in (question, "@bob hey there!", "@alice a nurse, lovely!"):
        fake_ollama.reply(reply)
    answer = f"@{fake_twitch.BOT_LOGIN} a nurse, six years now"
    stop = asyncio.Event()

    async def scenario(bot: client.LiveMemoryBot) -> None:
        try:
            await fake.wait_subscriptions(1)
            await fake.push_chat(say("alice", "3003", f"@{fake_twitch.BOT_LOGIN} hi, first time"))
            await fake.wait_sent(1)
            await fake.push_chat(say("bob", "3004", f"@{fake_twitch.BOT_LOGIN} hey"))
            await fake.wait_sent(2)
            thread = eventsub.thread_reply(
                fake.sent_ids[0], question, fake_twitch.BOT_ID, fake_twitch.BOT_LOGIN
            )
            await fake.push_chat(
                say("alice", "3003", answer, reply_to=thread if in_thread else None)
            )
            await fake.wait_sent(3)
        finally:
            stop.set()

    async with services_module.lifespan(settings) as services:
        code = await asyncio.wait_for(
            run.run_bot(settings, services, stop=stop, ready=scenario), 45
        )
        await services.worker.run_until_empty()
        memories = await services.spaces.list(identity.personal_key("3003"))

    assert code == 0
    [memory] = [m for m in memories if m.text == answer]
    assert memory.context_question == "what do you do for work?"
    assert memory.context_message_id == fake.sent_ids[0]


async def test_missing_credential_exits_2_naming_it(
    make_settings: SettingsFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = make_settings(twitch={"client_id": "x", "client_secret": "y", "channels": ["owner"]})
    assert await run.main(settings) == credentials.EXIT_CREDENTIALS
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: Twitch credential missing: LIVEMEMORY_TWITCH__BOT_ID is not set"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"client_secret": "wrong"},
            "LIVEMEMORY_TWITCH__CLIENT_SECRET or LIVEMEMORY_TWITCH__CLIENT_ID was refused",
        ),
        (
            {"user_token": "not-a-token", "refresh_token": "nope"},
            "LIVEMEMORY_TWITCH__USER_TOKEN was refused",
        ),
        ({"user_token": None}, "LIVEMEMORY_TWITCH__USER_TOKEN is not set"),
        ({"bot_id": "2002"}, "belongs to user 1001, not to the bot account 2002"),
        ({"channels": ["nobody"]}, "LIVEMEMORY_TWITCH__CHANNELS name an unknown channel"),
    ],
)
async def test_invalid_credential_exits_2_with_one_line(
    make_settings: SettingsFactory,
    twitch_fake: fake_twitch.FakeTwitch,
    capsys: pytest.CaptureFixture[str],
    change: dict[str, object],
    expected: str,
) -> None:
    base = twitch_settings(make_settings, twitch_fake)
    settings = make_settings(twitch={**base.twitch.model_dump(), **change})
    async with services_module.lifespan(settings) as services:
        code = await asyncio.wait_for(run.run_bot(settings, services), 30)
    assert code == credentials.EXIT_CREDENTIALS
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0], err


async def test_stream_session_is_the_live_stream_else_temporary(
    make_settings: SettingsFactory, twitch_fake: fake_twitch.FakeTwitch
) -> None:
    settings = twitch_settings(make_settings, twitch_fake)

    async def sink(event: object) -> None:
        raise AssertionError("no chat expected")

    async with client.LiveMemoryBot(settings, on_chat=sink) as bot:
        stream, temporary = await bot._stream_of(fake_twitch.OWNER_ID)
        assert temporary and stream.startswith("tmp-")
        twitch_fake.live[fake_twitch.OWNER_ID] = "4242"
        assert await bot._stream_of(fake_twitch.OWNER_ID) == ("4242", False)
