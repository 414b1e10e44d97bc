"""Model tools on channel state: schemas, validated calls, error results, the tool-call transcript,
and a real ``ollama.AsyncClient`` tool loop against the fake Ollama (through the turn pipeline)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from memory import models, pipeline
from memory.adapters import ollama as ollama_adapter
from memory.adapters import postgres
from memory.history import reducers, transcript, working
from memory.state import channel as state
from memory.state import tools
from tests import chatlog

if TYPE_CHECKING:
    from tests.conftest import SettingsFactory
    from tests.fakes import ollama as fake_ollama_module

SPEAKERS = {"carol": "id-carol"}


async def seed(db: postgres.Database) -> str:
    """Stream s1 of channel ``chan`` with alice, bob and carol known; a turn over carol's message."""
    log = transcript.Transcript(db)
    await log.ensure_stream("s1", channel="chan")
    await log.append_events(
        [
            chatlog.chat(1, "alice", "hi"),
            chatlog.chat(2, "bob", "yo"),
            chatlog.chat(3, "carol", "alice and bob are siblings"),
        ]
    )
    return await log.start_turn("s1", ["s1-m3"])


def call(name: str, arguments: Any, call_id: str = "") -> models.ToolCall:
    return models.ToolCall(id=call_id or f"c-{name}", name=name, arguments=arguments)


def result(item: models.HistoryItem) -> dict[str, Any]:
    assert item.role is models.Role.TOOL
    return dict(json.loads(item.text))


def test_tool_schemas_are_ollama_function_tools(make_settings: SettingsFactory) -> None:
    runner = tools.ToolRunner(None, make_settings())  # type: ignore[arg-type]  # no db needed
    schemas = runner.tool_schemas()
    names = [s["function"]["name"] for s in schemas]
    assert set(names) >= {
        "add_request",
        "complete_request",
        "cancel_request",
        "list_requests",
        "set_relationship",
        "remove_relationship",
        "get_relationships",
        "add_note",
        "add_inside_joke",
        "list_state",
    }
    by_name = {s["function"]["name"]: s for s in schemas}
    rel = by_name["set_relationship"]
    assert rel["type"] == "function" and rel["function"]["description"]
    params = rel["function"]["parameters"]
    assert params["type"] == "object"
    assert params["required"] == ["viewer_a", "viewer_b", "kind"]
    assert params["properties"]["since"]["type"] == "string"  # ``str | None`` flattened
    assert "title" not in json.dumps(schemas)
    joke = by_name["add_inside_joke"]["function"]["parameters"]["properties"]["viewers"]
    assert joke["type"] == "array" and joke["items"]["type"] == "string"


async def test_set_relationship_resolves_logins_changes_state_and_is_recorded(
    db: postgres.Database, make_settings: SettingsFactory
) -> None:
    turn = await seed(db)
    changes: list[str] = []

    async def invalidate() -> None:
        changes.append("state")

    runner = tools.ToolRunner(db, make_settings(), on_change=invalidate)
    args = {"viewer_a": "@Alice", "viewer_b": "bob", "kind": "Siblings"}
    outcome = await runner.run(turn, "s1", [call("set_relationship", args, "c1")], SPEAKERS)
    assert changes == ["state"]
    await runner.run(turn, "s1", [call("get_relationships", {"viewer": "bob"})], SPEAKERS)
    assert changes == ["state"]  # reading changes nothing

    assert outcome.changed_domains == {"relationships"}
    assert outcome.involved_user_ids == {"id-alice", "id-bob"}
    [item] = outcome.results
    assert item.tool_call_id == "c1" and item.tool_name == "set_relationship"
    assert item.turn_id == turn and item.ts == chatlog.T0 + timedelta(
        seconds=3
    )  # the turn's chat time
    assert result(item) == {
        "ok": True,
        "relationship": {"viewers": ["alice", "bob"], "kind": "siblings", "since": None},
    }
    rows = await state.ChannelState(db.pool).relationships("chan")
    assert [(r.user_a, r.user_b, r.kind, r.turn_id) for r in rows] == [
        ("id-alice", "id-bob", "siblings", turn)
    ]
    recorded = await tools.tool_calls(db, turn)
    assert [(r["seq"], r["call_id"], r["name"], r["error"]) for r in recorded] == [
        (1, "c1", "set_relationship", None),
        (2, "c-get_relationships", "get_relationships", None),
    ]
    assert recorded[0]["arguments"] == args and recorded[0]["result"] == result(item)
    assert outcome.records[0]["name"] == "set_relationship" and outcome.records[0]["seq"] == 1


