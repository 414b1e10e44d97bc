"""Ollama through the official ``ollama.AsyncClient``: chat (with tool calls) and embeddings."""

from __future__ import annotations

import contextlib
import uuid
from typing import TYPE_CHECKING, Any

import httpx
import ollama

from memory import errors, models, outage

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

    from memory import ports


def how_to_start(host: str) -> str:
    return (
        f"Ollama is not reachable at {host}: start it with `ollama serve` (and pull the models), "
        "set OLLAMA_HOST, or pass --no-llm"
    )


@contextlib.contextmanager
def wrap_errors(host: str, model: str) -> Iterator[None]:
    """Translate the client's errors at the boundary; an unreachable server is an outage, told
    once when it starts and once when it ends (``memory.outage``)."""
    # a model error is an answer (a refusal): Ollama is there
    watch = outage.watched(outage.OLLAMA, f"Ollama at {host}", answered=(errors.ModelError,))
    with watch, _translate(host, model):
        yield


@contextlib.contextmanager
def _translate(host: str, model: str) -> Iterator[None]:
    """The client's errors as ours (``wrap_errors`` without the outage bookkeeping: start-up)."""
    try:
        yield
    except (ConnectionError, httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise errors.ModelUnavailable(how_to_start(host)) from exc
    except httpx.TimeoutException as exc:
        raise errors.ModelUnavailable(f"Ollama at {host} timed out ({model})") from exc
    except httpx.TransportError as exc:  # the connection dropped mid-answer, and the like
        raise errors.ModelUnavailable(f"Ollama at {host} failed ({model}): {exc!r}") from exc
    except ollama.ResponseError as exc:
        if exc.status_code == 404:
            raise errors.ModelError(
                f"model {model!r} is not available on {host}: run `ollama pull {model}`"
            ) from exc
        if exc.status_code >= 500:
            raise errors.ModelUnavailable(f"Ollama error {exc.status_code}: {exc.error}") from exc
        raise errors.ModelError(f"Ollama error {exc.status_code}: {exc.error}") from exc


def to_wire(message: models.PromptMessage) -> dict[str, Any]:
    wire: dict[str, Any] = {"role": message.role.value, "content": message.content}
    if message.tool_calls:
        wire["tool_calls"] = [
            {"function": {"name": c.name, "arguments": dict(c.arguments)}}
            for c in message.tool_calls
        ]
    if message.tool_name:
        wire["tool_name"] = message.tool_name
    return wire


class OllamaChat:
    """``ports.ChatModel`` on Ollama's ``/api/chat`` (not streamed: a batch reply is short)."""

    def __init__(
        self,
        host: str,
        model: str,
        *,
        timeout: float = 120.0,
        temperature: float | None = None,
        context_tokens: int | None = None,
        client: ollama.AsyncClient | None = None,
    ) -> None:
        self.host = host
        self.model = model
        self.temperature = temperature
        #: the configured context window (Ollama's runtime ``num_ctx`` is the server's)
        self.context_tokens = context_tokens
        self.client = client or ollama.AsyncClient(host=host, timeout=timeout)

    async def check(self) -> None:
        """Fail fast, with how to fix it, when Ollama or the model is not there."""
        with _translate(self.host, self.model):
            listed = await self.client.list()
        names = {m.model for m in listed.models if m.model}
        if self.model not in names and f"{self.model}:latest" not in names:
            raise errors.ModelError(
                f"model {self.model!r} is not pulled on {self.host}: run `ollama pull {self.model}`"
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
        options: dict[str, Any] = {}
        if self.temperature is not None:
            options["temperature"] = self.temperature
        if max_tokens is not None:
            options["num_predict"] = max_tokens
        with wrap_errors(self.host, name):
            response = await self.client.chat(
                model=name,
                messages=[to_wire(m) for m in messages],
                tools=list(tools) if tools else None,
                options=options or None,
                stream=False,
            )
        calls = tuple(
            models.ToolCall(
                id=f"call-{uuid.uuid4().hex[:12]}",
                name=call.function.name,
                arguments=dict(call.function.arguments or {}),
            )
            for call in (response.message.tool_calls or ())
        )
        return models.ModelReply(
            content=response.message.content or "",
            tool_calls=calls,
            prompt_tokens=response.prompt_eval_count,
            completion_tokens=response.eval_count,
        )


def canonical_model(model: str) -> str:
    """Ollama's name for a model: ``all-minilm`` is ``all-minilm:latest``."""
    return model if ":" in model else f"{model}:latest"


async def has_model(host: str, model: str, *, request_timeout: float = 1.0) -> bool:
    """Whether the Ollama at ``host`` answers ``/api/tags`` and lists ``model``."""
    client = ollama.AsyncClient(host=host, timeout=request_timeout)
    with _translate(host, model):  # a probe at start-up: its answer is the news, not an outage
        listed = await client.list()
    names = {canonical_model(m.model) for m in listed.models if m.model}
    return canonical_model(model) in names


class OllamaEmbedder:
    """``ports.Embedder`` on Ollama's ``/api/embed``, batched.

    ``name`` is ``ollama:<model:tag>``; ``dim`` is known after ``probe()`` (or the first
    ``embed``) unless given. Connection failures raise ``errors.ModelUnavailable`` (a
    ``StoreUnavailable``), model errors ``errors.ModelError``.
    """

    def __init__(
        self,
        host: str,
        model: str,
        *,
        dim: int = 0,
        batch_size: int = 64,
        timeout: float = 60.0,
        client: ollama.AsyncClient | None = None,
    ) -> None:
        self.host = host
        self.model = model
        self.name = f"ollama:{canonical_model(model)}"
        self.dim = dim
        self.batch_size = batch_size
        self.client = client or ollama.AsyncClient(host=host, timeout=timeout)

    async def probe(self) -> None:
        """Embed one text to learn the dimension (and fail fast when the model is missing)."""
        await self.embed(["dimension probe"])

    async def embed(
        self, texts: Sequence[str], *, kind: ports.EmbedKind = "passage"
    ) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            with wrap_errors(self.host, self.model):
                response = await self.client.embed(model=self.model, input=batch)
            got = [list(v) for v in response.embeddings]
            if len(got) != len(batch):
                raise errors.ModelError(
                    f"Ollama returned {len(got)} embeddings for {len(batch)} texts ({self.model})"
                )
            vectors.extend(got)
        for vector in vectors:
            if not self.dim:
                self.dim = len(vector)
            if len(vector) != self.dim:
                raise errors.ModelError(
                    f"Ollama model {self.model} returned a {len(vector)}-d vector, "
                    f"expected {self.dim}"
                )
        return vectors
