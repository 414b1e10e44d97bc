"""A fake OpenAI-compatible chat server (aiohttp) on 127.0.0.1, driven through the real
``openai.AsyncOpenAI``: ``POST /v1/chat/completions`` (not streamed) and ``GET /v1/models``.
Scriptable: queue whole ``message`` objects (text, tool calls, malformed arguments) or HTTP
statuses; hold answers until released (a slow model); refuse a request without the expected
key; every request body and its headers are recorded."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from aiohttp import web


class FakeOpenAI:
    def __init__(self, model: str = "small", *, key: str | None = None) -> None:
        self.model = model
        #: answer 401 to a request whose bearer token is not this key (None: any key)
        self.key = key
        #: more fields of the model's ``/v1/models`` entry (``max_model_len``, as vLLM tells)
        self.model_fields: dict[str, Any] = {}
        #: the chat requests from this one on (0: the first) wait for ``release``; ``asked`` is
        #: set when one waits (None: none waits)
        self.hold_from: int | None = None
        self.asked = asyncio.Event()
        self.release = asyncio.Event()
        #: a ``message`` dict to answer with, or an int HTTP status, or ``None`` (no choices)
        self.replies: deque[dict[str, Any] | int | None] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._runner: web.AppRunner | None = None
        self.url = ""

    def reply(self, content: str | None, tool_calls: list[dict[str, Any]] | None = None) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = [
                {
                    "id": f"c{i}",
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for i, c in enumerate(tool_calls)
            ]
        self.replies.append(message)

    async def start(self) -> None:
        app = web.Application()
        app.add_routes(
            [web.post("/v1/chat/completions", self._chat), web.get("/v1/models", self._models)]
        )
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}/v1"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _models(self, request: web.Request) -> web.Response:
        entry = {"id": self.model, "object": "model", "owned_by": "fake", **self.model_fields}
        return web.json_response({"object": "list", "data": [entry]})

    async def _chat(self, request: web.Request) -> web.Response:
        self.requests.append(await request.json())
        self.headers.append(dict(request.headers))
        if self.key is not None and request.headers.get("Authorization") != f"Bearer {self.key}":
            return web.json_response({"error": {"message": "invalid api key"}}, status=401)
        if self.hold_from is not None and len(self.requests) > self.hold_from:
            self.asked.set()
            await self.release.wait()
        scripted = (
            self.replies.popleft() if self.replies else {"role": "assistant", "content": "ok"}
        )
        if isinstance(scripted, int):
            return web.json_response({"error": {"message": "scripted"}}, status=scripted)
        choices = (
            [] if scripted is None else [{"index": 0, "message": scripted, "finish_reason": "stop"}]
        )
        return web.json_response(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": self.model,
                "choices": choices,
                "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
            }
        )