async def test_bad_calls_get_error_results_never_an_exception(
    db: postgres.Database, make_settings: SettingsFactory
) -> None:
    turn = await seed(db)
    runner = tools.ToolRunner(db, make_settings())
    calls = [
        call("launch_rockets", {}, "c1"),
        call("set_relationship", {"viewer_a": "alice"}, "c2"),
        call("add_request", '{"viewer": "alice", "text": ', "c3"),
        call("add_request", {"viewer": "nobody_here", "text": "play Celeste"}, "c4"),
        call("add_request", {"viewer": "alice", "text": "x", "priority": 9}, "c5"),
        call("complete_request", {"request_id": "not a number"}, "c6"),
        call("complete_request", {"request_id": 999}, "c7"),
        call("set_relationship", {"viewer_a": "alice", "viewer_b": "ALICE", "kind": "x"}, "c8"),
        call("add_inside_joke", {"text": "the duck", "viewers": ["alice", "ghost"]}, "c9"),
        call("add_request", ["alice"], "c10"),
    ]
    outcome = await runner.run(turn, "s1", calls, SPEAKERS)

    errors_by_call = {item.tool_call_id: result(item) for item in outcome.results}
    assert all(r["ok"] is False for r in errors_by_call.values())
    assert "unknown tool 'launch_rockets'" in errors_by_call["c1"]["error"]
    assert "viewer_b" in errors_by_call["c2"]["error"] and "kind" in errors_by_call["c2"]["error"]
    assert "not valid JSON" in errors_by_call["c3"]["error"]
    assert "unknown viewer 'nobody_here'" in errors_by_call["c4"]["error"]
    assert "priority" in errors_by_call["c5"]["error"]
    assert "request_id" in errors_by_call["c6"]["error"]
    assert "no request #999" in errors_by_call["c7"]["error"]
    assert "two different viewers" in errors_by_call["c8"]["error"]
    assert "ghost" in errors_by_call["c9"]["error"]
    assert "JSON object" in errors_by_call["c10"]["error"]
    assert outcome.changed_domains == set() and outcome.involved_user_ids == set()
    # nothing changed (a failed joke with one known viewer wrote nothing either)
    repo = state.ChannelState(db.pool)
    assert await repo.current("chan", now=chatlog.T0) == []
    recorded = await tools.tool_calls(db, turn)
    assert [r["seq"] for r in recorded] == list(range(1, 11))
    assert all(r["error"] and r["result"]["ok"] is False for r in recorded)
    assert recorded[2]["arguments"] == {"_raw": '{"viewer": "alice", "text": '}


async def test_request_lifecycle_and_sequence_continues_across_rounds(
    db: postgres.Database, make_settings: SettingsFactory
) -> None:
    turn = await seed(db)
    runner = tools.ToolRunner(db, make_settings())
    first = await runner.run(
        turn, "s1", [call("add_request", {"viewer": "carol", "text": "play Celeste"})], SPEAKERS
    )
    request_id = result(first.results[0])["request"]["id"]
    assert first.changed_domains == {"requests"} and first.involved_user_ids == {"id-carol"}

    second = await runner.run(
        turn,
        "s1",
        [
            call("list_requests", {}, "l1"),
            call("complete_request", {"request_id": str(request_id)}, "d1"),
            call("cancel_request", {"request_id": request_id}, "d2"),
            call("list_requests", {"status": "all", "viewer": "carol"}, "l2"),
        ],
        SPEAKERS,
    )
    listed, done, cancelled, everything = (result(r) for r in second.results)
    assert listed["requests"] == [
        {"id": request_id, "viewer": "carol", "text": "play Celeste", "status": "open"}
    ]
    assert done["request"]["status"] == "completed"
    assert cancelled == {"ok": False, "error": f"request #{request_id} is already completed"}
    assert [r["status"] for r in everything["requests"]] == ["completed"]
    assert second.changed_domains == {"requests"}
    assert [r["seq"] for r in await tools.tool_calls(db, turn)] == [1, 2, 3, 4, 5]


