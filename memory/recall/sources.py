"""Source fetchers of the memory stage (profile, recall, episodic, lore; ``state`` plugged in) and
their registry.

A fetcher is any ``async (source: models.PlannedSource, batch: models.Batch) -> list[RecallItem]``.
It returns the items it found (empty: nothing stored / nothing relevant) or raises; the executor in
``memory.recall.retrieval`` applies timeouts, the budget, caches and single-flight around it.

Attribution: the ``recall`` fetcher searches only the personal space of the planned viewer
(``viewer:<user id>``), and drops any hit whose recorded author is someone else, so a memory is never
shown as another viewer's. With ``settings.memory.attribution_split=False`` (the naive design, an
ablation for evaluation only) it searches the one shared personal space
(``identity.SHARED_PERSONAL_KEY``) for whichever viewer is planned, without the author filter, so
other viewers' statements are shown as theirs: what that ablation measures. Profiles stay per viewer.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from memory import errors, identity, models
from memory.recall import asked
from memory.spaces import lexical, records

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from config import settings as settings_module
    from memory import ports
    from memory.adapters import postgres

logger = logging.getLogger(__name__)

#: what a cached entry is shared by: one viewer (invalidated with them), one stream, one stream and
#: the set of viewers of the batch (a result that depends on who asks, like ``state``), or everyone
Scope = Literal["viewer", "stream", "batch", "global"]
#: episodic and lore hits scoring under this share of the best hit are dropped
RELATIVE_FLOOR = 0.5
#: a time-scoped recall ranks this many times its limit of candidates before the window lifts some
WINDOW_CANDIDATES = 2
PERSONAL_KINDS = frozenset(
    {records.MemoryKind.PERSONAL, records.MemoryKind.FACT, records.MemoryKind.CORRECTION}
)


class SourceFetcher(Protocol):
    """Fetches one planned source; returns its items (empty: nothing stored) or raises."""

    async def __call__(
        self, source: models.PlannedSource, batch: models.Batch, /
    ) -> list[models.RecallItem]: ...


class ProfileFact(Protocol):
    """What a profile fact must offer (``memory.consolidate.profile.ProfileFact``)."""

    @property
    def slot(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def memory_id(self) -> str | None: ...
    @property
    def origin_message_ids(self) -> tuple[str, ...]: ...
    @property
    def stated_at(self) -> datetime: ...
    @property
    def stream(self) -> str | None: ...


class Profile(Protocol):
    @property
    def facts(self) -> Sequence[ProfileFact]: ...


class ProfileReader(Protocol):
    """Reads viewer profiles (``memory.consolidate.profile.ProfileStore``)."""

    async def get(self, user_id: str) -> Profile | None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceSpec:
    kind: str
    fetch: SourceFetcher
    #: cache TTL of a result; 0 disables caching for the kind
    ttl_seconds: float
    scope: Scope


class UnknownSource(errors.MemoryServiceError):
    """No fetcher is registered for this source kind."""


class SourceRegistry:
    """Source kind → fetcher, TTL and cache scope."""

    def __init__(self) -> None:
        self._specs: dict[str, SourceSpec] = {}

    def register(
        self,
        kind: str,
        fetch: SourceFetcher,
        *,
        ttl_seconds: float,
        scope: Scope,
    ) -> None:
        """Add or replace the fetcher of ``kind``."""
        self._specs[kind] = SourceSpec(kind=kind, fetch=fetch, ttl_seconds=ttl_seconds, scope=scope)

    def get(self, kind: str) -> SourceSpec:
        try:
            return self._specs[kind]
        except KeyError:
            raise UnknownSource(f"no fetcher is registered for source kind {kind!r}") from None

    @property
    def kinds(self) -> list[str]:
        return sorted(self._specs)


def item(source: str, space: str, viewer: str | None, hit: records.MemoryHit) -> models.RecallItem:
    """A search hit as a recall item; an episode's reply (``MemoryRecord.reply``) follows its
    viewer lines in the text, from ``reply_at`` on."""
    record = hit.record
    reply = record.reply
    return models.RecallItem(
        source=source,
        space=space,
        viewer=viewer,
        memory_id=record.id,
        text=f"{record.text}\n{reply}" if reply else record.text,
        origin_message_ids=tuple(record.origin_message_ids),
        score=hit.score,
        # lore is canon: it has no age worth a label
        said_at=None if source == "lore" else record.said_at,
        stream=record.stream,
        superseded=record.superseded_by is not None,
        reply_at=len(record.text) + 1 if reply else None,
        similarity=hit.similarity,
    )


def _viewer(source: models.PlannedSource) -> tuple[str, str]:
    if not source.user_id or not source.viewer:
        raise errors.UnknownViewer(f"source {source.key} names no viewer")
    return source.viewer, source.user_id


class ProfileSource:
    """The viewer's profile facts (their own statements), strongest slot first."""

    def __init__(self, profiles: ProfileReader) -> None:
        self.profiles = profiles

    async def __call__(
        self, source: models.PlannedSource, batch: models.Batch
    ) -> list[models.RecallItem]:
        login, user_id = _viewer(source)
        profile = await self.profiles.get(user_id)
        if profile is None:
            return []
        return [
            models.RecallItem(
                source="profile",
                space=identity.viewer_space(login),
                viewer=login,
                memory_id=fact.memory_id or f"profile:{user_id}:{fact.slot}",
                text=fact.text,
                origin_message_ids=tuple(fact.origin_message_ids),
                score=1.0 - index / 100,
                said_at=fact.stated_at,
                stream=fact.stream,
            )
            for index, fact in enumerate(profile.facts)
        ]


