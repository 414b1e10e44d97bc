"""The composition root: one lifespan opens every store and client and yields ``Services``.

Each ``*_URL`` setting switches its part from the embedded default to the real server: Postgres
(embedded in the data folder), Redis (in-process cache and working history), Qdrant (local mode in
the data folder). Whoever opens a resource closes it: the lifespan's ``AsyncExitStack`` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import prometheus_client

from memory import errors, migrate, outage, pipeline, ports
from memory import metrics as metrics_module
from memory import reply as reply_module
from memory.adapters import postgres, qdrant
from memory.consolidate import consolidation, profile, queue_status, worker
from memory.history import redaction, reducers, transcript, working
from memory.ops import chat_operations, erasure, operations, retention
from memory.recall import cache, directory, retrieval, sources
from memory.recall import planner as planner_module
from memory.recall import prefetch as prefetch_module
from memory.spaces import embedders, lore
from memory.state import tools

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

    from config.settings import Settings
    from memory.consolidate import jobs

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class Services:
    """Everything a bot, worker or admin process needs, opened and ready."""

    settings: Settings
    db: postgres.Database
    transcript: transcript.Transcript
    history: ports.WorkingHistory
    cache: ports.Cache
    #: None with ``--no-llm``
    model: ports.ChatModel | None
    embedder: ports.Embedder
    spaces: ports.MemorySpaces
    profiles: profile.ProfileStore
    retriever: retrieval.Retriever
    operations: operations.Operations
    metrics: metrics_module.MemoryMetrics
    pipeline: pipeline.TurnPipeline
    #: job kind → handler, for the consolidation workers
    job_handlers: Mapping[str, Callable[[jobs.Job], Awaitable[None]]]
    #: runs the due consolidation jobs to the end (``--sync-consolidation``, end of a replay)
    worker: worker.Worker
    #: chat commands (``!forget …``); None where they are not wired
    commands: ports.CommandHandler | None
    extras: Mapping[str, Any]
    #: viewers known to the channel (the planner recognises them when named); the session
    #: registers each stored event's author
    viewers: directory.ViewerDirectory | None = None
    #: opens the spaces of a stored message's viewers while its batch is open (the session)
    prefetch: prefetch_module.Prefetch | None = None
    #: what outages cost: history fallbacks, the ingest spool (docs/reliability.md)
    reliability: metrics_module.ReliabilityMetrics | None = None
    #: when the bot speaks (the Twitch bot tells it its login at start-up)
    reply: reply_module.ReplyPolicy | None = None
    #: secrets and personal data out of chat text at ingestion; None: redaction off
    redactor: redaction.Redactor | None = None
    #: picks the sources of each batch (told the bot's login with ``reply``)
    planner: planner_module.Planner | None = None
    #: the consolidation handler's (told the bot's login with ``reply``: "@login" addresses it)
    consolidator: consolidation.Consolidator | None = None

    def learn_bot_login(self, login: str) -> None:
        """The bot account's login, from its token at start-up: ``@login`` addresses the bot
        for when it speaks (``reply``), for what a batch asks of it (``planner``) and for what a
        message says of its author (``consolidator``)."""
        if self.reply is not None:
            self.reply.set_bot_login(login)
        if self.planner is not None:
            self.planner.add_bot_login(login)
        if self.consolidator is not None:
            self.consolidator.add_bot_name(login)


async def _open_cache_and_history(
    settings: Settings, stack: contextlib.AsyncExitStack
) -> tuple[ports.Cache, ports.WorkingHistory]:
    if settings.redis_url is None:
        return cache.InProcessCache(), working.InProcessHistory(settings.memory.history_cap)
    # imported when used: the redis client costs 0.1-0.3 s of start-up (``python -X importtime``)
    from memory.adapters import redis as redis_adapter

    client = await redis_adapter.connect(
        settings.redis_url.get_secret_value(), attempts=settings.redis.connect_attempts
    )
    stack.push_async_callback(client.aclose)
    prefix = settings.redis.key_prefix
    return (
        redis_adapter.RedisCache(client, prefix=prefix + "cache:"),
        redis_adapter.RedisHistory(
            client,
            cap=settings.memory.history_cap,
            prefix=prefix,
            ttl_seconds=settings.redis.history_ttl_seconds,
        ),
    )


async def _open_spaces(settings: Settings, embedder: ports.Embedder) -> qdrant.QdrantSpaces:
    """The memory spaces, their embedded shards loaded (``preload``)."""
    spaces = await qdrant.open_spaces(settings, embedder)
    try:
        await spaces.preload()
    except BaseException:
        await spaces.close()
        raise
    return spaces


async def _close_when_open(opening: asyncio.Task[qdrant.QdrantSpaces]) -> None:
    """Close the spaces ``opening`` opened; an opening that failed is raised where it is awaited."""
    try:
        spaces = await opening
    except BaseException:
        return
    await spaces.close()


def _chat_model(settings: Settings) -> ports.ChatModel:
    section = settings.model
    temperature = (
        section.temperature if section.temperature is not None else settings.ollama.temperature
    )
    if section.provider == "openai":
        from memory.adapters import openai_compat  # not imported by Ollama runs

        return openai_compat.OpenAIChat(
            section.base_url,
            section.name or settings.ollama.chat_model,
            api_key=section.api_key.get_secret_value(),
            timeout=settings.ollama.timeout_seconds,
            temperature=temperature,
            context_tokens=section.context_tokens,
        )
    from memory.adapters import ollama as ollama_adapter  # not imported by --no-llm runs

    return ollama_adapter.OllamaChat(
        settings.ollama_host,
        settings.ollama.chat_model,
        timeout=settings.ollama.timeout_seconds,
        temperature=temperature,
        context_tokens=section.context_tokens,
    )


def _reducer(settings: Settings, db: postgres.Database, model: ports.ChatModel | None) -> Any:
    if settings.history.reducer == "summarizing" and model is None:
        logger.warning("the summarizing reducer needs a model: using 'turns' without one")
        settings = settings.model_copy(
            update={"history": settings.history.model_copy(update={"reducer": "turns"})}
        )
    return reducers.build_reducer(settings, db=db, model=model)


async def _load_lore_once(settings: Settings, memory_spaces: ports.MemorySpaces) -> None:
    """First start: load the streamer's lore (``config/lore/``) when the lore space is empty."""
    if settings.lore_dir.is_dir() and await memory_spaces.count("lore") == 0:
        loaded = await lore.load(memory_spaces, settings.lore_dir)
        logger.info("lore space was empty: loaded %d entries from %s", loaded, settings.lore_dir)


