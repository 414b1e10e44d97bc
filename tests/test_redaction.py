"""Secrets and personal data never stored, never repeated.

The corpus (``tests/data/redaction_corpus.tsv``, EN + IT, each kind positive and negative) is
checked line by line; then the positive lines go through the whole system (real Postgres and Redis,
embedded Qdrant, the fake Ollama through the real client) and a scan of every store, every prompt
and every reply finds none of the secrets."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from config import settings as settings_module
from memory import models, session
from memory import runtime as services_module
from memory.history import redaction
from tests import chatlines, scan

if TYPE_CHECKING:
    from tests.conftest import SettingsFactory
    from tests.fakes import ollama as fake_ollama_module

CORPUS = Path(__file__).parent / "data" / "redaction_corpus.tsv"
chat = chatlines.chat


@dataclass(frozen=True)
class Line:
    kinds: tuple[str, ...]
    secret: str | None
    text: str


def corpus() -> list[Line]:
    lines = []
    for raw in CORPUS.read_text(encoding="utf-8").splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        kinds, secret, text = raw.split("\t")
        lines.append(
            Line(
                kinds=() if kinds == "-" else tuple(kinds.split(",")),
                secret=None if secret == "-" else secret,
                text=text,
            )
        )
    return lines


REDACTOR = redaction.Redactor(settings_module.RedactionSettings())


def test_the_corpus_is_big_enough_and_covers_every_kind_both_ways() -> None:
    lines = corpus()
    assert len(lines) >= 40
    positive = {kind for line in lines for kind in line.kinds}
    assert positive == {k.value for k in redaction.Kind}
    negative_words = " ".join(line.text for line in lines if not line.kinds).lower()
    for word in ("password", "pin", "4111", "@", "1234567890", "it60", "oauth"):
        assert word in negative_words, word  # a negative case near each kind


@pytest.mark.parametrize("line", corpus(), ids=lambda line: line.text[:40])
def test_corpus_line(line: Line) -> None:
    result = REDACTOR.redact(line.text)
    assert set(result.kinds) == set(line.kinds), result
    if line.secret is not None:
        assert line.secret not in result.text
        for kind in line.kinds:
            assert redaction.placeholder(kind) in result.text
    else:
        assert result.text == line.text


def test_kinds_are_configurable_and_redaction_can_be_off() -> None:
    only_email = redaction.Redactor(settings_module.RedactionSettings(kinds=("email",)))
    text = "my password is hunter2, mail alice@example.com"
    assert only_email.redact(text).text == "my password is hunter2, mail [redacted:email]"
    off = redaction.Redactor(settings_module.RedactionSettings(enabled=False))
    assert off.redact(text).text == text


async def test_no_secret_reaches_any_store_prompt_or_reply(
    make_settings: SettingsFactory,
    fake_ollama: fake_ollama_module.FakeOllama,
    redis_url: str,
    tmp_path: Path,
) -> None:
    secrets = [line for line in corpus() if line.secret]
    # a 4-digit PIN also occurs inside uuids and timestamps: the store scans look for the
    # secrets long enough to be unique; prompts and replies are checked for every one, as words
    distinctive = [line.secret for line in secrets if line.secret and len(line.secret) >= 7]
    assert len(distinctive) >= 20
    prefix = f"lmtest:{uuid.uuid4().hex[:8]}:"
    settings = make_settings(
        ollama_host=fake_ollama.url,
        redis_url=redis_url,
        redis={"key_prefix": prefix},
        reply={"policy": "always"},
    )
    events = [chat(n, "alice", f"Mnemo, {line.text}") for n, line in enumerate(secrets)]
    n = len(events)
    events += [
        chat(n, "alice", "!memory"),
        chat(n + 1, "mod", "!memory @alice", badges=("moderator",)),
    ]
    reports: list[models.TurnReport] = []

    async def deliver(report: models.TurnReport) -> None:
        reports.append(report)

    async with services_module.lifespan(settings) as services:
        runner = session.Replay(
            services, deliver, commands=services.commands, sync_consolidation=True
        )
        for item in events:
            await runner.feed(item)
        await runner.finish()
        await runner.consolidate_now()
        kinds = await services.db.pool.fetchval(
            "SELECT redacted_kinds FROM messages WHERE id = 'm0'"
        )
        assert kinds == list(secrets[0].kinds)

        own, moderator = (r.reply or "" for r in reports if r.command)
        assert "[redacted:" in own and "memories, ids" in moderator
        assert "I " not in moderator.split(":", 1)[1]  # ids and slots, not alice's words
        replies = " ".join(r.reply or "" for r in reports)
        prompts = " ".join(str(request) for request in fake_ollama.chat_requests)
        assert await scan.postgres_hits(services.db, *distinctive) == []
        assert await scan.redis_hits(redis_url, prefix, *distinctive) == []
        for line in secrets:
            assert not re.search(rf"(?<!\w){re.escape(line.secret or '')}(?!\w)", replies + prompts)
    assert scan.file_hits(settings.data_dir, *distinctive) == []
