"""The memory stage executor: every planned source concurrently, under a per-source timeout and a
total budget, through caches and single-flight; then context assembly.

* Each source runs as its own task with ``settings.memory.source_timeout_ms``; a late one is
  cancelled and reported ``Degraded(reason="timeout")``, a failing one ``reason="error"``.
* The stage stops waiting at ``settings.memory.budget_ms``: sources still running are cancelled and
  reported ``reason="budget"``. The turn always goes on with what arrived.
* Results are cached (``ports.Cache``) with a TTL per kind (profile > recall, lore longest): as
  JSON in a shared cache (Redis), as the items themselves in the in-process one (``InProcessCache.
  set_value``). Keys of a viewer's sources start with ``mem2:v:<user id>:`` so
  :meth:`Retriever.invalidate_viewer` drops them with one prefix delete (forget / correct /
  consolidation call it).
* Identical in-flight requests (same cache key) share one call (``cache.SingleFlight``), whichever
  turn or viewer asked; a caller timing out never cancels the call for the others.
* An invalidation bumps a generation per viewer (``v:<user id>``) or kind (``k:<kind>``): a fetch
  that was running then does not write its (possibly pre-forget) result into the cache, and later
  requests do not join it. With a shared cache (Redis) the invalidation also leaves a marker in it,
  so an invalidation by another process (the admin CLI) counts too.
* The ``state`` source is cached per stream *and* set of batch authors (scope ``batch``): its rows
  about the asking viewers rank first.

Embedded Qdrant (Qdrant Edge, whose binding holds the GIL for every call; before it local mode) runs
its search synchronously inside its ``async`` methods: a search that is running blocks the event
loop, so neither the source timeout nor the budget can preempt it.
They take effect at the next await point (the next source, or right after the blocking search
returns). The benchmark ``python -m memory.eval.bench_retrieval`` measures how long those searches take
at 1k and 10k memories; with a Qdrant server (``QDRANT_URL``) searches are real I/O and the
deadlines are exact.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memory import models, outage
from memory.recall import cache as cache_module
from memory.recall import context, earlier, relevance, sources, timelabel
from memory.spaces import records

if TYPE_CHECKING:
    from collections.abc import Sequence

    from config import settings as settings_module
    from memory import metrics as metrics_module
    from memory import ports

logger = logging.getLogger(__name__)

#: bumped when the cached value shape changes, so old entries are never read
CACHE_VERSION = "mem2"
#: how long cancelled sources get to unwind after the budget ran out (seconds)
CANCEL_GRACE_SECONDS = 0.05
#: how long a shared cache keeps an invalidation marker (far longer than any fetch runs)
GENERATION_TTL_SECONDS = 24 * 3600.0


@dataclass(slots=True, kw_only=True)
class RecallResult:
    """What the memory stage brought back (satisfies ``ports.Recall``)."""

    items: list[models.RecallItem] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    degraded: list[models.Degraded] = field(default_factory=list)
    block: str = ""
    #: items the relevance floor left out, per source key
    dropped: dict[str, int] = field(default_factory=dict)
    #: every source's outcome, in plan order (items before assembly)
    outcomes: list[context.SourceOutcome] = field(default_factory=list)


def _encode(items: Sequence[models.RecallItem]) -> str:
    return json.dumps([item.to_json() for item in items], ensure_ascii=False)


def _decode(value: str) -> list[models.RecallItem]:
    return [models.RecallItem.from_json(data) for data in json.loads(value)]


def cache_key(
    source: models.PlannedSource,
    spec: sources.SourceSpec,
    stream: str,
    user_ids: Sequence[str] = (),
) -> str:
    """The cache (and single-flight) key of a source: scope, owner, kind, normalized query digest
    (``batch`` scope: the digest also covers the sorted ``user_ids`` of the batch's authors; a
    time window or the past flag, when set, too)."""
    text = context.normalize(source.query)
    if source.window is not None or source.past:
        window = source.window or records.TimeWindow()
        bounds = [m.isoformat() if m else "" for m in (window.since, window.until)]
        text += "\x1e" + ",".join(bounds) + (",past" if source.past else "")
    if spec.scope == "batch":
        text += "\x1f" + ",".join(sorted(set(user_ids)))
    digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]
    if spec.scope == "viewer":
        return f"{CACHE_VERSION}:v:{source.user_id}:{spec.kind}:{digest}"
    if spec.scope in ("stream", "batch"):
        return f"{CACHE_VERSION}:s:{spec.kind}:{stream}:{digest}"
    return f"{CACHE_VERSION}:g:{spec.kind}:{digest}"


class Retriever:
    """Implements ``ports.Retriever``. Build it with :func:`build_retriever`."""

    def __init__(
        self,
        settings: settings_module.Settings,
        *,
        registry: sources.SourceRegistry,
        cache: ports.Cache,
        metrics: metrics_module.MemoryMetrics | None = None,
        floor: relevance.Floor | None = None,
    ) -> None:
        self.registry = registry
        #: which items are worth their tokens (None: every item the budget holds)
        self.floor = floor
        #: a viewer whose profile states the slot a question asks for gives that statement only
        #: (``relevance.answered``); off with the floor setting
        self.slot_answers = settings.memory.relevance_floor
        self.cache = cache
        self.metrics = metrics
        self.budget_s = settings.memory.budget_ms / 1000
        self.source_timeout_s = settings.memory.source_timeout_ms / 1000
        self.token_budget = settings.memory.token_budget
        self.dedupe = settings.memory.dedupe
        self._flight: cache_module.SingleFlight[list[models.RecallItem]] = (
            cache_module.SingleFlight()
        )
        #: invalidation group (``v:<user id>`` / ``k:<kind>``) → invalidations seen in-process
        self._generations: dict[str, int] = {}
        #: a cache other processes share: invalidations are also marked in it (see ``_generation``)
        self._shared = not isinstance(cache, cache_module.InProcessCache)

    async def retrieve(
        self,
        plan: models.Plan,
        batch: models.Batch,
        history: Sequence[models.HistoryItem],
    ) -> RecallResult:
        started = time.perf_counter()
        result = RecallResult()
        outcomes: dict[int, context.SourceOutcome] = {}
        tasks: dict[asyncio.Task[context.SourceOutcome], int] = {}
        for index, source in enumerate(plan.sources):
            try:
                spec = self.registry.get(source.kind)
            except sources.UnknownSource as exc:
                logger.warning("%s", exc, extra={"action": "source_unknown"})
                outcomes[index] = self._failed(source, "error")
                result.timings_ms[source.key] = 0.0
                continue
            task = asyncio.create_task(
                self._run(source, spec, batch, result.timings_ms), name=f"memory:{source.key}"
            )
            tasks[task] = index
        if tasks:
            try:
                done, pending = await asyncio.wait(tasks, timeout=self.budget_s)
            finally:  # the budget ran out, or the turn itself was cancelled: no orphan fetches
                for task in tasks:
                    task.cancel()
            for task in done:
                outcomes[tasks[task]] = task.result()
            for task in pending:
                source = plan.sources[tasks[task]]
                self._slow(source, f"over the stage's budget ({self.budget_s * 1000:g} ms)")
                outcomes[tasks[task]] = self._failed(source, "budget")
                result.timings_ms[source.key] = (time.perf_counter() - started) * 1000
            if pending:  # let the cancelled fetchers unwind (bounded: never blocks the turn)
                await asyncio.wait(pending, timeout=CANCEL_GRACE_SECONDS)
        result.outcomes = [outcomes[i] for i in sorted(outcomes)]
        result.degraded = [o.degraded for o in result.outcomes if o.degraded is not None]
        assembled = context.assemble(
            result.outcomes,
            history,
            token_budget=self.token_budget,
            dedupe=self.dedupe,
            clock=timelabel.ChatClock.of_batch(batch) if batch.events else None,
            floor=self.floor,
            slot_answers=self.slot_answers,
            authors={event.user_id for event in batch.events},
        )
        result.items, result.block = assembled.items, assembled.block
        result.dropped = assembled.dropped
        result.timings_ms["memory_total"] = (time.perf_counter() - started) * 1000
        return result

    def _failed(self, source: models.PlannedSource, reason: str) -> context.SourceOutcome:
        # the turn report and ``livememory_memory_degraded_total`` have it; an outage or a slow
        # source is told once by its condition (``memory.outage``)
        logger.debug(
            "memory source %s degraded: %s",
            source.key,
            reason,
            extra={"action": "source_degraded", "source": source.key, "reason": reason},
        )
        return context.SourceOutcome(
            source=source, degraded=models.Degraded(source=source.key, reason=reason)
        )

    async def _run(
        self,
        source: models.PlannedSource,
        spec: sources.SourceSpec,
        batch: models.Batch,
        timings: dict[str, float],
    ) -> context.SourceOutcome:
        started = time.perf_counter()
        try:
            async with asyncio.timeout(self.source_timeout_s):
                items = await self._load(source, spec, batch)
        except TimeoutError:
            self._slow(source, f"over its time budget ({self.source_timeout_s * 1000:g} ms)")
            return self._failed(source, "timeout")
        except Exception as exc:  # a broken source must never stop the turn
            outage.log_failure(logger, f"memory source {source.key} failed", exc)
            return self._failed(source, "error")
        finally:
            timings[source.key] = (time.perf_counter() - started) * 1000
        kind = source.kind
        outage.conditions.ok(f"source:{kind}", what=f"memory source {kind}")
        return context.SourceOutcome(source=source, items=tuple(items))

    @staticmethod
    def _slow(source: models.PlannedSource, why: str) -> None:
        """A source over its time budget: a condition of its kind, told when it starts and ends."""
        kind = source.kind
        outage.conditions.failed(f"source:{kind}", why, what=f"memory source {kind}")

    async def _load(
        self, source: models.PlannedSource, spec: sources.SourceSpec, batch: models.Batch
    ) -> list[models.RecallItem]:
        stream = source.stream or batch.stream
        key = cache_key(source, spec, stream, [event.user_id for event in batch.chat])
        group = f"v:{source.user_id}" if spec.scope == "viewer" else f"k:{spec.kind}"
        generation: tuple[int, str | None] | None = None
        if spec.ttl_seconds > 0:
            # one round trip: the cached value and what has invalidated its group so far
            cached, generation = await self._cache_read(key, group)
            if cached is not None:
                self._count(spec.kind, "hit")
                return cached

        async def load() -> list[models.RecallItem]:
            items = await spec.fetch(source, batch)
            # an invalidation while fetching (forget, correct) may have removed what was read
            if generation is not None and await self._generation(group) == generation:
                local = self._local()
                if local is not None:  # one process: the items themselves, no JSON
                    local.set_value(key, tuple(items), spec.ttl_seconds)
                else:
                    await self._cache_set(key, _encode(items), spec.ttl_seconds)
            return items

        items, shared = await self._flight.run(key, load)
        self._count(spec.kind, "shared" if shared else "miss")
        return items

    def _count(self, kind: str, outcome: str) -> None:
        if self.metrics is not None:
            self.metrics.cache_lookup(kind, outcome)

    def _local(self) -> cache_module.InProcessCache | None:
        """The cache when it serves this process only: it keeps the items as they are."""
        if self._shared or not isinstance(self.cache, cache_module.InProcessCache):
            return None
        return self.cache

    async def _cache_read(
        self, key: str, group: str
    ) -> tuple[list[models.RecallItem] | None, tuple[int, str | None]]:
        """The cached items of ``key`` and ``group``'s generation (``_generation``), read together
        (the generation before the fetch: an invalidation after it stops the refill)."""
        seen = self._generations.get(group, 0)
        local = self._local()
        if local is not None:
            value = local.get_value(key)
            return (list(value) if isinstance(value, tuple) else None), (seen, None)
        keys = [key, f"{CACHE_VERSION}:gen:{group}"] if self._shared else [key]
        try:
            values = await self.cache.get_many(keys)
        except Exception as exc:  # a cache outage is a miss, not a failed source
            outage.log_failure(logger, "memory cache read failed", exc)
            return None, (seen, None)
        cached = _decode(values[0]) if values[0] is not None else None
        return cached, (seen, values[1] if self._shared else None)

    async def _cache_get(self, key: str) -> str | None:
        try:
            return await self.cache.get(key)
        except Exception as exc:  # a cache outage is a miss, not a failed source
            outage.log_failure(logger, "memory cache read failed", exc)
            return None

    async def _cache_set(self, key: str, value: str, ttl: float) -> None:
        try:
            await self.cache.set(key, value, ttl)
        except Exception as exc:
            outage.log_failure(logger, "memory cache write failed", exc)

    async def _generation(self, group: str) -> tuple[int, str | None]:
        """What has invalidated ``group`` so far: the in-process count and, with a shared cache,
        the marker the last invalidation (of any process) left in it."""
        shared = await self._cache_get(f"{CACHE_VERSION}:gen:{group}") if self._shared else None
        return self._generations.get(group, 0), shared

    async def _invalidated(self, group: str, *prefixes: str) -> None:
        """Fetches of ``group`` running now must not fill the cache, nor be joined by new requests."""
        self._generations[group] = self._generations.get(group, 0) + 1
        for prefix in prefixes:
            self._flight.forget(prefix)
        if self._shared:
            marker = uuid.uuid4().hex
            await self._cache_set(f"{CACHE_VERSION}:gen:{group}", marker, GENERATION_TTL_SECONDS)

    async def invalidate_viewer(self, user_id: str, *, everywhere: bool = False) -> int:
        """Drop every cached source of one viewer (and the episodic caches when ``everywhere``)."""
        prefix = f"{CACHE_VERSION}:v:{user_id}:"
        await self._invalidated(f"v:{user_id}", prefix)
        dropped = await self.cache.delete_prefix(prefix)
        if everywhere:
            dropped += await self.invalidate_kind("episodic")
            dropped += await self.invalidate_kind(earlier.KIND)
        return dropped

    async def invalidate_kind(self, kind: str) -> int:
        """Drop the cached stream-wide or global results of one kind (``episodic``, ``lore``, ``state``)."""
        prefixes = (f"{CACHE_VERSION}:s:{kind}:", f"{CACHE_VERSION}:g:{kind}:")
        await self._invalidated(f"k:{kind}", *prefixes)
        dropped = await self.cache.delete_prefix(prefixes[0])
        return dropped + await self.cache.delete_prefix(prefixes[1])

    async def invalidate_state(self) -> int:
        """Drop cached channel state (call after a tool changed it)."""
        return await self.invalidate_kind("state")


def build_retriever(
    settings: settings_module.Settings,
    *,
    spaces: ports.MemorySpaces,
    profiles: sources.ProfileReader,
    cache: ports.Cache,
    state: sources.SourceFetcher | None = None,
    metrics: metrics_module.MemoryMetrics | None = None,
    streams: earlier.Streams | None = None,
) -> Retriever:
    """The retriever with the default sources (profile, recall, episodic, lore; state when given;
    the episodes of the channel's earlier streams when its stream calendar is given)."""
    registry = sources.default_registry(settings, spaces=spaces, profiles=profiles, state=state)
    if streams is not None:
        fetch = earlier.EarlierEpisodes(
            spaces,
            streams,
            limit=settings.memory.recall_limit,
            max_streams=settings.memory.earlier_streams,
        )
        # the latest streams before the batch's: the result depends on the stream (and its TTL
        # is the episodes'; forgetting a viewer drops it with them)
        registry.register(
            earlier.KIND, fetch, ttl_seconds=settings.memory.episodic_ttl_seconds, scope="stream"
        )
    floor = relevance.floor_for(spaces.embedder_name) if settings.memory.relevance_floor else None
    return Retriever(settings, registry=registry, cache=cache, metrics=metrics, floor=floor)
