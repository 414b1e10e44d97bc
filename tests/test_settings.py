from __future__ import annotations

from typing import TYPE_CHECKING

import pydantic
import pytest

from config import settings as settings_module

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ("DATABASE_URL", "REDIS_URL", "QDRANT_URL", "OLLAMA_HOST", "LIVEMEMORY_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_defaults_are_embedded(clean_env: Path) -> None:
    s = settings_module.Settings()
    assert s.database_url is None and s.redis_url is None and s.qdrant_url is None
    assert s.ollama_host == "http://127.0.0.1:11434"
    assert str(s.data_dir) == "data"
    assert s.system_prompt()


def test_environment_names_of_the_design(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://u:hunter2@db/x")
    monkeypatch.setenv("REDIS_URL", "redis://r:6379/0")
    monkeypatch.setenv("QDRANT_URL", "http://q:6333")
    monkeypatch.setenv("OLLAMA_HOST", "http://o:11434")
    monkeypatch.setenv("LIVEMEMORY_DATA_DIR", "/srv/lm")
    monkeypatch.setenv("LIVEMEMORY_OLLAMA__CHAT_MODEL", "qwen2.5:7b")
    monkeypatch.setenv("LIVEMEMORY_BATCH__WINDOW_SECONDS", "3.5")
    s = settings_module.Settings()
    assert s.database_url is not None and s.database_url.get_secret_value().endswith("@db/x")
    assert "hunter2" not in repr(s)  # SecretStr masks it
    assert s.qdrant_url == "http://q:6333" and s.ollama_host == "http://o:11434"
    assert str(s.data_dir) == "/srv/lm"
    assert s.ollama.chat_model == "qwen2.5:7b" and s.batch.window_seconds == 3.5


def test_the_model_section_from_the_environment(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIVEMEMORY_MODEL__PROVIDER", "openai")
    monkeypatch.setenv("LIVEMEMORY_MODEL__API_KEY", "sk-test-from-the-environment")
    monkeypatch.setenv("LIVEMEMORY_MODEL__CONTEXT_TOKENS", "2048")
    monkeypatch.setenv("LIVEMEMORY_MODEL__REPLY_TIMEOUT_S", "7.5")
    monkeypatch.setenv("LIVEMEMORY_MODEL__TEMPERATURE", "0")
    model = settings_module.Settings().model
    assert (model.provider, model.context_tokens, model.reply_timeout_s) == ("openai", 2048, 7.5)
    assert model.temperature == 0.0 and model.reply_tokens == 256
    assert model.api_key.get_secret_value() == "sk-test-from-the-environment"
    assert "from-the-environment" not in repr(model)


def test_empty_url_means_embedded(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "")
    assert settings_module.Settings().database_url is None


def test_dotenv_is_read_and_unknown_keys_rejected(clean_env: Path) -> None:
    (clean_env / ".env").write_text("LIVEMEMORY_OLLAMA__CHAT_MODEL=llama3.2:1b\n")
    assert settings_module.Settings().ollama.chat_model == "llama3.2:1b"
    (clean_env / ".env").write_text("LIVEMEMORY_NO_SUCH_KNOB=1\n")
    with pytest.raises(pydantic.ValidationError, match="no_such_knob"):
        settings_module.Settings()


def test_nested_unknown_keys_and_bounds_rejected(clean_env: Path) -> None:
    with pytest.raises(pydantic.ValidationError):
        settings_module.Settings(batch={"window": 2})
    with pytest.raises(pydantic.ValidationError):
        settings_module.Settings(memory={"max_viewers": 6})


def test_dotenv_may_hold_docker_compose_variables(clean_env: Path) -> None:
    (clean_env / ".env").write_text(
        "POSTGRES_PASSWORD=x\nCHAT_MODEL=llama3.2:3b\nLIVEMEMORY_TWITCH__CLIENT_ID=abc\n"
    )
    assert settings_module.Settings().twitch.client_id == "abc"
