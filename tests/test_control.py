"""The bot's admin endpoint in-process (``memory.ops.control_server``): a forwarded command prints
what the same command prints standalone, asks its question through the admin command, acts on the
bot's own caches; a request without the token is refused; the control file is private and goes
when the bot stops."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from typing import TYPE_CHECKING

import pytest

from memory import models, runtime
from memory.ops import admin_io, control, control_client, control_server
from tests import test_admin as admin_tests

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from config import settings as settings_module

settings = admin_tests.settings
stream = admin_tests.stream
run = admin_tests.run

WAITED = re.compile(r"(?<=waits )[\d.]+|(?<=\"oldest_todo_seconds\": )[\d.]+")
#: commands whose output is compared standalone and forwarded (nothing changes in between)
READING = [
    ("inspect", "--viewer", "alice"),
    ("inspect", "--viewer", "alice", "--json"),
    ("export", "--user-id", "1001"),
    ("list", "viewers", "--json"),
    ("list", "streams"),
    ("jobs", "--json"),
    ("jobs", "--status", "todo"),
    ("audit",),
    ("inspect", "--viewer", "nobody"),
    ("forget", "--viewer", "alice", "--dry-run"),
    ("forget", "--viewer", "alice", "--dry-run", "--json"),
    ("lore", "load", "/no/such/folder", "--yes"),
    ("correct", "--memory-id", "zz", "--text", "x", "--yes"),
    ("jobs", "retry", "999999"),
    ("pause", "--stream", "nope"),
]


@contextlib.asynccontextmanager
async def bot(
    settings: settings_module.Settings,
) -> AsyncIterator[tuple[runtime.Services, control.Control]]:
    """The bot's services and its admin endpoint (as ``bot.hosting`` opens them)."""
    async with runtime.lifespan(settings, role="admin", no_llm=True) as services:
        admin_services = admin_io.AdminServices(
            db=services.db, ops=services.operations, settings=settings
        )
        async with control_server.hosting(admin_services) as held:
            yield services, held


async def test_a_forwarded_command_prints_what_it_prints_standalone(
    settings: settings_module.Settings, stream: list[str]
) -> None:
    standalone = [await run(settings, *argv) for argv in READING]
    async with bot(settings):
        forwarded = [await run(settings, *argv) for argv in READING]
    for argv, alone, there in zip(READING, standalone, forwarded, strict=True):
        assert _steady(alone) == _steady(there), argv
    assert [code for code, _, _ in forwarded] == [0] * 8 + [1, 0, 0, 1, 1, 1, 1]


def _steady(result: tuple[int, str, str]) -> tuple[int, str, str]:
    """The result with the seconds the oldest job has waited (they grow between two runs) out."""
    code, out, err = result
    return code, WAITED.sub("<seconds>", out), err


async def test_the_question_is_asked_through_the_admin_command(
    settings: settings_module.Settings, stream: list[str]
) -> None:
    async with bot(settings) as (services, _):
        [designer, miso] = await services.operations.inspect("1001")
        assert miso.text == "my cat is called Miso"
        # the bot's retriever has the memory in its in-process cache: the forget must clear it
        assert miso.id in {h.record.id for h in await services.operations.search_own("1001", "cat")}
        code, out, err = await run(settings, "forget", "--memory-id", miso.id[:6], stdin="no\n")
        assert (code, out) == (1, "")
        assert err == (
            f"forget memory {miso.id} in viewer:1001: 'my cat is called Miso'\n"
            "Go ahead? [y/N] aborted: nothing changed\n"
        )
        code, out, _ = await run(
            settings, "--actor", "admin:mia", "forget", "--memory-id", miso.id, stdin="y\n"
        )
        assert (code, out) == (0, f"forgot=memory memory_id={miso.id} space=viewer:1001\n")
        hits = await services.operations.search_own("1001", "what is my cat called Miso")
        assert [h.record.id for h in hits] == [designer.id]
        for command, said in (("pause", "paused"), ("resume", "resumed")):
            code, out, _ = await run(settings, command, "--stream", "s1")
            assert (code, out) == (0, f"stream s1: {said}\n")
        audit = await services.operations.audit_log(5)
        assert [(r["actor"], r["action"]) for r in reversed(audit)] == [
            ("admin:mia", "forget_memory"),
            ("admin:cli", "pause"),
            ("admin:cli", "resume"),
        ]


