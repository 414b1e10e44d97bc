"""docker compose cannot run here: keep docker-compose.yml correct by reading it."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests import cli


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load((cli.ROOT / "docker-compose.yml").read_text())
    assert isinstance(data, dict)
    return data


def test_every_backing_service_has_a_healthcheck(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name in ("postgres", "redis", "qdrant", "ollama", "worker"):
        assert "healthcheck" in services[name], name
        assert services[name]["healthcheck"]["test"], name


def test_the_bot_waits_for_healthy_services_and_the_model_pull(compose: dict[str, Any]) -> None:
    for app in ("bot", "worker"):
        depends = compose["services"][app]["depends_on"]
        for name in ("postgres", "redis", "qdrant"):
            assert depends[name]["condition"] == "service_healthy", (app, name)
        assert depends["ollama-pull"]["condition"] == "service_completed_successfully"


def test_the_model_pull_fetches_chat_and_embedding_models(compose: dict[str, Any]) -> None:
    pull = compose["services"]["ollama-pull"]
    script = " ".join(pull["command"])
    assert "ollama pull" in script and "CHAT_MODEL" in script and "EMBED_MODEL" in script
    assert pull["depends_on"]["ollama"]["condition"] == "service_healthy"
    assert pull["restart"] == "no"


def test_the_apps_use_the_design_environment_names(compose: dict[str, Any]) -> None:
    env = compose["services"]["bot"]["environment"]
    for name in ("DATABASE_URL", "REDIS_URL", "QDRANT_URL", "OLLAMA_HOST", "LIVEMEMORY_DATA_DIR"):
        assert name in env, name
    assert (
        env["DATABASE_URL"].startswith("postgresql://") and "@postgres:5432/" in env["DATABASE_URL"]
    )
    assert compose["services"]["bot"]["command"] == ["python", "-m", "bot", "run"]
    assert compose["services"]["worker"]["command"] == ["python", "-m", "memory.worker"]


def test_the_image_build_context_has_a_dockerfile(compose: dict[str, Any]) -> None:
    assert compose["services"]["bot"]["build"] == "."
    dockerfile = (cli.ROOT / "Dockerfile").read_text()
    assert "pip install" in dockerfile and "migrations" in dockerfile
    # PYTHONDONTWRITEBYTECODE and an editable install: the image compiles the code it copies
    # once, or every start compiles it again
    compiled = next(line for line in dockerfile.splitlines() if "compileall" in line).split()
    copied = [line.split()[1] for line in dockerfile.splitlines() if line.startswith("COPY ")]
    for package in ("bot", "memory", "config"):
        assert package in copied and package in compiled, package
