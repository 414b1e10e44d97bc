"""Addressing the bot the way viewers do: ``@Mnemo``, ``@mnemo,``, ``ciao @Mnemo``,
``Mnemo?`` — and never ``@mnemo_fan`` or ``mnemonic``. A viewer called like the persona is a
viewer: the bot's user id tells its own lines apart."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from config import settings as settings_module
from memory import models, reply, session
from memory import runtime as services_module
from memory.recall import planner
from tests import chatlines, cli, conftest

if TYPE_CHECKING:
    from pathlib import Path

    from tests.conftest import SettingsFactory
    from tests.fakes import ollama as fake_ollama_module

chat = chatlines.chat

#: (message, addressed?) with the persona ``Mnemo`` and the console's default login ``mnemo``
TABLE = [
    ("@Mnemo what does alice do?", True),
    ("@mnemo, what does alice do?", True),
    ("@MNEMO hi", True),
    ("hey @mnemo, come va?", True),
    ("ciao @Mnemo", True),
    ("ciao @Mnemo!", True),
    ("grazie @mnemo.", True),
    ("Mnemo?", True),
    ("mnemo ti ricordi di me?", True),
    ("do you remember my cat, Mnemo", True),
    ("(@Mnemo) lol", True),
    ("@mnemo_fan hi", False),
    ("ciao @mnemo_fan, come stai?", False),
    ("mnemonic devices are cool", False),
    ("le tecniche mnemoniche funzionano", False),
    ("write to mnemo@example.com", False),
    ("@alice what does bob do?", False),
    ("ciao a tutti", False),
    ("", False),
]


@pytest.mark.parametrize(("text", "addressed"), TABLE)
@pytest.mark.parametrize("login", [None, "mnemo", "mnemo_bot"])
async def test_addressed_and_not_addressed(text: str, addressed: bool, login: str | None) -> None:
    policy = reply.ReplyPolicy(settings_module.ReplySettings(), bot_name="Mnemo", bot_login=login)
    assert await policy.addresses(chat(0, "viewer", text)) is addressed


@pytest.mark.parametrize(
    ("text", "addressed"),
    [("@mnemo_bot hi", True), ("grazie @Mnemo_Bot!", True), ("mnemo_bot?", True)],
)
async def test_the_bot_login_addresses_it_too(text: str, addressed: bool) -> None:
    policy = reply.ReplyPolicy(
        settings_module.ReplySettings(), bot_name="Mnemo", bot_login="mnemo_bot"
    )
    assert await policy.addresses(chat(0, "viewer", text)) is addressed


def _sixty() -> list[models.ChatEvent]:
    """50 unaddressed messages and 10 addressed with ``@Mnemo`` (each by another viewer)."""
    addressing = [
        "@Mnemo what does alice do?",
        "@mnemo, do you remember my cat?",
        "ciao @Mnemo",
        "@MNEMO hi",
        "hey @mnemo what game is this?",
    ]
    events = []
    for n in range(60):
        if n % 6 == 5:
            events.append(chat(n, f"fan{n // 6}", addressing[(n // 6) % len(addressing)]))
        else:
            events.append(chat(n, f"viewer{n % 7}", f"lol that jump was wild {n}"))
    return events


async def test_a_replay_of_at_mnemo_gets_exactly_its_ten_replies(
    make_settings: SettingsFactory, fake_ollama: fake_ollama_module.FakeOllama
) -> None:
    """The default policy, no bot login set: ``@Mnemo`` is enough."""
    default = settings_module.ReplySettings()
    settings = make_settings(ollama_host=fake_ollama.url, reply=default.model_dump())
    assert settings.bot_login is None and settings.reply.policy == "addressed"
    reports: list[models.TurnReport] = []

    async def deliver(report: models.TurnReport) -> None:
        reports.append(report)

    events = _sixty()
    async with services_module.lifespan(settings) as services:
        runner = session.Replay(services, deliver, commands=services.commands)
        for event in events:
            await runner.feed(event)
        await runner.finish()

    spoke = [r for r in reports if r.reply]
    assert len(reports) == 60 and len(spoke) == 10
    assert {r.message_ids[0] for r in spoke} == {e.id for e in events if e.login.startswith("fan")}
    assert {r.reason for r in reports if not r.reply} == {reply.NOT_ADDRESSED}
    assert fake_ollama.chat_calls() == 10


def test_bot_replay_addresses_at_mnemo_with_the_default_login(
    env: dict[str, str], tmp_path: Path
) -> None:
    """``python -m bot replay`` as a user runs it: one line says which login it took."""
    transcript = tmp_path / "sixty.jsonl"
    transcript.write_text(
        "".join(
            json.dumps(
                {
                    "ts": e.ts.isoformat(),
                    "stream": e.stream,
                    "id": e.id,
                    "user_id": e.user_id,
                    "login": e.login,
                    "text": e.text,
                }
            )
            + "\n"
            for e in _sixty()
        )
    )
    default_policy = {k: v for k, v in env.items() if k != "LIVEMEMORY_REPLY__POLICY"}
    result = cli.run(
        "bot", "replay", str(transcript), "--json", "--no-llm", env=default_policy, cwd=tmp_path
    )
    assert result.code == 0, result.err
    turns = [json.loads(line) for line in result.out.splitlines() if line.strip()]
    assert len(turns) == 60
    assert sum(t["reason"] == reply.ADDRESSED for t in turns) == 10
    assert "bot login @mnemo (the persona name" in result.err


def test_a_viewer_called_like_the_persona_is_a_viewer() -> None:
    """Only the bot's user id makes a line the bot's own."""
    settings = conftest.IsolatedSettings(twitch={"bot_id": "4242"})
    plans = planner.Planner(settings)
    viewer = chat(0, "mnemo", "I moved to Turin, do you remember where I lived before?")
    assert plans.viewers_of(viewer) == ["id-mnemo"]
    assert [
        v.login for v in plans.plan(models.Batch(stream="s1", events=(viewer,)), []).viewers
    ] == ["mnemo"]
    own = chatlines.chat(1, "mnemo_bot", "hi @alice", user_id="4242")
    assert plans.viewers_of(own) == []


def test_the_login_learnt_from_the_token_is_a_word_for_the_bot_in_planning() -> None:
    """A bot account whose login is not its persona's name (``@helperbot`` for Mnemo): once the
    token tells it, a question to ``@helperbot`` about its tastes is for the lore, not a search of
    the asker's own memories."""
    settings = conftest.IsolatedSettings(twitch={"bot_id": "4242"})
    batch = models.Batch(
        stream="s1", events=(chat(0, "alice", "@helperbot what is your favourite food?"),)
    )
    plans = planner.Planner(settings)
    before = plans.plan(batch, [])
    assert {s.kind for s in before.sources} == {"profile", "recall"}
    plans.add_bot_login("HelperBot")
    after = plans.plan(batch, [])
    assert {s.kind for s in after.sources} == {"episodic", "lore"}
    assert "bot_mention" in after.viewers[0].signals
