"""Memory as a user checks it: replay a transcript with
``--sync-consolidation``, then look at memory with ``python -m memory.admin`` (subprocesses, real
Postgres, embedded Qdrant in the test's data folder, offline embedder)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from tests import cli

if TYPE_CHECKING:
    from pathlib import Path

ALICE_BOB = [
    {"id": "a1", "user_id": "1001", "login": "alice", "text": "hi chat"},
    {"id": "b1", "user_id": "1002", "login": "bob", "text": "Alice lives in Rome"},
    {"id": "a2", "user_id": "1001", "login": "alice", "text": "I work as a graphic designer"},
    {"id": "b2", "user_id": "1002", "login": "bob", "text": "I have two dogs, Rex and Luna"},
]


def write_transcript(path: Path, rows: list[dict[str, str]]) -> Path:
    lines = [
        json.dumps({"ts": f"2026-11-29T20:00:{n:02d}Z", "stream": "s1", **row})
        for n, row in enumerate(rows)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def replay(path: Path, env: dict[str, str], cwd: Path) -> list[dict[str, Any]]:
    args = ("bot", "replay", str(path), "--json", "--no-llm", "--sync-consolidation")
    result = cli.run(*args, env=env, cwd=cwd)
    assert result.code == 0, result.err
    return [json.loads(line) for line in result.out.splitlines() if line.strip()]


def inspect(login: str, env: dict[str, str], cwd: Path) -> dict[str, Any]:
    result = cli.run("memory.admin", "inspect", "--viewer", login, "--json", env=env, cwd=cwd)
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert isinstance(data, dict)
    return data


def memory_texts_and_origins(data: dict[str, Any]) -> list[tuple[str, list[str]]]:
    return [(m["text"], m["origin_message_ids"]) for m in data["memories"]]


def test_personal_memory_holds_only_the_viewers_own_statements(
    env: dict[str, str], tmp_path: Path
) -> None:
    replay(write_transcript(tmp_path / "t.jsonl", ALICE_BOB), env, tmp_path)
    alice = memory_texts_and_origins(inspect("alice", env, tmp_path))
    assert ("I work as a graphic designer", ["a2"]) in alice
    assert all("Rome" not in text and "dogs" not in text for text, _ in alice)
    assert {origin for _, origins in alice for origin in origins} <= {"a1", "a2"}
    bob = memory_texts_and_origins(inspect("bob", env, tmp_path))
    assert ("I have two dogs, Rex and Luna", ["b2"]) in bob


def test_unknown_viewer_is_a_clear_error(env: dict[str, str], tmp_path: Path) -> None:
    replay(write_transcript(tmp_path / "t.jsonl", ALICE_BOB), env, tmp_path)
    result = cli.run("memory.admin", "inspect", "--viewer", "nobody", env=env, cwd=tmp_path)
    assert result.code == 1 and "nobody" in result.err and "Traceback" not in result.err


@pytest.mark.timeout(240)  # ten CLI processes: over 60 s on a loaded 2-core machine
def test_example_stream_attribution_and_recall(env: dict[str, str], tmp_path: Path) -> None:
    """Over the multi-viewer example: every memory in every viewer space comes from that viewer's
    own messages; explicit recall brings the asker's own earlier statements; a question about
    Alice never surfaces Bob's claim about her."""
    events = [json.loads(line) for line in cli.EXAMPLE.read_text().splitlines()]
    author = {e["id"]: e["user_id"] for e in events}
    logins = {e["login"]: e["user_id"] for e in events}
    turns = replay(cli.EXAMPLE, env, tmp_path)

    for login, user_id in logins.items():
        for _text, origins in memory_texts_and_origins(inspect(login, env, tmp_path)):
            assert origins and all(author[o] == user_id for o in origins), (login, origins)

    by_message = {i: t for t in turns for i in t["message_ids"]}
    ask = next(e for e in events if e["text"] == "Mnemo, what do you remember about me?")
    recall = [r for r in by_message[ask["id"]]["recall"] if r["viewer"] == "alice"]
    assert recall, "explicit recall brought nothing back"
    personal = [r for r in recall if r["space"] == "viewer-alice"]
    assert personal and all(author[o] == "1001" for r in personal for o in r["origin_message_ids"])
    earlier = {o for r in personal for o in r["origin_message_ids"]}
    assert "m4" in earlier  # "I work as a graphic designer…", long out of the prompt's history

    where = next(e for e in events if e["text"] == "Mnemo, where does Alice live?")
    turn = by_message[where["id"]]
    claim = next(e["id"] for e in events if e["text"] == "Alice lives in Rome btw")
    for item in turn["recall"]:
        if item["space"].startswith("viewer-"):
            assert claim not in item["origin_message_ids"], item
    assert all("Rome" not in item["text"] for item in turn["recall"] if item["viewer"] == "alice")
