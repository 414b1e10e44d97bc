"""Forget means forgotten, everywhere.

A viewer says a unique string; it reaches the transcript, the working history (Redis), the turn
reports, a channel-state note about her and its tool-call row, her personal memory and profile,
episodic memory, and — recalled — a later prompt to the fake Ollama and the bot's (echoing) replies.
Then she is forgotten: by ``!forget me`` + confirm, by a moderator's ``!forget @alice all`` +
confirm, or by ``python -m memory.admin forget --viewer alice --everywhere``. Afterwards a scan of
every text/json column of every Postgres table of the test database, every key of the test's Redis
database and the bytes of every file of the data folder (embedded Qdrant's storage, the ingest
spool) finds the string nowhere, and the next turn's prompt does not contain it.
"""

from __future__ import annotations

import io
import json
import uuid
from typing import TYPE_CHECKING, Any

import pytest

from memory import migrate, models, session
from memory import runtime as services_module
from memory.adapters import qdrant_collections
from memory.history import transcript
from memory.ops import admin
from tests import chatlines, scan
from tests import test_consolidation as helpers

if TYPE_CHECKING:
    from config import settings as settings_module
    from memory.adapters import postgres
    from tests.conftest import SettingsFactory
    from tests.fakes import ollama as fake_ollama_module

chat = chatlines.chat
MOD = ("moderator",)


class Channel:
    """A replayed channel over the real services, its turn reports and the prompts sent."""

    def __init__(self, settings: settings_module.Settings, fake: fake_ollama_module.FakeOllama):
        self.settings = settings
        self.fake = fake
        self.reports: list[models.TurnReport] = []

    async def deliver(self, report: models.TurnReport) -> None:
        self.reports.append(report)

    async def run(self, *events: models.ChatEvent, script: Any = None) -> None:
        async with services_module.lifespan(self.settings) as services:
            runner = session.Replay(
                services, self.deliver, commands=services.commands, sync_consolidation=True
            )
            for event in events:
                if script is not None and event.id in script:
                    script[event.id]()
                await runner.feed(event)
            await runner.finish()
            await runner.consolidate_now()

    def replies(self) -> dict[str, str]:
        return {r.message_ids[-1]: r.reply or "" for r in self.reports}

    def prompts(self, since: int = 0) -> str:
        return " ".join(str(request) for request in self.fake.chat_requests[since:])


