"""Hostile inputs, each at the edge it enters by: a transcript line, a console line.

Each is refused with one clear message naming its line (no traceback), and every line before it is
kept; text is cleaned, not refused (NUL and lone surrogates stripped).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import asyncpg
import pytest

from bot import console
from memory import errors, inbound
from memory.history import transcript_file
from tests import cli

if TYPE_CHECKING:
    from pathlib import Path

GOOD = {"ts": "2026-11-29T20:00:00Z", "stream": "s1", "user_id": "1001", "login": "alice"}


def line(**fields: object) -> bytes:
    data = {**GOOD, "id": "m", "text": "hello", **fields}
    return json.dumps(data).encode("utf-8", errors="surrogatepass")


def write(path: Path, *lines: bytes) -> Path:
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (line(id="x" * 10_000), "id: Value error, at most 128 characters, not 10000"),
        (line(login="a\x00b"), "login: Value error, must not hold whitespace"),
        (line(user_id="\ud800"), "user_id: Value error, must not hold whitespace"),
        (line(login="\u200b"), "login: Value error, holds no letter"),
        (
            line(text="a" * 1_000_000),
            "text: Value error, at most 500 characters (Twitch's limit), not 1000000",
        ),
        (line(ts="9999-12-31T00:00:00Z"), "ts: Value error, is in the future"),
        (line(ts="1970-01-01T00:00:00Z"), "ts: Value error, is before 2000-01-01"),
        (b'{"ts": "2026-11-29T20:00:00Z", "text": "caf\xe9"}', "not valid UTF-8 (byte 0xe9"),
        (b"[" * 100_000, "JSON nested too deep"),
    ],
)
def test_a_hostile_line_is_refused_with_its_number_after_the_lines_before(
    tmp_path: Path, bad: bytes, problem: str
) -> None:
    path = write(tmp_path / "t.jsonl", line(id="m1"), line(id="m2"), bad, line(id="m4"))
    read: list[str] = []
    with pytest.raises(errors.TranscriptLineError) as caught:
        for event in transcript_file.read(path):
            read.append(event.id)
    assert read == ["m1", "m2"]
    assert caught.value.line == 3
    assert problem in caught.value.problem
    assert len(str(caught.value)) < 300  # the input is never echoed back


def test_nul_and_lone_surrogates_in_text_are_stripped_not_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", line(id="m1", text="a\x00b\ud800c\x07", name="Al\x00ice"))
    (event,) = transcript_file.read(path)
    assert (event.text, event.name) == ("abc", "Alice")


async def test_replay_of_invalid_utf8_keeps_the_lines_before_and_says_where(
    database_url: str, tmp_path: Path
) -> None:
    path = write(
        tmp_path / "t.jsonl",
        line(id="m1", text="I work as a baker"),
        line(id="m2", text="caf\x00e \ud800 ok"),
        b'{"text": "\xff\xfe"}',
        line(id="m4"),
    )
    env = {
        "DATABASE_URL": database_url,
        "LIVEMEMORY_DATA_DIR": str(tmp_path / "data"),
        "OLLAMA_HOST": "http://127.0.0.1:9",
        "LIVEMEMORY_MEMORY__EMBEDDER": "offline",
    }
    result = cli.run("bot", "replay", str(path), "--no-llm", env=env, cwd=tmp_path)
    assert result.code != 0
    assert f"{path}:3: not valid UTF-8 (byte 0xff at offset 10)" in result.err
    assert "Traceback" not in result.err
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch("SELECT id, text FROM messages ORDER BY seq")
        outcomes = await conn.fetchval("SELECT count(*) FROM turn_outcomes")
    finally:
        await conn.close()
    assert [(r["id"], r["text"]) for r in rows] == [("m1", "I work as a baker"), ("m2", "cafe  ok")]
    assert outcomes >= 1  # the lines before were answered


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("alice: hello", ("alice", (), "hello")),
        ("bob[moderator]: !memory @alice", ("bob", ("moderator",), "!memory @alice")),
        ("just text\x00", ("viewer", (), "just text")),
        ("\u200b: hi", ("viewer", (), "hi")),  # a login normalising to nothing is no login
    ],
)
def test_console_lines(raw: str, expected: tuple[str, tuple[str, ...], str]) -> None:
    event = console.parse_line(raw, "s1", "!")
    assert event is not None
    assert (event.login, event.badges, event.text) == expected


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("alice: " + "a" * 501, "text: Value error, at most 500 characters"),
        ("bob[admin]: hi", "badges.0: Input should be"),
    ],
)
def test_console_refuses_a_line_out_of_limits(raw: str, problem: str) -> None:
    with pytest.raises(errors.InvalidInput, match=problem.replace(".", r"\.")):
        console.parse_line(raw, "s1", "!")
    assert inbound.TEXT_MAX == 500


def test_console_reads_every_line_of_a_paste(database_url: str, tmp_path: Path) -> None:
    env = {
        "DATABASE_URL": database_url,
        "LIVEMEMORY_DATA_DIR": str(tmp_path / "data"),
        "OLLAMA_HOST": "http://127.0.0.1:9",
        "LIVEMEMORY_MEMORY__EMBEDDER": "offline",
    }
    paste = "alice: one\nbob: two\ncarla: " + "x" * 600 + "\ndan: four\n"
    result = cli.run("bot", "console", "--no-llm", env=env, cwd=tmp_path, stdin=paste)
    assert result.code == 0, result.err
    assert (
        "text: Value error, at most 500 characters (Twitch's limit), not 600 (line ignored)"
        in result.err
    )
    (turn,) = [line for line in result.out.splitlines() if line.startswith("── turn")]
    assert len(turn.split(" · ")[-1].split()) == 3  # alice, bob and dan in one batch
