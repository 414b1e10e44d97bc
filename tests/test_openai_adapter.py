"""The OpenAI-compatible chat adapter against a fake server, through the real ``openai`` client."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pytest

from memory import errors, models
from memory.adapters import openai_compat
from tests.fakes import openai_server

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

KEY = "sk-planted-secret-key-0123456789"
PROMPT = (models.PromptMessage(role=models.Role.USER, content="hi"),)


_opened: list[openai_compat.OpenAIChat] = []


@pytest.fixture
async def fake() -> AsyncIterator[openai_server.FakeOpenAI]:
    server = openai_server.FakeOpenAI()
    await server.start()
    yield server
    while _opened:  # the client's connections closed on this test's loop
        await _opened.pop().client.close()
    await server.stop()


def chat(fake: openai_server.FakeOpenAI) -> openai_compat.OpenAIChat:
    model = openai_compat.OpenAIChat(fake.url, "small", api_key=KEY, timeout=5.0)
    _opened.append(model)
    return model


async def test_text_reply_and_the_key_sent_as_bearer(fake: openai_server.FakeOpenAI) -> None:
    fake.reply("hello there")
    reply = await chat(fake).chat(PROMPT)
    assert reply.content == "hello there"
    assert reply.prompt_tokens == 10
    assert fake.headers[0]["Authorization"] == f"Bearer {KEY}"
    assert fake.requests[0]["messages"] == [{"role": "user", "content": "hi"}]


async def test_text_plus_tool_calls_and_malformed_arguments(
    fake: openai_server.FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    fake.reply(
        "let me look",
        [
            {"name": "recall", "arguments": '{"about": "cat"}'},
            {"name": "recall", "arguments": "{no"},
        ],
    )
    with caplog.at_level(logging.WARNING):
        reply = await chat(fake).chat(
            PROMPT, tools=[{"type": "function", "function": {"name": "recall"}}]
        )
    assert reply.content == "let me look"
    assert [(c.name, dict(c.arguments)) for c in reply.tool_calls] == [("recall", {"about": "cat"})]
    assert [r.getMessage() for r in caplog.records if r.name == openai_compat.__name__] == [
        "model asked for tool 'recall' with malformed arguments: dropped"
    ]
    assert fake.requests[0]["tools"][0]["function"]["name"] == "recall"


async def test_no_text_and_no_choices_are_empty_replies(fake: openai_server.FakeOpenAI) -> None:
    fake.reply(None)
    fake.replies.append(None)
    model = chat(fake)
    assert (await model.chat(PROMPT)).content == ""
    assert (await model.chat(PROMPT)).content == ""


async def test_errors_are_ours_and_never_carry_the_key(
    fake: openai_server.FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    fake.replies.extend([503, 400])
    model = chat(fake)
    with caplog.at_level(logging.DEBUG):
        with pytest.raises(errors.ModelUnavailable) as down:
            await model.chat(PROMPT)
        with pytest.raises(errors.ModelError) as refused:
            await model.chat(PROMPT)
    assert KEY not in str(down.value) + str(refused.value) + caplog.text
    await fake.stop()
    with pytest.raises(errors.ModelUnavailable, match="not reachable"):
        await model.check()


async def test_tool_results_answer_their_call(fake: openai_server.FakeOpenAI) -> None:
    call = models.ToolCall(id="call-1", name="recall", arguments={"about": "cat"})
    await chat(fake).chat(
        (
            *PROMPT,
            models.PromptMessage(role=models.Role.ASSISTANT, content="", tool_calls=(call,)),
            models.PromptMessage(role=models.Role.TOOL, content="Tom", tool_name="recall"),
        )
    )
    sent = fake.requests[0]["messages"]
    assert sent[1]["tool_calls"][0]["id"] == "call-1"
    assert sent[2] == {"role": "tool", "content": "Tom", "tool_call_id": "call-1"}