@pytest.mark.parametrize("how", ["forget me", "moderator", "admin", "forget me, no Redis"])
async def test_a_forgotten_viewers_words_are_nowhere(
    how: str,
    make_settings: SettingsFactory,
    fake_ollama: fake_ollama_module.FakeOllama,
    redis_url: str,
) -> None:
    secret = f"zq{uuid.uuid4().hex[:12]}"
    prefix = f"lmtest:{uuid.uuid4().hex[:8]}:"
    shared = how != "forget me, no Redis"  # else the in-process cache and working history
    settings = make_settings(
        ollama_host=fake_ollama.url,
        redis_url=redis_url if shared else None,
        redis={"key_prefix": prefix},
        # a short prompt history: bob's question gets alice's words from memory, not from chat
        history={"max_messages": 2},
    )
    channel = Channel(settings, fake_ollama)
    note = {"about": "alice", "text": f"alice's secret word is {secret}"}
    await channel.run(
        chat(0, "alice", f"Mnemo, my secret word is {secret}"),
        chat(1, "alice", "Mnemo, please write that down about me"),
        chat(2, "bob", "Mnemo, hi there"),
        chat(3, "bob", "Mnemo, what is alice's secret word?"),
        script={"m2": lambda: fake_ollama.call_tool("add_note", note)},
    )
    # everywhere first: the transcript, a state note and its tool call, memory, prompts, replies
    async with migrate.open_database(settings) as db:
        stored = await scan.postgres_hits(db, secret)
        assert {
            "messages.text: " + secret,
            "state_notes.text: " + secret,
            "turn_tool_calls.arguments: " + secret,
            "turn_outcomes.report: " + secret,
        } <= set(stored), stored
    assert await scan.redis_hits(redis_url, prefix, secret) or not shared
    assert scan.file_hits(qdrant_collections.embedded_root(settings), secret)
    recalled = [r for r in channel.reports if any(secret in i.text for i in r.recall)]
    assert recalled and recalled[-1].message_ids == ["m3"], "bob's question recalls it"
    assert secret in channel.prompts()

    if how == "admin":
        out, err = io.StringIO(), io.StringIO()
        argv = ["forget", "--viewer", "alice", "--everywhere", "--yes"]
        code = await admin.run(argv, settings=settings, stdin=io.StringIO(), stdout=out, stderr=err)
        assert (code, err.getvalue()) == (0, ""), out.getvalue()
        done = [chat(6, "carla", "Mnemo, good evening")]
    else:
        who, badges = ("mod", MOD) if how == "moderator" else ("alice", ())
        what = "!forget @alice all" if how == "moderator" else "!forget me"
        done = [
            chat(4, who, what, badges=badges),
            chat(5, who, f"{what} confirm", badges=badges),
            chat(6, "carla", "Mnemo, good evening"),
        ]
    asked = len(fake_ollama.chat_requests)
    # from now on the whole working history goes into the prompt: a line of alice left in it shows
    history = settings.history.model_copy(update={"max_messages": 50})
    channel.settings = settings.model_copy(update={"history": history})
    await channel.run(*done, chat(7, "bob", "Mnemo, what is alice's secret word?"))
    if how != "admin":
        about = "about @alice" if how == "moderator" else "about you"
        assert channel.replies()["m5"].endswith(f"I forgot everything {about}.")

    later = channel.prompts(asked)
    assert later and secret not in later  # the next turns' prompts
    assert secret not in " ".join(channel.replies().get(m, "") for m in ("m6", "m7"))
    async with migrate.open_database(settings) as db:
        assert await scan.postgres_hits(db, secret) == []
        erasure = await db.pool.fetchrow("SELECT actor, scope, user_id, counts FROM erasures")
        assert erasure is not None and (erasure["scope"], erasure["user_id"]) == (
            "viewer",
            "id-alice",
        )
        actors = {"moderator": "twitch:mod", "admin": "admin:cli"}
        assert erasure["actor"] == actors.get(how, "twitch:alice")
        # other viewers' words stay
        assert (
            await db.pool.fetchval("SELECT text FROM messages WHERE id = 'm2'") == "Mnemo, hi there"
        )
    assert await scan.redis_hits(redis_url, "", secret) == []  # every key of the database
    assert scan.file_hits(settings.data_dir, secret) == []


async def test_later_previews_are_erased_while_the_history_could_show_the_viewer(
    db: postgres.Database,
) -> None:
    """With a working history of 2 items, a message can be in the prompts of the turns until two
    more messages came: those previews are erased, later ones kept (and every one with ``None``)."""
    store = transcript.Transcript(db)
    turns = []
    for n, login in enumerate(["alice", "bob", "bob", "bob"], start=1):
        event = helpers.msg(f"m{n}", login, f"{login} says thing {n}", second=n)
        await store.append_events([event])
        turn_id = await store.start_turn("s1", [event.id])
        await store.finish_turn(
            turn_id,
            stream="s1",
            status=models.TurnStatus.COMPLETED,
            reply="ok",
            error=None,
            ts=event.ts,
            report={"prompt": {"preview": f"history up to thing {n}"}},
            consolidate=False,
        )
        turns.append(turn_id)
    counts = json.loads(
        await db.pool.fetchval("SELECT erase_viewer('1001', 'admin:test', 'forget', 2)")
    )
    assert (counts["turns"], counts["previews"]) == (1, 1)
    previews = [
        await db.pool.fetchval(
            "SELECT report -> 'prompt' ->> 'preview' FROM turn_outcomes WHERE turn_id = $1", t
        )
        for t in turns
    ]
    assert previews == ["[erased]", "[erased]", "history up to thing 3", "history up to thing 4"]
    await db.pool.fetchval("SELECT erase_viewer('1001', 'admin:test', 'forget', NULL)")
    assert (
        await db.pool.fetchval(
            "SELECT count(*) FROM turn_outcomes WHERE report -> 'prompt' ->> 'preview' = '[erased]'"
        )
        == 4
    )