async def test_a_request_without_the_token_is_refused(
    settings: settings_module.Settings, stream: list[str]
) -> None:
    async with bot(settings) as (_, held):
        malformed = {"refused": "malformed request (argv is a list of strings)"}
        for request, answer in (
            ({"argv": ["audit"]}, {"refused": "wrong or missing token"}),
            ({"token": "guess", "argv": ["audit"]}, {"refused": "wrong or missing token"}),
            ({"token": "gués", "argv": ["audit"]}, {"refused": "wrong or missing token"}),
            ({"token": 7, "argv": ["audit"]}, {"refused": "wrong or missing token"}),
            ({"token": held.token, "argv": "audit"}, malformed),
        ):
            reader, writer = await asyncio.open_connection(held.host, held.port)
            control.send(writer, **request)
            await writer.drain()
            assert await control.receive(reader) == answer
            assert await control.receive(reader) is None  # and the connection is closed
            writer.close()
        code, out, err = await run(settings, "sign-in-link")
        assert (code, out) == (1, "") and err.startswith("error: this bot has no local sign-in")
        code, out, err = await run(settings, "reembed", "--all", "--yes")
        assert (code, out) == (1, "")
        assert err == (
            "error: reembed rebuilds the collections this running bot holds open: stop the "
            "bot, then run it again\n"
        )


async def test_the_control_file_is_private_and_goes_with_the_bot(
    settings: settings_module.Settings, stream: list[str]
) -> None:
    path = control.path(settings.data_dir)
    async with bot(settings) as (_, held):
        assert path.stat().st_mode & 0o777 == 0o600
        assert json.loads(path.read_text())["token"] == held.token
        assert held.host == "127.0.0.1"
        with pytest.raises(control.BotHoldsFolder, match="another bot"):
            await control_client.refuse_second_bot(settings.data_dir)
    assert not path.exists()
    await control_client.refuse_second_bot(settings.data_dir)  # nobody holds it now
    code, out, err = await run(settings, "sign-in-link")
    assert (code, out) == (1, "")
    assert err == f"error: sign-in-link: no bot runs on the data folder {settings.data_dir}\n"


async def test_a_control_file_of_another_machine_is_left_alone(
    settings: settings_module.Settings, stream: list[str]
) -> None:
    """A data folder shared with another container (a docker volume): its bot is out of
    127.0.0.1's reach, so the command runs on its own and leaves the file there."""
    other = control.Control(
        pid=1, host=control.LOOPBACK, port=1, token="t", machine="another-container"
    )
    path = control.write(settings.data_dir, other)
    code, out, err = await run(settings, "audit")
    assert (code, out, err) == (0, "no audit rows\n", "")
    assert path.exists()
    await control_client.refuse_second_bot(settings.data_dir)
    assert control.read(settings.data_dir) == other


async def test_a_forwarded_forget_everywhere_empties_the_bots_own_working_history(
    settings: settings_module.Settings, stream: list[str]
) -> None:
    """Without Redis the working history lives in the bot's process: only a forget run there
    reaches it."""
    async with bot(settings) as (services, _):
        said = [
            models.HistoryItem(
                role=models.Role.USER, text=text, ts=models.utcnow(), user_id=user, message_id=m
            )
            for text, user, m in (
                ("my cat is called Miso", "1001", "m3"),
                ("Alice lives in Rome", "1002", "m1"),
            )
        ]
        await services.history.append("s1", said)
        code, out, err = await run(settings, "forget", "--viewer", "alice", "--everywhere", "--yes")
        assert (code, err) == (0, ""), out
        assert [i.text for i in await services.history.recent("s1")] == ["Alice lives in Rome"]
