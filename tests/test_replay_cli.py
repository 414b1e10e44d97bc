"""``python -m bot replay`` and ``console`` as a user runs them (subprocess, real Postgres)."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from tests import cli

if TYPE_CHECKING:
    from pathlib import Path

REPORT_FIELDS = {
    "turn_id", "stream", "message_ids", "plan", "recall", "timings_ms", "degraded", "prompt",
    "reply", "command",
}  # fmt: skip


def reports(out: str) -> list[dict[str, Any]]:  # decoded JSON
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_replay_json_prints_one_full_report_per_turn(env: dict[str, str], tmp_path: Path) -> None:
    result = cli.run("bot", "replay", str(cli.EXAMPLE), "--json", "--no-llm", env=env, cwd=tmp_path)
    assert result.code == 0, result.err
    turns = reports(result.out)
    assert len(turns) > 5
    for turn in turns:
        assert set(turn) >= REPORT_FIELDS
        assert {"messages_in_history", "messages_sent", "tokens_estimate", "preview"} <= set(
            turn["prompt"]
        )
    chat_turns = [t for t in turns if t["command"] is None]
    assert all("memory_total" in t["timings_ms"] for t in chat_turns)
    history = [t["prompt"]["messages_in_history"] for t in chat_turns]
    assert history == sorted(history) and history[-1] > history[0]
    ids = [i for t in turns for i in t["message_ids"]]
    assert len(ids) == len(set(ids)) == sum(1 for _ in cli.EXAMPLE.open())


def test_restarting_a_replay_continues_the_same_transcript(
    env: dict[str, str], tmp_path: Path
) -> None:
    lines = cli.EXAMPLE.read_text().splitlines()
    half = tmp_path / "half.jsonl"
    half.write_text("\n".join(lines[:12]) + "\n")
    first = cli.run("bot", "replay", str(half), "--json", "--no-llm", env=env, cwd=tmp_path)
    assert first.code == 0, first.err
    second = cli.run("bot", "replay", str(cli.EXAMPLE), "--json", "--no-llm", env=env, cwd=tmp_path)
    assert second.code == 0, second.err
    assert "already answered" in second.err
    done_first = [i for t in reports(first.out) for i in t["message_ids"]]
    done_second = [i for t in reports(second.out) for i in t["message_ids"]]
    assert not set(done_first) & set(done_second)
    assert sorted(done_first + done_second) == sorted(json.loads(x)["id"] for x in lines)
    # the history continues: the first turn after the restart sees everything before it
    first_after = reports(second.out)[0]
    assert first_after["prompt"]["messages_in_history"] > 12


def test_a_malformed_line_names_its_number_and_keeps_what_came_before(
    env: dict[str, str], tmp_path: Path
) -> None:
    lines = cli.EXAMPLE.read_text().splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([*lines[:5], '{"ts": "yesterday", "stream": "s"}', *lines[5:]]))
    result = cli.run("bot", "replay", str(broken), "--json", "--no-llm", env=env, cwd=tmp_path)
    assert result.code == 1
    assert "broken.jsonl:6:" in result.err and "ts" in result.err
    assert "Traceback" not in result.err
    answered = [i for t in reports(result.out) for i in t["message_ids"]]
    assert sorted(answered) == sorted(json.loads(x)["id"] for x in lines[:5])


def test_ollama_unreachable_stops_at_once_with_how_to_fix(
    env: dict[str, str], tmp_path: Path
) -> None:
    result = cli.run("bot", "replay", str(cli.EXAMPLE), env=env, cwd=tmp_path)
    assert result.code == 1
    assert "ollama serve" in result.err and "--no-llm" in result.err
    assert "Traceback" not in result.err and result.out == ""


def test_missing_file_is_one_clear_line(env: dict[str, str], tmp_path: Path) -> None:
    result = cli.run("bot", "replay", "nope.jsonl", "--no-llm", env=env, cwd=tmp_path)
    assert result.code == 1 and "no such transcript file" in result.err
    assert "Traceback" not in result.err


def test_console_chats_as_several_viewers(env: dict[str, str], tmp_path: Path) -> None:
    typed = "alice: I work as a graphic designer\nbob: hi all\n/quit\n"
    result = cli.run("bot", "console", "--no-llm", env=env, cwd=tmp_path, stdin=typed)
    assert result.code == 0, result.err
    assert "── turn" in result.out and "in history" in result.out


#: a log line as ``memory.logs`` prints it (text format)
LOG_LINE = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} (DEBUG|INFO|WARNING|ERROR) ")


def test_console_terminal_shows_chat_and_turns_only_and_logs_to_a_file(
    env: dict[str, str], tmp_path: Path
) -> None:
    """Piped input, the default policy: no log line on the terminal; they are in the log file."""
    default = {k: v for k, v in env.items() if k != "LIVEMEMORY_REPLY__POLICY"}
    typed = "alice: I work as a graphic designer\nbob: @Mnemo what does alice do?\n/quit\n"
    result = cli.run("bot", "console", "--no-llm", env=default, cwd=tmp_path, stdin=typed)
    assert result.code == 0, result.err
    terminal = [*result.out.splitlines(), *result.err.splitlines()]
    assert not [line for line in terminal if LOG_LINE.match(line)], terminal
    assert "── turn" in result.out
    assert "bot login @mnemo (the persona name" in result.err  # one line says so
    logged = (tmp_path / "data" / "logs" / "console.log").read_text()
    assert " INFO " in logged and "created Qdrant collection" in logged

    again = cli.run(
        "bot", "console", "--no-llm", "--log-level", "info", env=default, cwd=tmp_path, stdin=typed
    )
    assert again.code == 0, again.err
    assert [line for line in again.err.splitlines() if " INFO " in line and LOG_LINE.match(line)]
