"""Any OpenAI-compatible chat server (LM Studio, llama.cpp's llama-server, vLLM, a hosted endpoint)
through the official ``openai.AsyncOpenAI``: ``/v1/chat/completions`` with ``tools``."""

from __future__ import annotations

import contextlib
import json
import logging
import uuid
from typing import TYPE_CHECKING, Any

import openai

from memory import errors, models

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def _translate(base_url: str, model: str) -> Iterator[None]:
    """The client's errors as ours; the API key is never part of a message."""
    try:
        yield
    except openai.APITimeoutError as exc:
        raise errors.ModelUnavailable(f"model server at {base_url} timed out ({model})") from exc
    except openai.APIConnectionError as exc:
        raise errors.ModelUnavailable(f"model server at {base_url} is not reachable") from exc
    except openai.APIStatusError as exc:
        if exc.status_code >= 500:
            raise errors.ModelUnavailable(
                f"model server at {base_url} failed: HTTP {exc.status_code}"
            ) from exc
        raise errors.ModelError(
            f"model server at {base_url} refused {model!r}: HTTP {exc.status_code}"
        ) from exc


def _wire(messages: Sequence[models.PromptMessage]) -> list[dict[str, Any]]:
    """Our prompt as OpenAI messages; a tool result answers the last call of its tool's name."""
    wire: list[dict[str, Any]] = []
    call_ids: dict[str, str] = {}
    for message in messages:
        item: dict[str, Any] = {"role": message.role.value, "content": message.content}
        if message.tool_calls:
            item["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments))},
                }
                for c in message.tool_calls
            ]
            call_ids.update({c.name: c.id for c in message.tool_calls})
        if message.tool_name:
            item["tool_call_id"] = call_ids.get(message.tool_name, message.tool_name)
        wire.append(item)
    return wire


def _call(name: str, raw: str | None) -> models.ToolCall | None:
    """One tool call; malformed arguments are told in one line and the call is dropped."""
    try:
        arguments = json.loads(raw or "{}")
    except json.JSONDecodeError:
        arguments = None
    if not isinstance(arguments, dict):
        logger.warning("model asked for tool %r with malformed arguments: dropped", name)
        return None
    return models.ToolCall(id=f"call-{uuid.uuid4().hex[:12]}", name=name, arguments=arguments)


#: where servers tell a model's context window in its ``/v1/models`` entry: vLLM
#: (``max_model_len``), OpenRouter and other hosted lists (``context_length``); llama.cpp's servers
#: and LM Studio tell none there (configure ``LIVEMEMORY_MODEL__CONTEXT_TOKENS``)
_CONTEXT_FIELDS = ("max_model_len", "context_length")


def told_context(entry: Mapping[str, Any]) -> int | None:
    """The context window a ``/v1/models`` entry tells, or None."""
    for field in _CONTEXT_FIELDS:
        value = entry.get(field)
        if isinstance(value, int) and value > 0:
            return value
    return None


class OpenAIChat:
    """``ports.ChatModel`` on an OpenAI-compatible ``/v1/chat/completions`` (not streamed: a
    batch reply is short, as with Ollama)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str = "",
        timeout: float = 120.0,
        temperature: float | None = None,
        context_tokens: int | None = None,
        client: openai.AsyncOpenAI | None = None,
    ) -> None:
        self.base_url = base_url
        self.model = model
        self.temperature = temperature
        #: configured, else learnt from the server by ``check`` (None: unknown)
        self.context_tokens = context_tokens
        # local servers take any key; the client insists on one
        self.client = client or openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key or "none", timeout=timeout, max_retries=0
        )

    async def check(self) -> None:
        """Fail fast when the server is not there or does not serve the model; learn the
        model's context window when the server tells it and none is configured."""
        with _translate(self.base_url, self.model):
            listed = await self.client.models.list()
        served = {entry.id: entry for entry in listed.data}
        if self.model not in served:
            names = ", ".join(sorted(served)) or "none"
            raise errors.ModelError(
                f"model {self.model!r} is not served at {self.base_url} (served: {names}): "
                "set LIVEMEMORY_MODEL__NAME"
            )
        if self.context_tokens is None:
            self.context_tokens = told_context(served[self.model].model_extra or {})
            if self.context_tokens is not None:
                logger.info(
                    "model %s at %s: a context of %d tokens",
                    self.model,
                    self.base_url,
                    self.context_tokens,
                )

    async def chat(
        self,
        messages: Sequence[models.PromptMessage],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        model: str | None = None,
        max_tokens: int | None = None,
    ) -> models.ModelReply:
        name = model or self.model
        # the wire messages are plain dicts; the client's TypedDicts are only a typing aid
        extra: dict[str, Any] = {"messages": _wire(messages)}
        if tools:
            # OpenAI's default, said: llama-cpp-python's function-calling format needs it said
            extra.update(tools=list(tools), tool_choice="auto")
        if max_tokens is not None:
            extra["max_tokens"] = max_tokens
        if self.temperature is not None:
            extra["temperature"] = self.temperature
        with _translate(self.base_url, name):
            response = await self.client.chat.completions.create(model=name, **extra)
        if not response.choices:
            logger.warning("model server at %s answered no choice (%s)", self.base_url, name)
            return models.ModelReply(content="")
        message = response.choices[0].message
        calls = tuple(
            call
            for raw in (message.tool_calls or ())
            if raw.type == "function"
            and (call := _call(raw.function.name, raw.function.arguments)) is not None
        )
        usage = response.usage
        return models.ModelReply(
            content=message.content or "",
            tool_calls=calls,
            prompt_tokens=usage.prompt_tokens if usage else None,
            completion_tokens=usage.completion_tokens if usage else None,
        )
