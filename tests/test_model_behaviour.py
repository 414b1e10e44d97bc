"""What a model may answer instead of a plain reply, through the real pipeline, real Postgres and
the real tool runner, with the fake OpenAI server producing the shapes: no text, text plus tool
calls, malformed tool arguments, a tool the bot does not have, a prompt over the model's context,
a model slower than the reply timeout. Each is one log line and a turn that ends."""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING

import pytest

from memory import errors, models, pipeline
from memory.adapters import openai_compat
from memory.state import tools
from tests import chatlog, conftest, test_pipeline
from tests.fakes import openai_server

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from memory.adapters import postgres

SYSTEM = "You are Mnemo."  # test_pipeline.make_pipeline's


@pytest.fixture
async def fake() -> AsyncIterator[openai_server.FakeOpenAI]:
    server = openai_server.FakeOpenAI()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def model(fake: openai_server.FakeOpenAI) -> AsyncIterator[openai_compat.OpenAIChat]:
    chat = openai_compat.OpenAIChat(fake.url, "small", timeout=5.0)
    yield chat
    await chat.client.close()


def make(
    db: postgres.Database,
    model: openai_compat.OpenAIChat,
    *,
    with_tools: bool = True,
    reply_timeout: float | None = None,
) -> pipeline.TurnPipeline:
    """``test_pipeline``'s pipeline with the real tool runner, a reply timeout, 64 reply tokens."""
    p = test_pipeline.make_pipeline(db, model)
    runner = tools.ToolRunner(db, conftest.IsolatedSettings(database_url="postgresql://unused/x"))
    p.seams = dataclasses.replace(p.seams, tools=runner if with_tools else None)
    p.reply_timeout_seconds, p.reply_tokens = reply_timeout, 64
    return p


async def run(p: pipeline.TurnPipeline, *events: models.ChatEvent) -> models.TurnReport:
    await p.transcript.append_events(list(events))
    return await p.run(models.Batch(stream=events[0].stream, events=events))


def lines(caplog: pytest.LogCaptureFixture, level: int = logging.INFO) -> list[str]:
    """The pipeline's, the adapter's and the tools' log lines."""
    ours = ("memory.pipeline", "memory.asking", "memory.state.tools", openai_compat.__name__)
    return [r.getMessage() for r in caplog.records if r.name in ours and r.levelno >= level]


async def journaled(p: pipeline.TurnPipeline, report: models.TurnReport) -> models.TurnStatus:
    row = await p.transcript.turn(report.turn_id)
    assert row is not None
    return row.status


async def test_no_text_is_no_reply_and_a_degraded_turn(
    db: postgres.Database,
    fake: openai_server.FakeOpenAI,
    model: openai_compat.OpenAIChat,
    caplog: pytest.LogCaptureFixture,
) -> None:
    p = make(db, model)
    fake.reply(None)
    with caplog.at_level(logging.INFO):
        report = await run(p, chatlog.chat(1, "alice", "hi Mnemo"))
    assert report.reply is None and report.status is models.TurnStatus.DEGRADED
    assert [d.to_json() for d in report.degraded] == [{"source": "model", "reason": "no_text"}]
    assert lines(caplog) == [f"turn {report.turn_id}: the model answered no text: no reply"]
    assert fake.requests[0]["max_tokens"] == 64 and fake.requests[0]["tool_choice"] == "auto"
    assert await journaled(p, report) is models.TurnStatus.DEGRADED
    # the next turn is answered as usual
    fake.reply("hello alice")
    assert (await run(p, chatlog.chat(2, "alice", "hello?"))).reply == "hello alice"


async def test_text_with_tool_calls_runs_the_tools_and_keeps_the_text(
    db: postgres.Database,
    fake: openai_server.FakeOpenAI,
    model: openai_compat.OpenAIChat,
    caplog: pytest.LogCaptureFixture,
) -> None:
    p = make(db, model)
    fake.reply("let me check the list", [{"name": "list_requests", "arguments": "{}"}])
    fake.reply(None)  # the answer after the tool round has no text: the earlier text stands
    with caplog.at_level(logging.INFO):
        report = await run(p, chatlog.chat(1, "alice", "@Mnemo what is requested?"))
    assert report.reply == "let me check the list"
    assert report.status is models.TurnStatus.COMPLETED
    assert [(t["name"], t["error"]) for t in report.tools] == [("list_requests", None)]
    second = fake.requests[1]["messages"]
    assert second[-2]["tool_calls"][0]["function"]["name"] == "list_requests"
    assert second[-1]["role"] == "tool" and '"ok": true' in second[-1]["content"]
    assert lines(caplog) == [
        f"turn {report.turn_id}: the model wrote text and called list_requests: the tools run first",
        f"turn {report.turn_id} tool list_requests: ok",
    ]


