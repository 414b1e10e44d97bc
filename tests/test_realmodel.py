"""The OpenAI-compatible adapter against a real small model (SmolLM2-135M behind llama-cpp-python's
server, ``tests.model_server``)."""

from __future__ import annotations

import asyncio

import pytest

from memory import models
from memory.adapters import openai_compat
from tests import model_server

pytestmark = pytest.mark.realmodel


async def test_a_real_model_replies(real_model: model_server.RealModel) -> None:
    chat = openai_compat.OpenAIChat(
        real_model.url, model_server.PLAIN, timeout=60.0, temperature=0.0
    )
    try:
        await chat.check()
        reply = await asyncio.wait_for(
            chat.chat(
                (models.PromptMessage(role=models.Role.USER, content="Say hello in one line."),),
                max_tokens=32,
            ),
            60.0,
        )
    finally:
        await chat.client.close()
    assert reply.content.strip()
    assert reply.completion_tokens is not None and 0 < reply.completion_tokens <= 32