async def test_notes_expire_and_list_state_shows_what_is_current(
    db: postgres.Database, make_settings: SettingsFactory
) -> None:
    turn = await seed(db)
    now = [chatlog.T0]
    runner = tools.ToolRunner(db, make_settings(), clock=lambda: now[0])
    outcome = await runner.run(
        turn,
        "s1",
        [
            call("add_note", {"text": "alice is away", "about": "alice", "expires_in_minutes": 30}),
            call("add_note", {"text": "no spoilers today"}, "n2"),
            call("add_inside_joke", {"text": "the duck", "viewers": ["alice", "bob"]}, "j1"),
            call("set_relationship", {"viewer_a": "bob", "viewer_b": "carol", "kind": "rivals"}),
        ],
        SPEAKERS,
    )
    assert outcome.changed_domains == {"notes", "jokes", "relationships"}
    assert outcome.involved_user_ids == {"id-alice", "id-bob", "id-carol"}

    listing = await runner.run(turn, "s1", [call("list_state", {"viewer": "alice"})], SPEAKERS)
    current = result(listing.results[0])
    assert [n["text"] for n in current["notes"]] == ["alice is away"]
    assert current["jokes"] == [
        {"text": "the duck", "viewers": ["alice", "bob"], "first_at": chatlog.T0.isoformat()}
    ]
    assert current["relationships"] == [] and current["requests"] == []
    assert listing.changed_domains == set()

    now[0] = chatlog.T0 + timedelta(hours=1)
    later = result((await runner.run(turn, "s1", [call("list_state", {})], SPEAKERS)).results[0])
    assert [n["text"] for n in later["notes"]] == ["no spoilers today"]
    assert later["relationships"] == [
        {"viewers": ["bob", "carol"], "kind": "rivals", "since": None}
    ]


async def test_the_pipeline_runs_model_tool_calls_through_the_real_ollama_client(
    db: postgres.Database,
    make_settings: SettingsFactory,
    fake_ollama: fake_ollama_module.FakeOllama,
) -> None:
    settings = make_settings()
    log = transcript.Transcript(db)
    await log.ensure_stream("s1", channel="chan")
    await log.append_events([chatlog.chat(1, "alice", "hi"), chatlog.chat(2, "bob", "yo")])
    runner = tools.ToolRunner(db, settings)
    turns = pipeline.TurnPipeline(
        transcript=log,
        history=working.InProcessHistory(cap=100),
        model=ollama_adapter.OllamaChat(fake_ollama.url, "llama3.2:3b"),
        seams=pipeline.Seams(
            planner=pipeline.NoPlanner(),
            retriever=pipeline.NoRetrieval(),
            reducer=reducers.TurnReducer(30),
            tools=runner,
        ),
        system_prompt="You are Mnemo.",
    )
    fake_ollama.call_tool("set_relationship", {"viewer_a": "alice", "viewer_b": "bob"})
    fake_ollama.call_tool(
        "set_relationship", {"viewer_a": "alice", "viewer_b": "bob", "kind": "siblings"}
    )
    fake_ollama.reply("Noted: alice and bob are siblings!")
    event = chatlog.chat(3, "carol", "record that alice and bob are siblings")
    await log.append_events([event])
    report = await turns.run(models.Batch(stream="s1", events=(event,)))

    assert report.reply == "Noted: alice and bob are siblings!"
    assert [t["error"] is None for t in report.tools] == [False, True]
    assert report.barrier == {
        "domains": ["relationships"],
        "user_ids": ["id-alice", "id-bob"],
        "whole_batch": False,
    }
    # the model was offered the tools and saw its first (bad) call's error before retrying
    first, second, third = fake_ollama.chat_requests
    assert {t["function"]["name"] for t in first["tools"]} >= {"set_relationship", "list_state"}
    tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
    assert "kind" in json.loads(tool_messages[-1]["content"])["error"]
    assert [m["role"] for m in third["messages"]][-4:] == ["assistant", "tool", "assistant", "tool"]
    assert json.loads(third["messages"][-1]["content"])["ok"] is True
    rows = await state.ChannelState(db.pool).relationships("chan")
    assert [(r.kind, r.turn_id) for r in rows] == [("siblings", report.turn_id)]
    assert len(await tools.tool_calls(db, report.turn_id)) == 2
    # the working history keeps each call with its result, in order
    history = await turns.history.recent("s1")
    roles = [(h.role.value, h.tool_name) for h in history]
    assert roles == [
        ("user", None),
        ("assistant", None),
        ("tool", "set_relationship"),
        ("assistant", None),
        ("tool", "set_relationship"),
        ("assistant", None),
    ]
    assert history[1].tool_calls[0].id == history[2].tool_call_id