async def test_malformed_tool_arguments_are_dropped_and_the_turn_ends(
    db: postgres.Database,
    fake: openai_server.FakeOpenAI,
    model: openai_compat.OpenAIChat,
    caplog: pytest.LogCaptureFixture,
) -> None:
    p = make(db, model)
    fake.reply("", [{"name": "add_note", "arguments": '{"text": "unterminated'}])
    with caplog.at_level(logging.WARNING):
        report = await run(p, chatlog.chat(1, "alice", "note that I like tea"))
    assert report.tools == [] and len(fake.requests) == 1  # nothing run, not asked again
    assert report.status is models.TurnStatus.DEGRADED and report.reply is None
    assert lines(caplog, logging.WARNING) == [
        "model asked for tool 'add_note' with malformed arguments: dropped",
        f"turn {report.turn_id}: the model answered no text: no reply",
    ]
    assert await journaled(p, report) is models.TurnStatus.DEGRADED


async def test_a_tool_the_bot_does_not_have_gets_an_error_result(
    db: postgres.Database,
    fake: openai_server.FakeOpenAI,
    model: openai_compat.OpenAIChat,
    caplog: pytest.LogCaptureFixture,
) -> None:
    p = make(db, model)
    fake.reply("", [{"name": "launch_rocket", "arguments": '{"to": "moon"}'}])
    fake.reply("I cannot do that")
    with caplog.at_level(logging.INFO):
        report = await run(p, chatlog.chat(1, "alice", "launch the rocket"))
    assert report.reply == "I cannot do that" and report.status is models.TurnStatus.COMPLETED
    [record] = report.tools
    assert record["name"] == "launch_rocket" and record["result"]["ok"] is False
    assert "unknown tool 'launch_rocket'" in record["error"]
    assert "unknown tool 'launch_rocket'" in fake.requests[1]["messages"][-1]["content"]
    [line] = lines(caplog)
    assert line.startswith(f"turn {report.turn_id} tool launch_rocket: error: unknown tool")


async def test_tool_calls_when_the_bot_offers_no_tools_are_ignored(
    db: postgres.Database,
    fake: openai_server.FakeOpenAI,
    model: openai_compat.OpenAIChat,
    caplog: pytest.LogCaptureFixture,
) -> None:
    p = make(db, model, with_tools=False)
    fake.reply("hi alice", [{"name": "add_note", "arguments": "{}"}])
    with caplog.at_level(logging.INFO):
        report = await run(p, chatlog.chat(1, "alice", "hello"))
    assert report.reply == "hi alice" and report.status is models.TurnStatus.COMPLETED
    assert "tools" not in fake.requests[0]
    assert lines(caplog) == [
        f"turn {report.turn_id}: the model called add_note, but the bot offers no tools: ignored"
    ]


