"""Real chat logs in: TwitchDownloader JSON, chat-downloader JSON (array and lines), IRC logs — each
read, replayed and imported. The files are small synthetic ones written here."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from bot import importer
from memory import errors, runtime
from memory.history import chatlogs
from tests import cli

if TYPE_CHECKING:
    from pathlib import Path

    from tests.conftest import SettingsFactory


def twitchdownloader(path: Path) -> Path:
    comment = {
        "_id": "c1",
        "created_at": "2026-11-29T20:00:01.5Z",
        "content_offset_seconds": 1.5,
        "commenter": {"display_name": "Alice", "_id": "1001", "name": "alice"},
        "message": {
            "body": "I work as a graphic designer",
            "user_badges": [
                {"_id": "founder", "version": "0"},
                {"_id": "artist-badge", "version": "1"},
            ],
            "fragments": [{"text": "I work as a graphic designer", "emoticon": None}],
        },
    }
    second = {
        **comment,
        "_id": "c2",
        "created_at": "2026-11-29T20:00:04Z",
        "commenter": {"display_name": "Bob", "_id": "1002", "name": "bob"},
        "message": {
            "body": "my dog is called Rex",
            "user_badges": [{"_id": "moderator", "version": "1"}],
        },
    }
    data = {
        "FileInfo": {"Version": {"Major": 1, "Minor": 4, "Patch": 0}},
        "streamer": {"name": "streamer", "id": 9000},
        "video": {"id": "2300000001", "title": "a past stream", "start": 0, "end": 3600},
        "comments": [comment, second],
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def chat_downloader_items() -> list[dict[str, Any]]:
    base = datetime(2026, 11, 29, 20, 0, 1, tzinfo=UTC).timestamp()
    return [
        {
            "message_id": "d1",
            "message": "I moved to Turin last month",
            "timestamp": int(base * 1_000_000),
            "time_in_seconds": 1.0,
            "message_type": "text_message",
            "author": {
                "id": "1001",
                "name": "alice",
                "display_name": "Alice",
                "badges": [{"name": "subscriber", "title": "6-Month Subscriber", "version": 6}],
            },
        },
        {"message_id": "x", "message_type": "ban_user", "timestamp": int(base * 1_000_000) + 1},
        {
            "message_id": "d2",
            "message": "!memory",
            "timestamp": int((base + 3) * 1_000_000),
            "time_in_seconds": 4.0,
            "message_type": "text_message",
            "author": {"id": "1002", "name": "bob", "display_name": "Bob"},
        },
    ]


def irc_log(path: Path) -> Path:
    path.write_text(
        "# Start of log\n"
        "[20:00:01] <alice> I play the cello in an orchestra\n"
        "[20:00:02] *** bob joined #streamer\n"
        "[20:00:03] <@bob> my favourite food is lasagna\n"
        "[23:59:59] <alice> late night\n"
        "[00:00:05] <alice> after midnight\n",
        encoding="utf-8",
    )
    return path


def test_twitchdownloader_json(tmp_path: Path) -> None:
    path = twitchdownloader(tmp_path / "vod.json")
    assert chatlogs.detect(path) == "twitchdownloader"
    alice, bob = chatlogs.read(path)
    assert (alice.id, alice.stream, alice.user_id, alice.login, alice.name) == (
        "c1",
        "vod-2300000001",
        "1001",
        "alice",
        "Alice",
    )
    assert alice.badges == ("founder", "artist-badge")
    assert alice.ts == datetime(2026, 11, 29, 20, 0, 1, 500000, tzinfo=UTC)
    assert bob.is_moderator and bob.text == "my dog is called Rex"


@pytest.mark.parametrize("layout", ["array", "lines"])
def test_chat_downloader_json(tmp_path: Path, layout: str) -> None:
    items = chat_downloader_items()
    path = tmp_path / "chat.json"
    if layout == "array":
        path.write_text(json.dumps(items))
    else:
        path.write_text("\n".join(json.dumps(i) for i in items) + "\n")
    assert chatlogs.detect(path) == "chat-downloader"
    alice, command = chatlogs.read(path, stream="s9")
    assert (alice.id, alice.stream, alice.user_id, alice.badges) == (
        "d1",
        "s9",
        "1001",
        ("subscriber",),
    )
    assert alice.ts == datetime(2026, 11, 29, 20, 0, 1, tzinfo=UTC)
    assert command.is_command and command.login == "bob"


def test_irc_log_takes_its_date_from_the_file_name(tmp_path: Path) -> None:
    path = irc_log(tmp_path / "#streamer-2026-11-29.log")
    assert chatlogs.detect(path) == "irc"
    events = list(chatlogs.read(path))
    assert [(e.login, e.text) for e in events] == [
        ("alice", "I play the cello in an orchestra"),
        ("bob", "my favourite food is lasagna"),
        ("alice", "late night"),
        ("alice", "after midnight"),
    ]
    assert events[0].user_id == events[2].user_id == "irc-alice"
    assert events[1].badges == ("moderator",)
    assert events[0].ts == datetime(2026, 11, 29, 20, 0, 1, tzinfo=UTC)
    assert events[3].ts == datetime(2026, 11, 30, 0, 0, 5, tzinfo=UTC)  # crossed midnight
    assert len({e.id for e in events}) == 4 and events[0].stream == "log-#streamer-2026-11-29"


def test_irc_log_with_full_timestamps_and_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "znc.log"
    path.write_text("[2026-11-29 20:00:01] <alice> hello there\n")
    [event] = chatlogs.read(path, stream="s1")
    assert event.ts == datetime(2026, 11, 29, 20, 0, 1, tzinfo=UTC)
    undated = tmp_path / "chat.log"
    undated.write_text("[20:00:01] <alice> hello\n")
    with pytest.raises(errors.TranscriptLineError, match="name the file after its day"):
        list(chatlogs.read(undated))


def test_a_broken_item_names_its_number_after_the_good_ones(tmp_path: Path) -> None:
    items = chat_downloader_items()
    del items[2]["author"]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(items))
    read = chatlogs.read(path)
    assert next(read).id == "d1"
    with pytest.raises(errors.TranscriptLineError) as raised:
        next(read)
    assert str(raised.value) == f"{path}:3: message: missing field 'author'"


def test_the_projects_jsonl_accepts_any_twitch_badge(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    line = {
        "ts": "2026-11-29T20:00:01Z",
        "stream": "s1",
        "id": "m1",
        "user_id": "1001",
        "login": "alice",
        "badges": ["founder", "artist-badge", "Moderator"],
        "text": "hi",
    }
    path.write_text(json.dumps(line) + "\n")
    [event] = chatlogs.read(path)
    assert event.badges == ("founder", "artist-badge", "moderator") and event.is_moderator
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**line, "badges": ["no spaces allowed"]}) + "\n")
    with pytest.raises(errors.TranscriptLineError, match="badge"):
        list(chatlogs.read(bad))


def _env(database_url: str, tmp_path: Path) -> dict[str, str]:
    return {
        "DATABASE_URL": database_url,
        "LIVEMEMORY_DATA_DIR": str(tmp_path / "data"),
        "LIVEMEMORY_MEMORY__EMBEDDER": "offline",
        "LIVEMEMORY_LOG_LEVEL": "WARNING",
    }


async def test_each_format_imports_into_memory_and_an_import_resumes(
    make_settings: SettingsFactory, tmp_path: Path
) -> None:
    vod = twitchdownloader(tmp_path / "vod.json")
    lines = tmp_path / "chat.jsonl"
    lines.write_text("\n".join(json.dumps(i) for i in chat_downloader_items()) + "\n")
    irc = irc_log(tmp_path / "2026-11-29.log")
    async with runtime.lifespan(make_settings(), no_llm=True, background_worker=False) as services:
        for path, fmt, wanted in (
            (vod, "twitchdownloader", 2),
            (lines, "chat-downloader", 2),
            (irc, "irc", 4),
        ):
            progress = io.StringIO()
            report = await importer.import_log(services, path, fmt=fmt, progress=progress)
            assert (report.messages, report.skipped) == (wanted, 0)
            assert progress.getvalue().endswith(f"import: {wanted}/{wanted} messages (100%)\n")
        ops = services.operations
        assert sorted(r.text for r in await ops.inspect("1001")) == [
            "I moved to Turin last month",
            "I work as a graphic designer",
        ]
        assert "I play the cello in an orchestra" in [
            r.text for r in await ops.inspect("irc-alice")
        ]
        again = await importer.import_log(services, vod, progress=io.StringIO())  # detected
        assert (again.messages, again.skipped, again.turns) == (2, 2, 0)
        assert len(await ops.inspect("1001")) == 2  # nothing twice
        # nothing was answered: no reply in any journaled turn
        replies = await services.db.pool.fetchval(
            "SELECT count(*) FROM turn_outcomes WHERE reply IS NOT NULL"
        )
        assert replies == 0


def test_the_import_command_prints_progress_and_a_summary(
    database_url: str, tmp_path: Path
) -> None:
    env = _env(database_url, tmp_path)
    irc = irc_log(tmp_path / "2026-11-29.log")
    result = cli.run("bot", "import", str(irc), "--format", "irc", env=env, cwd=tmp_path)
    assert result.code == 0, result.err
    assert "import: 4/4 messages (100%)" in result.err
    assert (
        result.out
        == "imported 4 messages into log-2026-11-29: 4 turns, skipped 0 already answered\n"
    )
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    result = cli.run(
        "bot", "import", str(broken), "--format", "twitchdownloader", env=env, cwd=tmp_path
    )
    assert result.code == 1 and "Traceback" not in result.err
    assert result.err.strip().endswith(
        f"{broken}:1: not JSON (Expecting property name enclosed in double quotes)"
    )


def test_replay_reads_the_other_formats(database_url: str, tmp_path: Path) -> None:
    env = _env(database_url, tmp_path)
    irc = irc_log(tmp_path / "2026-11-29.log")
    result = cli.run(
        "bot", "replay", str(irc), "--format", "irc", "--no-llm", "--json", env=env, cwd=tmp_path
    )
    assert result.code == 0, result.err
    reports = [json.loads(line) for line in result.out.splitlines()]
    said = [m for r in reports for m in r["message_ids"]]
    assert said == [f"log-2026-11-29-{n}" for n in (2, 4, 5, 6)]
