"""A protocol-faithful fake Ollama server (aiohttp) on 127.0.0.1, driven through the real
``ollama.AsyncClient``.

Speaks Ollama's wire format: ``POST /api/chat`` (streamed NDJSON by default, or one JSON object with
``"stream": false``; tool calls in ``message.tool_calls``), ``POST /api/embed`` (batched),
``GET /api/tags``, ``GET /api/version``. Scriptable: queue replies (text or tool calls), fail the next
calls with an HTTP status, delay answers; every request body is recorded.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

NOW = "2026-11-29T20:00:00Z"
DEFAULT_MODELS = (
    "llama3.2:3b",
    "all-minilm",
    "all-minilm:latest",
    "paraphrase-multilingual",
    "paraphrase-multilingual:latest",
    "llama3.2:1b",
)


def fake_vector(text: str, dim: int = 384) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    values = [((digest[i % 32] ^ (i * 31)) % 255) / 127.0 - 1.0 for i in range(dim)]
    norm = math.sqrt(sum(x * x for x in values)) or 1.0
    return [x / norm for x in values]


@dataclass
class ScriptedReply:
    """One scripted answer of ``/api/chat``."""

    content: str = ""
    #: ``[{"name": ..., "arguments": {...}}]``
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    #: answer with this HTTP error status instead (a failure in the scripted order)
    status: int | None = None


class FakeOllama:
    """Start with ``await start()``; ``url`` is the host to give ``ollama.AsyncClient``. ``stop``
    and ``start`` again make an outage of Ollama."""

    def __init__(self, models: tuple[str, ...] = DEFAULT_MODELS, embed_dim: int = 384) -> None:
        self.models = list(models)
        self.embed_dim = embed_dim
        self.replies: deque[ScriptedReply] = deque()
        #: HTTP statuses to answer the next chat/embed calls with (then normal again)
        self.failures: deque[int] = deque()
        #: embed calls to answer before failing one (``fail_embed_after``)
        self._embed_countdown: int | None = None
        self._embed_failure = 500
        #: seconds to wait before answering a chat call
        self.delay = 0.0
        self.chat_requests: list[dict[str, Any]] = []
        self.embed_requests: list[dict[str, Any]] = []
        self._runner: web.AppRunner | None = None
        #: kept across ``stop`` / ``start``: a restarted fake answers where it did (an outage)
        self.port = 0
        self.url = ""

    # -- scripting ---------------------------------------------------------------------------
    def reply(self, content: str) -> None:
        self.replies.append(ScriptedReply(content=content))

    def call_tool(self, name: str, arguments: dict[str, Any], content: str = "") -> None:
        self.replies.append(
            ScriptedReply(content=content, tool_calls=[{"name": name, "arguments": arguments}])
        )

    def fail_in_turn(self, status: int = 500) -> None:
        """Queue a failure after the replies queued so far (``fail_next`` fails the very next call)."""
        self.replies.append(ScriptedReply(status=status))

    def fail_next(self, status: int = 500, times: int = 1) -> None:
        self.failures.extend([status] * times)

    def fail_embed_after(self, calls: int, status: int = 500) -> None:
        """Answer the next ``calls`` embed calls, then fail one with ``status`` (Ollama dying
        part-way through a long job)."""
        self._embed_countdown = calls
        self._embed_failure = status

    def chat_calls(self, model: str | None = None) -> int:
        return sum(1 for r in self.chat_requests if model is None or r.get("model") == model)

    # -- server ------------------------------------------------------------------------------
    async def start(self) -> None:
        app = web.Application()
        app.add_routes(
            [
                web.post("/api/chat", self._chat),
                web.post("/api/embed", self._embed),
                web.get("/api/tags", self._tags),
                web.get("/api/version", self._version),
            ]
        )
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{self.port}"

    async def stop(self) -> None:
        """Stop answering (connections refused); ``start`` again serves on the same port."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def _model_error(self, model: Any) -> web.Response | None:
        if model not in self.models:
            return web.json_response({"error": f"model '{model}' not found"}, status=404)
        if self.failures:
            status = self.failures.popleft()
            return web.json_response({"error": "scripted failure"}, status=status)
        return None

    def _next_reply(self, body: dict[str, Any]) -> ScriptedReply:
        if self.replies:
            return self.replies.popleft()
        last_user = next(
            (m.get("content", "") for m in reversed(body["messages"]) if m["role"] == "user"), ""
        )
        return ScriptedReply(content="echo: " + last_user.splitlines()[-1] if last_user else "ok")

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.chat_requests.append(body)
        if error := self._model_error(body.get("model")):
            return error
        if self.delay:
            await asyncio.sleep(self.delay)
        scripted = self._next_reply(body)
        if scripted.status is not None:
            return web.json_response({"error": "scripted failure"}, status=scripted.status)
        message: dict[str, Any] = {"role": "assistant", "content": scripted.content}
        if scripted.tool_calls:
            message["tool_calls"] = [{"function": call} for call in scripted.tool_calls]
        final = {
            "model": body["model"],
            "created_at": NOW,
            "done": True,
            "done_reason": "stop",
            "total_duration": 1000,
            "prompt_eval_count": 10,
            "eval_count": max(1, len(scripted.content.split())),
        }
        if body.get("stream", True) is False:
            return web.json_response({**final, "message": message})
        response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await response.prepare(request)
        for word in scripted.content.split(" ") if scripted.content else []:
            chunk = {
                "model": body["model"],
                "created_at": NOW,
                "done": False,
                "message": {"role": "assistant", "content": word + " "},
            }
            await response.write((json.dumps(chunk) + "\n").encode())
        last = {**final, "message": {**message, "content": ""}}
        await response.write((json.dumps(last) + "\n").encode())
        await response.write_eof()
        return response

    async def _embed(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.embed_requests.append(body)
        if error := self._model_error(body.get("model")):
            return error
        if self._embed_countdown is not None:
            if self._embed_countdown == 0:
                self._embed_countdown = None
                return web.json_response({"error": "scripted failure"}, status=self._embed_failure)
            self._embed_countdown -= 1
        inputs = [body["input"]] if isinstance(body["input"], str) else body["input"]
        return web.json_response(
            {
                "model": body["model"],
                "embeddings": [fake_vector(t, self.embed_dim) for t in inputs],
                "total_duration": 1000,
                "prompt_eval_count": len(inputs),
            }
        )

    async def _tags(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "models": [
                    {
                        "name": m,
                        "model": m,
                        "modified_at": NOW,
                        "size": 1234,
                        "digest": "0" * 64,
                        "details": {
                            "format": "gguf",
                            "family": "llama",
                            "parameter_size": "1B",
                            "quantization_level": "Q4_0",
                        },
                    }
                    for m in self.models
                ]
            }
        )

    async def _version(self, request: web.Request) -> web.Response:
        return web.json_response({"version": "0.12.0"})