async def test_a_model_calling_tools_every_round_is_stopped(
    db: postgres.Database,
    fake: openai_server.FakeOpenAI,
    model: openai_compat.OpenAIChat,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """As llama-cpp-python's ``chatml-function-calling`` format does with ``tool_choice: auto``."""
    p = make(db, model)
    for _ in range(4):
        fake.reply("", [{"name": "list_requests", "arguments": "{}"}])
    with caplog.at_level(logging.WARNING):
        report = await run(p, chatlog.chat(1, "alice", "what is requested?"))
    assert len(report.tools) == p.max_tool_rounds and len(fake.requests) == p.max_tool_rounds + 1
    assert report.status is models.TurnStatus.DEGRADED and report.reply is None
    assert lines(caplog, logging.WARNING) == [
        f"turn {report.turn_id}: the model still called list_requests after 3 tool rounds: not run",
        f"turn {report.turn_id}: the model answered no text: no reply",
    ]


async def test_a_prompt_over_the_context_is_reduced_before_it_is_sent(
    db: postgres.Database,
    fake: openai_server.FakeOpenAI,
    model: openai_compat.OpenAIChat,
    caplog: pytest.LogCaptureFixture,
) -> None:
    p = make(db, model)
    p.seams = pipeline.Seams(  # no tool schemas: the whole window is the prompt's and the reply's
        planner=pipeline.NoPlanner(), retriever=pipeline.NoRetrieval(), reducer=pipeline.KeepAll()
    )
    filler = "tell me more about the speedrun route and the glitches " * 4
    for n in range(1, 21):
        await run(p, chatlog.chat(n, "bob", f"{n:02d} {filler}"))
    model.context_tokens = 512  # as configured (LIVEMEMORY_MODEL__CONTEXT_TOKENS)
    last = "alice: so which glitch skips the castle?"
    with caplog.at_level(logging.INFO):
        report = await run(p, chatlog.chat(21, "alice", last.partition(": ")[2]))
    sent = fake.requests[-1]["messages"]
    assert sent[0] == {"role": "system", "content": SYSTEM} and sent[-1]["content"] == last
    assert report.prompt.messages_sent == len(sent) < report.prompt.messages_in_history
    assert report.prompt.tokens_estimate <= int(512 * 0.9) - 64
    kept = [m["content"][:7] for m in sent if m["role"] == "user"][:-1]
    assert kept and kept == sorted(kept) and "bob: 20" in kept  # the newest history stays
    [line] = [m for m in lines(caplog) if "context" in m]
    assert line.startswith(f"turn {report.turn_id}: prompt of ~") and "512-token context" in line
    assert report.status is models.TurnStatus.COMPLETED


async def test_a_slow_model_is_cut_at_the_reply_timeout(
    db: postgres.Database,
    fake: openai_server.FakeOpenAI,
    model: openai_compat.OpenAIChat,
    caplog: pytest.LogCaptureFixture,
) -> None:
    p = make(db, model, reply_timeout=0.3)
    fake.hold_from = 0  # the fake answers only when released: never, during this turn
    try:
        with caplog.at_level(logging.WARNING):
            report = await run(p, chatlog.chat(1, "alice", "hi Mnemo"))
    finally:
        fake.release.set()
    assert fake.asked.is_set()
    assert report.status is models.TurnStatus.DEGRADED and report.reply is None
    assert [d.to_json() for d in report.degraded] == [{"source": "model", "reason": "timeout"}]
    assert lines(caplog, logging.WARNING) == [
        f"turn {report.turn_id}: no answer from the model within 0.3 s: no reply"
    ]
    assert await journaled(p, report) is models.TurnStatus.DEGRADED


async def test_the_reply_timeout_never_cuts_a_tool_round(
    db: postgres.Database,
    fake: openai_server.FakeOpenAI,
    model: openai_compat.OpenAIChat,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The call after a tool round is the slow one: the round's result stays in the report and
    the history, the turn ends ``degraded``."""
    p = make(db, model, reply_timeout=0.3)
    fake.reply("", [{"name": "list_requests", "arguments": "{}"}])
    fake.hold_from = 1
    try:
        report = await run(p, chatlog.chat(1, "alice", "what is requested?"))
    finally:
        fake.release.set()
    assert [(t["name"], t["error"]) for t in report.tools] == [("list_requests", None)]
    assert report.status is models.TurnStatus.DEGRADED and report.reply is None
    assert [d.reason for d in report.degraded] == ["timeout"]
    history = await p.history.recent("s1")
    assert [i.role.value for i in history] == ["user", "assistant", "tool"]


async def test_check_names_the_model_that_is_not_served(
    fake: openai_server.FakeOpenAI,
) -> None:
    missing = openai_compat.OpenAIChat(fake.url, "llama-70b", timeout=5.0)
    try:
        with pytest.raises(errors.ModelError) as refused:
            await missing.check()
    finally:
        await missing.client.close()
    assert str(refused.value) == (
        f"model 'llama-70b' is not served at {fake.url} (served: small): set LIVEMEMORY_MODEL__NAME"
    )


async def test_check_learns_the_context_the_server_tells(
    fake: openai_server.FakeOpenAI, model: openai_compat.OpenAIChat
) -> None:
    await model.check()
    assert model.context_tokens is None  # told nothing: not reduced
    fake.model_fields = {"max_model_len": 8192}  # as vLLM tells it
    await model.check()
    assert model.context_tokens == 8192
    configured = openai_compat.OpenAIChat(fake.url, "small", timeout=5.0, context_tokens=2048)
    try:
        await configured.check()
    finally:
        await configured.client.close()
    assert configured.context_tokens == 2048  # the configured size wins
