"""What the memory-stage tests share: a chat of three viewers, planned sources, a scriptable source
fetcher and a retriever built around it (``tests/test_retrieval*.py``)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from memory import identity, metrics, models
from memory.recall import cache as cache_module
from memory.recall import retrieval, sources
from tests.conftest import IsolatedSettings

if TYPE_CHECKING:
    from collections.abc import Mapping

    from config import settings as settings_module

T0 = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)
IDS = {"alice": "1001", "bob": "1002", "carol": "1003"}


def plain_settings(**memory: Any) -> settings_module.Settings:
    return IsolatedSettings(bot_name="livememory", memory={"embedder": "offline", **memory})


def event(login: str, text: str, n: int = 1) -> models.ChatEvent:
    return models.ChatEvent(
        id=f"{login}-m{n}",
        stream="s1",
        user_id=IDS[login],
        login=login,
        text=text,
        ts=T0 + timedelta(seconds=n),
    )


def one_batch(*events: models.ChatEvent) -> models.Batch:
    return models.Batch(stream="s1", events=events or (event("alice", "hi"),))


def source(kind: str, viewer: str | None = None, **kw: Any) -> models.PlannedSource:
    return models.PlannedSource(
        kind=kind, viewer=viewer, user_id=IDS.get(viewer or ""), query=kw.pop("query", "q"), **kw
    )


class Fetcher:
    """A registered test fetcher: counts calls, returns one item, or waits / fails when told."""

    def __init__(self, kind: str, *, wait: asyncio.Event | None = None, fail: bool = False) -> None:
        self.kind, self.wait, self.fail = kind, wait, fail
        self.calls = 0
        self.started = asyncio.Event()
        self.cancelled = False

    async def __call__(
        self, planned: models.PlannedSource, batch: models.Batch
    ) -> list[models.RecallItem]:
        self.calls += 1
        self.started.set()
        if self.wait is not None:
            try:
                await self.wait.wait()
            except asyncio.CancelledError:
                self.cancelled = True
                raise
        if self.fail:
            raise RuntimeError("source broke")
        return [
            models.RecallItem(
                source=self.kind,
                space=identity.viewer_space(planned.viewer) if planned.viewer else self.kind,
                viewer=planned.viewer,
                memory_id=f"{self.kind}-{planned.viewer}-{self.calls}",
                text=f"{self.kind} fact about {planned.viewer or 'the stream'} #{self.calls}",
                origin_message_ids=("o1",),
                score=0.9,
            )
        ]


def make_retriever(
    fetchers: Mapping[str, Fetcher],
    *,
    cache: Any = None,
    registry_metrics: metrics.MemoryMetrics | None = None,
    **memory: Any,
) -> retrieval.Retriever:
    settings = plain_settings(**memory)
    ttl = {
        "profile": settings.memory.profile_ttl_seconds,
        "recall": settings.memory.recall_ttl_seconds,
        "episodic": settings.memory.episodic_ttl_seconds,
        "lore": settings.memory.lore_ttl_seconds,
    }
    registry = sources.SourceRegistry()
    for kind, fetcher in fetchers.items():
        scope: sources.Scope = "viewer" if kind in ("profile", "recall") else "global"
        registry.register(kind, fetcher, ttl_seconds=ttl.get(kind, 0), scope=scope)
    return retrieval.Retriever(
        settings,
        registry=registry,
        cache=cache if cache is not None else cache_module.InProcessCache(),
        metrics=registry_metrics,
    )


class NoProfiles:
    """A profile store that knows nobody."""

    async def get(self, user_id: str) -> None:
        return None