def window_first(
    items: Sequence[models.RecallItem], window: models.TimeWindow
) -> list[models.RecallItem]:
    """``items`` (a whole-space search, best first) with what was said in ``window`` lifted: the
    ranking fused by reciprocal rank (``lexical.fuse``, the store's own formula) with the ranking
    of the items said in the window, so one said there ranks above the whole-space best unless it
    matches the words far worse, and one outside it keeps its place among the others. The window
    orders what the words found, it adds nothing they did not. The fused order takes the search's
    scores, best first (context assembly sorts by score, so the order holds and the scale stays
    the other sources')."""
    inside = [i.memory_id for i in items if i.said_at is not None and window.contains(i.said_at)]
    fused = lexical.fuse([[i.memory_id for i in items], inside])
    order = sorted(items, key=lambda item: -fused[item.memory_id])
    scores = sorted((i.score for i in items), reverse=True)
    return [dataclasses.replace(i, score=s) for i, s in zip(order, scores, strict=True)]


class RecallSource:
    """Targeted recall in the viewer's own personal space (``shared``: in the one shared personal
    space, no author filter — the naive design, for the ``no_attribution_split`` ablation).

    A source with a ``window`` (a time-scoped question) searches the whole space for twice its
    limit and lifts what was said in the window (``window_first``): what matches the words and was
    said then ranks first, the best answer from outside it stays near the top (the words may be
    approximate, or relative to another moment than now); ``past`` (a question about the past)
    searches superseded memories too. A question for a slot ("does she drive?",
    ``PlannedSource.asks``) also brings the viewer's statements of it that a search with the slot's
    words finds (``_statements``), after what the question found."""

    def __init__(self, spaces: ports.MemorySpaces, *, limit: int, shared: bool = False) -> None:
        self.spaces = spaces
        self.limit = limit
        self.shared = shared

    async def __call__(
        self, source: models.PlannedSource, batch: models.Batch
    ) -> list[models.RecallItem]:
        login, user_id = _viewer(source)
        space = identity.personal_space_key(user_id, attribution_split=not self.shared)
        found, stated = await asyncio.gather(
            self._found(space, source, login, user_id),
            self._statements(space, source, login, user_id),
        )
        have = {item.memory_id for item in found}
        return [*found, *(item for item in stated if item.memory_id not in have)]

    async def _found(
        self, space: str, source: models.PlannedSource, login: str, user_id: str
    ) -> list[models.RecallItem]:
        if source.window is None:
            return await self._search(space, source, login, user_id, limit=self.limit)
        # a time-scoped question: the window lifts what was said in it among twice the candidates
        found = await self._search(
            space, source, login, user_id, limit=WINDOW_CANDIDATES * self.limit
        )
        return window_first(found, source.window)[: self.limit]

    async def _statements(
        self, space: str, source: models.PlannedSource, login: str, user_id: str
    ) -> list[models.RecallItem]:
        """The viewer's statements of the slots the question asks for, searched with their words
        (``asked.search_words``): the answer a slot answer reads (``relevance.answered``) even
        when it shares nothing with the question ("non guido" for "ha la patente?")."""
        words = "" if source.broad else asked.search_words(source.asks)
        if not words:
            return []
        found = await self._search(
            space, dataclasses.replace(source, query=words), login, user_id, limit=self.limit
        )
        return [item for item in found if source.asks & asked.states(item.text)]

    async def _search(
        self,
        space: str,
        source: models.PlannedSource,
        login: str,
        user_id: str,
        *,
        limit: int,
    ) -> list[models.RecallItem]:
        hits = await self.spaces.search(
            space,
            source.query,
            limit=limit,
            kinds=PERSONAL_KINDS,
            include_superseded=source.past,
        )
        items = []
        name = identity.viewer_space(login)
        for hit in hits:
            if not self.shared and hit.record.user_id and hit.record.user_id != user_id:
                logger.warning(
                    "dropped memory %s of %s found in the space of %s",
                    hit.record.id,
                    hit.record.user_id,
                    user_id,
                    extra={"action": "recall_misattributed"},
                )
                continue
            items.append(item("recall", name, login, hit))
        return items