def _commands(
    settings: Settings,
    ops: operations.Operations,
    quiet: reply_module.ReplyState,
    redactor: redaction.Redactor | None,
) -> ports.CommandHandler | None:
    return chat_operations.build(settings, ops, quiet, redactor)


@contextlib.asynccontextmanager
async def lifespan(
    settings: Settings,
    *,
    role: str = "bot",
    no_llm: bool = False,
    background_worker: bool | None = None,
    wrap_embedder: Callable[[ports.Embedder], ports.Embedder] | None = None,
) -> AsyncIterator[Services]:
    """Open every part for ``role`` (``bot``, ``worker``, ``admin``) and close them on exit.

    ``background_worker`` (default: ``settings.worker.in_process`` for the bot) runs a consolidation
    worker as a task of this process. ``wrap_embedder``: what the embedder the settings choose is
    used through (the evaluation's embedding cache, ``memory.eval.embed_cache``); it owns nothing.
    """
    async with contextlib.AsyncExitStack() as stack:
        metrics = metrics_module.MemoryMetrics(prometheus_client.CollectorRegistry())
        reliability = metrics_module.ReliabilityMetrics(metrics.registry)
        stack.enter_context(outage.counted(reliability))
        embedder = await embedders.build_embedder(settings)
        stack.callback(embedders.close, embedder)
        # the memory store opens (the embedded shards load in worker threads) while Postgres does
        embedder = embedder if wrap_embedder is None else wrap_embedder(embedder)
        opening = asyncio.create_task(_open_spaces(settings, embedder))
        stack.push_async_callback(_close_when_open, opening)
        db = await stack.enter_async_context(migrate.open_database(settings))
        store = transcript.Transcript(db)
        shared_cache, raw_history = await _open_cache_and_history(settings, stack)
        # turns go on when Redis is down: the transcript stands in for the working history
        history = working.Fallback(
            raw_history,
            store,
            settings.memory.history_cap,
            on_fallback=reliability.history_fallback,
        )
        wants_model = role == "bot" or settings.ollama.extract_facts
        no_llm = no_llm or not settings.ollama.enabled
        model = None if no_llm or not wants_model else _chat_model(settings)
        memory_spaces = await opening
        profiles = profile.ProfileStore(db)
        # the bot's viewer directory, also its stream calendar (the planner's and ``earlier``'s)
        viewers = await directory.load(store) if role == "bot" else directory.ViewerDirectory()
        retriever = retrieval.build_retriever(
            settings,
            spaces=memory_spaces,
            profiles=profiles,
            cache=shared_cache,
            state=sources.state_fetcher(db),
            metrics=metrics,
            streams=viewers,
        )
        ops = operations.Operations(
            db,
            memory_spaces,
            invalidator=retriever,
            profiles=profiles,
            history=history,
            preview_window=erasure.preview_window(settings),
        )
        consolidator = consolidation.Consolidator(
            db,
            memory_spaces,
            settings,
            profiles=profiles,
            barrier_source=consolidation.StateBarrier(db),
            invalidator=retriever,
            model=model if settings.ollama.extract_facts else None,
        )
        handlers = {
            consolidation.JOB_KIND: metrics.operator.instrument(
                consolidation.JOB_KIND, consolidation.make_handler(consolidator)
            )
        }
        if settings.retention.max_age_days is not None:
            handlers[retention.JOB_KIND] = metrics.operator.instrument(
                retention.JOB_KIND, retention.make_handler(ops, settings)
            )
            if role in ("bot", "worker"):
                await retention.start(db, settings)
        redactor = redaction.Redactor(settings.redaction) if settings.redaction.enabled else None
        reply_state = reply_module.ReplyState(db)
        reply_policy = reply_module.ReplyPolicy(
            settings.reply,
            bot_name=settings.bot_name,
            bot_login=settings.bot_login,
            state=reply_state,
        )
        turn_planner = planner_module.Planner(
            settings,
            lore_entities=lore.entities(settings.lore_dir),
            bot_name=settings.bot_name,
            directory=viewers,
            streams=viewers,
        )
        spaces_prefetch = prefetch_module.Prefetch(turn_planner, memory_spaces)
        stack.push_async_callback(spaces_prefetch.settle)  # before the spaces close
        seams = pipeline.Seams(
            planner=turn_planner,
            retriever=retriever,
            reducer=_reducer(settings, db, model),
            tools=tools.ToolRunner(db, settings, on_change=retriever.invalidate_state)
            if model is not None
            else None,
            reply=reply_policy,
        )
        turn_pipeline = pipeline.TurnPipeline(
            transcript=store,
            history=history,
            model=model,
            seams=seams,
            system_prompt=settings.system_prompt(),
            max_attempts=settings.worker.max_attempts,
            metrics=metrics,
            history_cap=settings.memory.history_cap,
            journal_wait_seconds=settings.ingest.write_wait_seconds,
            redact=redactor.redact_text if redactor else None,
            reply_timeout_seconds=settings.model.reply_timeout_s,
            reply_tokens=settings.model.reply_tokens,
        )
        if role == "bot":
            await _load_lore_once(settings, memory_spaces)
        if role in ("bot", "worker") and settings.metrics_port is not None:
            stack.callback(_serve_metrics(settings, metrics.registry))
            await stack.enter_async_context(_queue_gauges(db, metrics.operator))
        consolidation_worker = worker.Worker(db, settings, handlers)
        services = Services(
            settings=settings,
            db=db,
            transcript=store,
            history=history,
            cache=shared_cache,
            model=model,
            embedder=memory_spaces.embedder,
            spaces=memory_spaces,
            profiles=profiles,
            retriever=retriever,
            operations=ops,
            metrics=metrics,
            pipeline=turn_pipeline,
            job_handlers=handlers,
            worker=consolidation_worker,
            commands=_commands(settings, ops, reply_state, redactor) if role == "bot" else None,
            extras={},
            viewers=viewers,
            prefetch=spaces_prefetch,
            reliability=reliability,
            reply=reply_policy,
            planner=turn_planner,
            consolidator=consolidator,
            redactor=redactor,
        )
        in_process = settings.worker.in_process if background_worker is None else background_worker
        if role == "bot" and in_process:
            await stack.enter_async_context(_background(worker.Worker(db, settings, handlers)))
        yield services


def _serve_metrics(
    settings: Settings, registry: prometheus_client.CollectorRegistry
) -> Callable[[], None]:
    """Serve ``/metrics`` (prometheus_client's own small HTTP server); returns its stop."""
    assert settings.metrics_port is not None
    server, thread = prometheus_client.start_http_server(
        settings.metrics_port, addr=settings.metrics_host, registry=registry
    )
    logger.info("metrics on http://%s:%d/metrics", settings.metrics_host, server.server_port)

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join()

    return stop


#: seconds between two refreshes of the job-queue gauges
QUEUE_POLL_SECONDS = 15.0


@contextlib.asynccontextmanager
async def _queue_gauges(
    db: postgres.Database, metrics: metrics_module.OperatorMetrics
) -> AsyncIterator[None]:
    """Refresh the job-queue gauges (depth, oldest job) in an owned task while metrics are served."""

    async def refresh() -> None:
        while True:
            try:
                state = await queue_status.status(db)
                metrics.record_queue(state.counts, state.oldest_todo_seconds)
            except errors.StoreUnavailable as exc:  # Postgres away: the gauges keep their values
                logger.warning("job queue metrics not refreshed: %s", exc)
            await asyncio.sleep(QUEUE_POLL_SECONDS)

    task = asyncio.create_task(refresh(), name="queue-metrics")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@contextlib.asynccontextmanager
async def _background(job_worker: worker.Worker) -> AsyncIterator[None]:
    """Run a consolidation worker as an owned, named task; stop it gracefully on exit."""
    stop = asyncio.Event()
    task = asyncio.create_task(job_worker.run(stop), name="consolidation-worker")
    try:
        yield
    finally:
        stop.set()
        await task