class SpaceSource:
    """A stream-wide or global space: ``episodic`` (this stream) or ``lore``."""

    def __init__(
        self, spaces: ports.MemorySpaces, *, kind: Literal["episodic", "lore"], limit: int
    ) -> None:
        self.spaces = spaces
        self.kind = kind
        self.limit = limit

    async def __call__(
        self, source: models.PlannedSource, batch: models.Batch
    ) -> list[models.RecallItem]:
        if self.kind == "episodic":  # the batch's stream, or the one the question names
            stream = source.stream or batch.stream
            key, name = identity.episodic_key(stream), identity.stream_space(stream)
            kinds = {records.MemoryKind.EPISODIC}
        else:
            key, name, kinds = identity.LORE_KEY, identity.LORE_KEY, {records.MemoryKind.LORE}
        hits = await self.spaces.search(
            key, source.query, limit=self.limit, kinds=kinds, window=source.window
        )
        if not hits and source.window is not None:  # nothing in the window: search it all
            hits = await self.spaces.search(key, source.query, limit=self.limit, kinds=kinds)
        # a small space returns its whole content for any query: keep what is near the best hit
        floor = hits[0].score * RELATIVE_FLOOR if hits else 0.0
        return [item(self.kind, name, hit.record.login, hit) for hit in hits if hit.score >= floor]


def state_fetcher(db: postgres.Database, *, limit: int = 10) -> SourceFetcher:
    """The ``state`` fetcher over ``state.fetch_state`` (rows about the batch's viewers first)."""

    async def fetch(source: models.PlannedSource, batch: models.Batch) -> list[models.RecallItem]:
        from memory.state import channel as state

        user_ids = sorted({event.user_id for event in batch.chat})
        return await state.fetch_state(
            db,
            batch.stream,
            source.query,
            user_ids=user_ids,
            limit=limit,
        )

    return fetch


def default_registry(
    settings: settings_module.Settings,
    *,
    spaces: ports.MemorySpaces,
    profiles: ProfileReader,
    state: SourceFetcher | None = None,
) -> SourceRegistry:
    """profile, recall, episodic, lore (and state when given) with the TTLs of ``settings.memory``."""
    memory = settings.memory
    registry = SourceRegistry()
    registry.register(
        "profile", ProfileSource(profiles), ttl_seconds=memory.profile_ttl_seconds, scope="viewer"
    )
    registry.register(
        "recall",
        RecallSource(spaces, limit=memory.recall_limit, shared=not memory.attribution_split),
        ttl_seconds=memory.recall_ttl_seconds,
        scope="viewer",
    )
    registry.register(
        "episodic",
        SpaceSource(spaces, kind="episodic", limit=memory.recall_limit),
        ttl_seconds=memory.episodic_ttl_seconds,
        scope="stream",
    )
    registry.register(
        "lore",
        SpaceSource(spaces, kind="lore", limit=memory.recall_limit),
        ttl_seconds=memory.lore_ttl_seconds,
        scope="global",
    )
    if state is not None:
        # rows about the batch's viewers rank first: the cached result depends on who asks
        registry.register("state", state, ttl_seconds=memory.state_ttl_seconds, scope="batch")
    return registry
